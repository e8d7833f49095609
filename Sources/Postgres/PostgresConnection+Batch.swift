import CLibPQ

extension PostgresConnection {
    /// Runs one statement once per parameter list using libpq's pipeline mode: every execution is sent before any
    /// result is read, so a batch costs about one network round trip instead of one per execution. This is how a
    /// worker writes a batch of deliveries (e.g. 100 inserts) quickly; returns each execution's affected-row count.
    ///
    /// All lists must bind the same types in the same order (they share one prepared statement). The first
    /// failing execution's error is thrown and the server skips the rest. Outside a transaction the whole batch is
    /// one implicit transaction (all or nothing); inside `transaction` a failure leaves the transaction failed, as
    /// any failed statement does. Rows returned by the statement (e.g. `RETURNING`) are discarded.
    @discardableResult
    public func executeBatch(_ sql: String, _ batch: [[any PostgresBindable]]) throws(PostgresError) -> [Int] {
        try Self.checkStatementText(sql)
        var lists: [PostgresParameterList] = []
        lists.reserveCapacity(batch.count)
        for bindings in batch {
            lists.append(try PostgresParameterList(bindings))
        }
        guard let first = lists.first else { return [] }
        guard lists.allSatisfy({ $0.hasSameLayout(as: first) }) else {
            throw .invalidUsage("every parameter list of a batch must bind the same types in the same order")
        }
        let handle = try openHandle()
        let key = PostgresPreparedStatementCache.Key(sql: sql, types: first.types)
        let name = try preparedStatement(sql, key: key, parameters: first, on: handle)

        guard PQenterPipelineMode(handle) == 1 else {
            throw .unexpectedResponse("could not enter pipeline mode: \(Self.errorMessage(of: handle))")
        }
        defer { _ = PQexitPipelineMode(handle) }
        var sent = 0
        for list in lists {
            let accepted = list.withCArrays { types, values, lengths, formats in
                if let name {
                    PQsendQueryPrepared(handle, name, list.count, values, lengths, formats, PostgresFormat.text.rawValue)
                } else {
                    PQsendQueryParams(handle, sql, list.count, types, values, lengths, formats, PostgresFormat.text.rawValue)
                }
            }
            guard accepted == 1 else { break }
            sent += 1
        }
        // Even after a failed send, sync and drain what was queued so the connection leaves pipeline mode clean.
        let synced = PQpipelineSync(handle) == 1
        let (counts, firstError) = collectPipelineResults(expecting: sent, on: handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            throw .connectionLost(Self.errorMessage(of: handle))
        }
        if let firstError {
            if firstError.isStalePreparedStatement { forgetPreparedStatement(key) }
            throw firstError
        }
        guard sent == lists.count, synced else {
            throw .unexpectedResponse("could not send the batch: \(Self.errorMessage(of: handle))")
        }
        return counts
    }

    /// Reads the results of `expected` pipelined executions and the sync point that ends them.
    private func collectPipelineResults(expecting expected: Int, on handle: OpaquePointer) -> ([Int], PostgresError?) {
        var counts: [Int] = []
        counts.reserveCapacity(expected)
        var firstError: PostgresError?
        for _ in 0..<expected {
            // Each execution yields its result(s) followed by NULL.
            while let result = PQgetResult(handle) {
                switch PQresultStatus(result) {
                case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
                    counts.append(Int(String(cString: PQcmdTuples(result))) ?? 0)
                case PGRES_PIPELINE_ABORTED:
                    break
                default:
                    if firstError == nil { firstError = error(of: result, on: handle) }
                }
                PQclear(result)
            }
            guard PQstatus(handle) == CONNECTION_OK else { return (counts, firstError) }
        }
        if let sync = PQgetResult(handle) {
            PQclear(sync)
        }
        return (counts, firstError)
    }
}
