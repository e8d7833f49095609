/// Recursive-descent parser behind `JSONValue.parse`. Works on bytes with an index; recursion depth is bounded.
struct JSONParser {
    private let bytes: [UInt8]
    private let maxDepth: Int
    private var index = 0
    private var depth = 0

    init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw .trailingData(offset: index) }
        return value
    }

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw .unexpectedEnd }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
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
        var keys = Set<String>()
        skipWhitespace()
        if try consumeIf(UInt8(ascii: "}")) { return .object(members) }
        while true {
            skipWhitespace()
            let keyOffset = index
            guard index < bytes.count else { throw .unexpectedEnd }
            guard bytes[index] == UInt8(ascii: "\"") else { throw .unexpectedByte(offset: index) }
            let key = try parseString()
            guard keys.insert(key).inserted else { throw .duplicateKey(offset: keyOffset) }
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            members.append((key, try parseValue()))
            skipWhitespace()
            if try consumeIf(UInt8(ascii: "}")) { return .object(members) }
            try expect(UInt8(ascii: ","))
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enterContainer()
        defer { depth -= 1 }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if try consumeIf(UInt8(ascii: "]")) { return .array(elements) }
        while true {
            elements.append(try parseValue())
            skipWhitespace()
            if try consumeIf(UInt8(ascii: "]")) { return .array(elements) }
            try expect(UInt8(ascii: ","))
        }
    }

    private mutating func enterContainer() throws(JSONParseError) {
        depth += 1
        guard depth <= maxDepth else { throw .nestingTooDeep(offset: index) }
    }

    /// Parses a string starting at the opening quote; leaves `index` after the closing quote. Runs of plain bytes
    /// are copied in bulk, and a string without escapes is validated straight from the input.
    private mutating func parseString() throws(JSONParseError) -> String {
        let start = index
        index += 1
        var decoded: [UInt8] = []
        var runStart = index
        while true {
            guard index < bytes.count else { throw .unexpectedEnd }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let string: String?
                if decoded.isEmpty {
                    string = String(validating: bytes[runStart..<index], as: UTF8.self)
                } else {
                    decoded.append(contentsOf: bytes[runStart..<index])
                    string = String(validating: decoded, as: UTF8.self)
                }
                index += 1
                guard let string else { throw .invalidString(offset: start) }
                return string
            } else if byte == UInt8(ascii: "\\") {
                decoded.append(contentsOf: bytes[runStart..<index])
                try parseEscape(into: &decoded)
                runStart = index
            } else if byte < 0x20 {
                throw .invalidString(offset: index)
            } else {
                index += 1
            }
        }
    }

    private mutating func parseEscape(into decoded: inout [UInt8]) throws(JSONParseError) {
        let escapeOffset = index
        index += 1
        guard index < bytes.count else { throw .unexpectedEnd }
        let simple: UInt8?
        switch bytes[index] {
        case UInt8(ascii: "\""): simple = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): simple = UInt8(ascii: "\\")
        case UInt8(ascii: "/"): simple = UInt8(ascii: "/")
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"): simple = nil
        default: throw .invalidString(offset: escapeOffset)
        }
        if let simple {
            decoded.append(simple)
            index += 1
            return
        }
        index += 1
        var scalar = try parseHex4()
        if (0xD800..<0xDC00).contains(scalar) {
            // A high surrogate must be followed by an escaped low surrogate.
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw .invalidString(offset: escapeOffset) }
            index += 2
            let low = try parseHex4()
            guard (0xDC00..<0xE000).contains(low) else { throw .invalidString(offset: escapeOffset) }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        }
        guard let unicodeScalar = Unicode.Scalar(scalar) else { throw .invalidString(offset: escapeOffset) }
        decoded.append(contentsOf: UTF8.encode(unicodeScalar)!)
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

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        _ = try consumeIf(UInt8(ascii: "-"))
        guard index < bytes.count else { throw .unexpectedEnd }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if consumeDigits() == 0 {
            throw .invalidNumber(offset: start)
        }
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
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
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
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard index + expected.count <= bytes.count else { throw .unexpectedEnd }
        guard bytes[index..<index + expected.count].elementsEqual(expected) else {
            throw .unexpectedByte(offset: index)
        }
        index += expected.count
        return value
    }

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
