/// The payment-processing identities a deployment can decrypt for, looked up by a token's `publicKeyHash`.
///
/// Holding several identities per merchant (and many merchants) at once is what makes certificate rotation
/// seamless: tokens made for the old key keep working while new ones use the new key.
public struct MerchantKeyring: Sendable {
    private let byPublicKeyHash: [[UInt8]: MerchantIdentity]

    /// Later identities with the same public key replace earlier ones.
    public init(identities: [MerchantIdentity]) {
        var map: [[UInt8]: MerchantIdentity] = [:]
        for identity in identities { map[identity.publicKeyHash] = identity }
        self.byPublicKeyHash = map
    }

    public func identity(forPublicKeyHash hash: [UInt8]) -> MerchantIdentity? {
        byPublicKeyHash[hash]
    }

    public var identities: [MerchantIdentity] { Array(byPublicKeyHash.values) }
    public var isEmpty: Bool { byPublicKeyHash.isEmpty }
}
