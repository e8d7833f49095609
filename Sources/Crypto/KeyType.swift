/// The algorithm family of an asymmetric key.
public enum KeyType: String, Sendable, Equatable, CustomStringConvertible {
    case ec
    case rsa

    public var description: String { rawValue }
}
