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

/// The recursive-descent parser behind `JSONValue.parse`.
///
/// Built for the Apple Pay hot path (thousands of tokens per second per core): it reads an unsafe buffer (no
/// per-byte bounds checks beyond its own), copies escape-free strings straight from the input, converts integers
/// without going through text, and checks small objects for duplicate keys by scanning instead of hashing.
/// Recursion depth is bounded by `maxDepth`.
struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private let maxDepth: Int
    private var index = 0
    private var depth = 0

    /// Objects up to this many members are checked for duplicate keys linearly; larger ones through a Set.
    private static let linearKeyCheckLimit = 16

    private init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
        let value = try parser.parseValue()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw .trailingData(offset: parser.index) }
        return value
    }

    /// Skips leading whitespace, then parses one value.
    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw .unexpectedEnd }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return .array(try parseArray())
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): return try parseLiteral("true", .bool(true))
        case UInt8(ascii: "f"): return try parseLiteral("false", .bool(false))
        case UInt8(ascii: "n"): return try parseLiteral("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw .unexpectedByte(offset: index)
        }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enterContainer()
        defer { depth -= 1 }
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        skipWhitespace()
        if try consumeIf(UInt8(ascii: "}")) { return .object(members) }
        members.reserveCapacity(8)
        var keys = Set<String>()  // filled only once an object outgrows the linear check
        while true {
            skipWhitespace()
            let keyOffset = index
            guard index < bytes.count else { throw .unexpectedEnd }
            guard bytes[index] == UInt8(ascii: "\"") else { throw .unexpectedByte(offset: index) }
            let key = try parseString()
            if members.count < Self.linearKeyCheckLimit {
                guard !members.contains(where: { $0.key == key }) else { throw .duplicateKey(offset: keyOffset) }
            } else {
                if keys.isEmpty { keys = Set(members.map(\.key)) }
                guard keys.insert(key).inserted else { throw .duplicateKey(offset: keyOffset) }
            }
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            members.append((key, try parseValue()))
            skipWhitespace()
            if try consumeIf(UInt8(ascii: "}")) { return .object(members) }
            try expect(UInt8(ascii: ","))
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> [JSONValue] {
        try enterContainer()
        defer { depth -= 1 }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if try consumeIf(UInt8(ascii: "]")) { return elements }
        elements.reserveCapacity(4)
        while true {
            elements.append(try parseValue())
            skipWhitespace()
            if try consumeIf(UInt8(ascii: "]")) { return elements }
            try expect(UInt8(ascii: ","))
        }
    }

    private mutating func enterContainer() throws(JSONParseError) {
        depth += 1
        guard depth <= maxDepth else { throw .nestingTooDeep(offset: index) }
    }

    // MARK: Strings

    /// Parses a string starting at the opening quote; leaves `index` after the closing quote. A string without
    /// escapes (nearly all of them: base64, hex, names) is taken straight from the input; otherwise runs of plain
    /// bytes are copied in bulk between escapes.
    private mutating func parseString() throws(JSONParseError) -> String {
        let start = index
        index += 1
        var decoded: [UInt8] = []
        while true {
            let runStart = index
            let isASCII = scanPlainRun()
            guard index < bytes.count else { throw .unexpectedEnd }
            let run = UnsafeBufferPointer(rebasing: bytes[runStart..<index])
            switch bytes[index] {
            case UInt8(ascii: "\""):
                let string: String?
                if decoded.isEmpty {  // no escape so far (an escape always appends): the input itself
                    string = Self.string(utf8: run, isASCII: isASCII)
                } else {
                    decoded.append(contentsOf: run)
                    string = decoded.withUnsafeBufferPointer { Self.string(utf8: $0, isASCII: false) }
                }
                index += 1
                guard let string else { throw .invalidString(offset: start) }
                return string
            case UInt8(ascii: "\\"):
                if decoded.isEmpty { decoded.reserveCapacity(run.count + 32) }
                decoded.append(contentsOf: run)
                try parseEscape(into: &decoded)
            default:
                throw .invalidString(offset: index)  // a raw control character
            }
        }
    }

    /// Advances `index` to the next quote, backslash or control character (or the end); returns whether the bytes
    /// passed over were all ASCII. The loop that dominates parsing (base64 and hex payloads), so it runs on locals
    /// and tests eight bytes per step (`wordHasSpecialByte`), finishing byte by byte from the first word that holds
    /// a stop byte.
    private mutating func scanPlainRun() -> Bool {
        var position = index
        var seenBits: UInt64 = 0
        let end = bytes.count
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while end - position >= 8 {
                let word = raw.loadUnaligned(fromByteOffset: position, as: UInt64.self)
                if Self.wordHasSpecialByte(word) { break }
                seenBits |= word
                position += 8
            }
        }
        var seenByteBits = UInt8(truncatingIfNeeded: seenBits) | UInt8(truncatingIfNeeded: seenBits >> 8)
            | UInt8(truncatingIfNeeded: seenBits >> 16) | UInt8(truncatingIfNeeded: seenBits >> 24)
            | UInt8(truncatingIfNeeded: seenBits >> 32) | UInt8(truncatingIfNeeded: seenBits >> 40)
            | UInt8(truncatingIfNeeded: seenBits >> 48) | UInt8(truncatingIfNeeded: seenBits >> 56)
        while position < end {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            seenByteBits |= byte
            position += 1
        }
        index = position
        return seenByteBits < 0x80
    }

    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// Whether any byte of `word` is a quote, a backslash or below 0x20. Exact (no false positives or negatives):
    /// `(x - 0x01…) & ~x & 0x80…` is non-zero iff some byte of x is zero, and likewise with 0x20 for bytes below
    /// 0x20; bytes ≥ 0x80 never match (the `~x` term clears their high bit).
    @inline(__always)
    private static func wordHasSpecialByte(_ word: UInt64) -> Bool {
        let quote = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
        let backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
        let zeroQuote = (quote &- ones) & ~quote
        let zeroBackslash = (backslash &- ones) & ~backslash
        let control = (word &- ones &* 0x20) & ~word
        return (zeroQuote | zeroBackslash | control) & highBits != 0
    }

    /// The string for `utf8`, or nil if it is not valid UTF-8.
    ///
    /// `String(validating:as:)` would do, but it is an unspecialised generic whose metadata lookups cost about a
    /// quarter of a token's parse. `String(decoding:as:)` is specialised but repairs invalid input with U+FFFD, so
    /// non-ASCII input is accepted only if decoding left its bytes unchanged (a repair always changes them).
    private static func string(utf8: UnsafeBufferPointer<UInt8>, isASCII: Bool) -> String? {
        let string = String(decoding: utf8, as: UTF8.self)
        guard isASCII || string.utf8.elementsEqual(utf8) else { return nil }
        return string
    }

    /// After a backslash: appends the escaped character's UTF-8 to `decoded`, combining a surrogate pair.
    private mutating func parseEscape(into decoded: inout [UInt8]) throws(JSONParseError) {
        let escapeOffset = index
        index += 1
        guard index < bytes.count else { throw .unexpectedEnd }
        let simple: UInt8
        switch bytes[index] {
        case UInt8(ascii: "\""): simple = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): simple = UInt8(ascii: "\\")
        case UInt8(ascii: "/"): simple = UInt8(ascii: "/")
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"):
            index += 1
            decoded.append(contentsOf: UTF8.encode(try parseUnicodeEscape(escapeOffset: escapeOffset))!)
            return
        default: throw .invalidString(offset: escapeOffset)
        }
        decoded.append(simple)
        index += 1
    }

    /// After `\u`: four hex digits, and for a high surrogate the `\uXXXX` low surrogate that must follow.
    private mutating func parseUnicodeEscape(escapeOffset: Int) throws(JSONParseError) -> Unicode.Scalar {
        var value = try parseHex4()
        if (0xD800..<0xDC00).contains(value) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw .invalidString(offset: escapeOffset) }
            index += 2
            let low = try parseHex4()
            guard (0xDC00..<0xE000).contains(low) else { throw .invalidString(offset: escapeOffset) }
            value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
        }
        // A lone low surrogate is not a scalar either.
        guard let scalar = Unicode.Scalar(value) else { throw .invalidString(offset: escapeOffset) }
        return scalar
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw .unexpectedEnd }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw .invalidString(offset: index)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    // MARK: Numbers and literals

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < bytes.count else { throw .unexpectedEnd }
        let digitsStart = index
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if consumeDigits() == 0 {
            throw .invalidNumber(offset: start)
        }
        let digitsEnd = index
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard consumeDigits() > 0 else { throw .invalidNumber(offset: start) }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard consumeDigits() > 0 else { throw .invalidNumber(offset: start) }
        }
        // Up to 18 digits cannot overflow Int64, so they are accumulated directly; longer ones take the text path.
        if isInteger && digitsEnd - digitsStart <= 18 {
            var magnitude: Int64 = 0
            for digit in bytes[digitsStart..<digitsEnd] {
                magnitude = magnitude &* 10 &+ Int64(digit &- UInt8(ascii: "0"))
            }
            return .integer(negative ? -magnitude : magnitude)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if isInteger, let integer = Int64(text) {
            return .integer(integer)
        }
        guard let double = Double(text), double.isFinite else { throw .invalidNumber(offset: start) }
        return .double(double)
    }

    private mutating func consumeDigits() -> Int {
        let start = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
            index += 1
        }
        return index - start
    }

    private mutating func parseLiteral(_ word: StaticString, _ value: JSONValue) throws(JSONParseError) -> JSONValue {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw .unexpectedEnd }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw .unexpectedByte(offset: index)
        }
        index += count
        return value
    }

    // MARK: Structure

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): index += 1
            default: return
            }
        }
    }

    private mutating func consumeIf(_ byte: UInt8) throws(JSONParseError) -> Bool {
        guard index < bytes.count else { throw .unexpectedEnd }
        guard bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func expect(_ byte: UInt8) throws(JSONParseError) {
        guard try consumeIf(byte) else { throw .unexpectedByte(offset: index) }
    }
}
