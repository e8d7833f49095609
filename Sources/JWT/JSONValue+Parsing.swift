extension JSONValue {
    /// Strict RFC 8259 parsing of one JSON value (surrounding whitespace allowed).
    ///
    /// Rejects: duplicate object keys, invalid UTF-8, lone surrogates, raw control characters in strings, leading
    /// zeros, trailing commas, nesting deeper than `maxDepth`. Integer literals that fit in Int64 become `.integer`,
    /// other numbers `.double`.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    /// Parses UTF-8 text.
    public static func parse(_ text: String, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8), maxDepth: maxDepth)
    }
}
