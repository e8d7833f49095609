/// Why `JSONValue.parse` rejected a document. Offsets are byte offsets into the input; descriptions never quote
/// the input (it may hold secrets or card data).
public enum JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    case unexpectedEnd
    case unexpectedByte(offset: Int)
    case invalidNumber(offset: Int)
    /// Raw control character, invalid escape, lone surrogate or invalid UTF-8.
    case invalidString(offset: Int)
    /// The same key twice in one object: rejected because parsers disagree on which one wins, which signed
    /// documents must not leave open.
    case duplicateKey(offset: Int)
    case nestingTooDeep(offset: Int)
    case trailingData(offset: Int)

    public var description: String {
        switch self {
        case .unexpectedEnd: "JSON ends unexpectedly"
        case .unexpectedByte(let offset): "unexpected byte in JSON at offset \(offset)"
        case .invalidNumber(let offset): "invalid JSON number at offset \(offset)"
        case .invalidString(let offset): "invalid JSON string at offset \(offset)"
        case .duplicateKey(let offset): "duplicate JSON object key at offset \(offset)"
        case .nestingTooDeep(let offset): "JSON nested too deeply at offset \(offset)"
        case .trailingData(let offset): "unexpected data after the JSON value at offset \(offset)"
        }
    }
}
