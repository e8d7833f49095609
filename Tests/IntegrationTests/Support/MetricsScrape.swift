import Pipeline

/// One scrape of a worker's `/metrics`, read as Prometheus reads the text exposition format (0.0.4): each sample line
/// is a name, an optional `{label="value",…}` set (values escaped with `\\`, `\"`, `\n`) and a value, optionally
/// followed by a timestamp. Tests of the alerted series look a sample up by name and exact label set, as a rule's
/// selector with every label given would.
struct MetricsScrape {
    struct Sample: Equatable {
        let name: String
        let labels: [String: String]
        let value: Double
    }

    let text: String
    let samples: [Sample]

    init(_ text: String) throws {
        self.text = text
        samples = try text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.allSatisfy(\.isWhitespace) }.map(Self.sample)
    }

    /// GETs `http://127.0.0.1:PORT/metrics` and parses it.
    static func scrape(port: UInt16) throws -> MetricsScrape {
        let response = try HTTPProbe.get("http://127.0.0.1:\(port)/metrics")
        guard response.status == 200 else { throw TestFailure("/metrics answered \(response.status)") }
        return try MetricsScrape(response.body)
    }

    /// The value of the sample with exactly this name and label set, if the scrape has it.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    /// Every sample of `name`, by label set.
    func series(_ name: String) -> [[String: String]: Double] {
        Dictionary(samples.filter { $0.name == name }.map { ($0.labels, $0.value) }, uniquingKeysWith: { $1 })
    }

    private static func sample(_ line: Substring) throws -> Sample {
        var rest = line[...]
        let name = String(rest.prefix { $0 != "{" && $0 != " " })
        rest = rest.dropFirst(name.count)
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                let key = String(rest.prefix { $0 != "=" })
                rest = rest.dropFirst(key.count)
                guard !key.isEmpty, rest.hasPrefix("=\"") else { throw TestFailure("malformed labels in metrics line: \(line)") }
                rest = rest.dropFirst(2)
                var value = ""
                while let character = rest.popFirst(), character != "\"" {
                    guard character == "\\" else { value.append(character); continue }
                    switch rest.popFirst() {
                    case "n"?: value.append("\n")
                    case let escaped?: value.append(escaped)
                    case nil: throw TestFailure("unterminated label value in metrics line: \(line)")
                    }
                }
                labels[key] = value
                if rest.first == "," { rest = rest.dropFirst() }
                guard !rest.isEmpty else { throw TestFailure("unterminated label set in metrics line: \(line)") }
            }
            rest = rest.dropFirst()
        }
        let fields = rest.split(separator: " ")
        guard !name.isEmpty, (1...2).contains(fields.count), let value = Double(fields[0]) else {
            throw TestFailure("malformed metrics line: \(line)")
        }
        return Sample(name: name, labels: labels, value: value)
    }
}

extension StageRuntime {
    /// This worker's `/metrics`, over HTTP as Prometheus scrapes it.
    func scrape() throws -> MetricsScrape {
        guard let port = observabilityPort else { throw TestFailure("the worker serves no /metrics (not started)") }
        return try MetricsScrape.scrape(port: port)
    }
}
