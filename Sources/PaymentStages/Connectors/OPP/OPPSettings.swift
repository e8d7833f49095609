/// A merchant's OPP settings (`gateway.opp` in the merchant document, docs/merchant-config.md). `accessToken` is a
/// secret: it is sealed with the merchant's other secrets and never stored in `merchants.config`.
public struct OPPSettings: Codable, Sendable, Equatable {
    /// The entity (channel) payments are booked on: sent as `entityId` on every call.
    public var entityId: String
    /// The bearer token of `Authorization: Bearer` (document only).
    public var accessToken: String?
    /// `paymentBrand`: merchant-decrypts `APPLEPAY` (default) or the card network's brand (`VISA`, `MASTER`, …);
    /// gateway-decrypts `APPLEPAY` (default), or `APPLEPAYTKN` when the merchant's acquirer decrypts.
    public var paymentBrand: String?
    /// `PA` (pre-authorisation, captured later with `CP`) or `DB` (debit, default).
    public var paymentType: String?

    public init(entityId: String, accessToken: String? = nil, paymentBrand: String? = nil, paymentType: String? = nil) {
        self.entityId = entityId
        self.accessToken = accessToken
        self.paymentBrand = paymentBrand
        self.paymentType = paymentType
    }

    /// The brands a merchant-decrypted token may carry, the network brands as OPP names them [secondary].
    public static let decryptedBrands: Set<String> = ["APPLEPAY", "VISA", "MASTER", "AMEX", "DISCOVER", "JCB", "MAESTRO", "VISAELECTRON", "CARTEBANCAIRE"]
    public static let tokenBrands: Set<String> = ["APPLEPAY", "APPLEPAYTKN"]
    public static let paymentTypes: Set<String> = ["PA", "DB"]

    public var resolvedBrand: String { paymentBrand ?? "APPLEPAY" }
    public var resolvedPaymentType: String { paymentType ?? "DB" }

    /// The non-secret half, for `merchants.config`.
    public var withoutSecret: OPPSettings {
        var copy = self
        copy.accessToken = nil
        return copy
    }

    /// Why the settings (their non-secret half) cannot be used in `mode`, or nil: checked by `paypipe merchant apply`
    /// (which also requires `accessToken`) and again when a request is built.
    public func problem(mode: MerchantDocument.Gateway.Mode) -> String? {
        // OPP entity ids are 32 lower-case hex digits in every stored example [secondary]; the format is not
        // documented, so only a safe character set and length are enforced.
        guard (1...64).contains(entityId.utf8.count), entityId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            return "gateway.opp.entityId must be 1-64 characters [A-Za-z0-9_-]"
        }
        guard Self.paymentTypes.contains(resolvedPaymentType) else { return "gateway.opp.paymentType must be PA or DB" }
        switch mode {
        case .merchantDecrypts where !Self.decryptedBrands.contains(resolvedBrand):
            // Every stored source names APPLEPAYTKN for a token the acquirer decrypts (docs/connectors.md).
            return "gateway.opp.paymentBrand \(resolvedBrand.prefix(20)) is not a brand for a merchant-decrypted token (APPLEPAY or a network brand)"
        case .gatewayDecrypts where !Self.tokenBrands.contains(resolvedBrand):
            return "gateway.opp.paymentBrand must be APPLEPAY or APPLEPAYTKN when the processor decrypts"
        default:
            return nil
        }
    }
}
