import Foundation

extension UUID {
    /// The one text form of a payment id in everything PayPipe writes (hand-offs, events, message ids, the card data's
    /// AAD, the gateway's order reference, CLI output): lowercase RFC 4122, as PostgreSQL prints a `uuid`. Parsing
    /// (`UUID(uuidString:)`) accepts either case.
    public var paymentIDText: String { uuidString.lowercased() }
}
