extension JSONValue {
    /// Strict RFC 8259 parsing of one JSON value (surrounding whitespace allowed).
    ///
    /// Rejects: duplicate object keys (two parsers reading different values from one document is a classic
    /// smuggling vector), invalid UTF-8, lone surrogates, raw control characters in strings, leading zeros, trailing
    /// commas, numbers too large for a `Double`, nesting deeper than `maxDepth`. Integer literals that fit in Int64
    /// become `.integer`, other numbers `.double`.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        // `withUnsafeBufferPointer` does not carry a typed error through, hence the Result.
        let result = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONParseError) in try JSONParser.parse(buffer, maxDepth: maxDepth) }
        }
        return try result.get()
    }

    /// Parses UTF-8 text.
    public static func parse(_ text: String, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        var text = text
        let result = text.withUTF8 { buffer in
            Result { () throws(JSONParseError) in try JSONParser.parse(buffer, maxDepth: maxDepth) }
        }
        return try result.get()
    }
}
