/// A merchant's TapPay settings (`gateway.tapPay` in the merchant document, docs/merchant-config.md). `partnerKey` is
/// a secret: sealed with the merchant's other secrets, never stored in `merchants.config`.
public struct TapPaySettings: Codable, Sendable, Equatable {
    /// `merchant_id`, String(50) [doc].
    public var merchantId: String
    /// `partner_key`, String(64) [doc], also the `x-api-key` header (document only).
    public var partnerKey: String?
    /// `delay_capture_in_days` [sdk]: absent or 0, captured automatically; `-1`, never automatically (manual capture
    /// with `/tpc/transaction/cap`); 1-… days.
    public var delayCaptureInDays: Int?
    /// `details`, the goods' description TapPay's fraud checks read [sdk]; default `Order <orderReference>`.
    public var details: String?

    public init(merchantId: String, partnerKey: String? = nil, delayCaptureInDays: Int? = nil, details: String? = nil) {
        self.merchantId = merchantId
        self.partnerKey = partnerKey
        self.delayCaptureInDays = delayCaptureInDays
        self.details = details
    }

    public var withoutSecret: TapPaySettings {
        var copy = self
        copy.partnerKey = nil
        return copy
    }

    /// `details`' length limit is not captured (error 515 "Out of range: details" shows there is one [doc]): 100 is
    /// PayPipe's own conservative cap [UNCONFIRMED].
    public static let maximumDetailsLength = 100

    /// Why the non-secret settings cannot be used, or nil.
    public func problem(mode: MerchantDocument.Gateway.Mode) -> String? {
        guard (1...50).contains(merchantId.utf8.count), merchantId.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            return "gateway.tapPay.merchantId must be 1-50 printable ASCII characters"
        }
        if let days = delayCaptureInDays, !(-1...365).contains(days) {
            return "gateway.tapPay.delayCaptureInDays must be -1 (manual capture), 0 or a number of days"
        }
        if let details, details.isEmpty || details.count > Self.maximumDetailsLength {
            return "gateway.tapPay.details must be 1-\(Self.maximumDetailsLength) characters"
        }
        // The app hands the Apple Pay token to TapPay's SDK and PayPipe receives only the prime.
        guard mode == .gatewayDecrypts else { return "TapPay takes primes only: gateway.mode must be gateway-decrypts" }
        return nil
    }
}
