/// The topic exchange notify publishes payment results to (declared with the rest of ``PipelineTopology``) and its
/// routing keys: what the notify stage needs of the topology, without the stages' layout.
public enum ResultsExchange {
    /// Topic exchange of payment results, routing key = event type (`payment.authorized`, …).
    public static let name = "paypipe.results"

    /// The second routing key of a merchant's event on the exchange (sent as the `CC` header, so bindings by event type
    /// keep receiving it once): `<type>.<merchantId>`, e.g. `payment.authorized.merchant-a`. A reader binds
    /// `payment.*.<merchantId>`; topic permissions (scripts/broker-permissions) let it bind nothing else.
    public static func merchantKey(type: String, merchantId: String) -> String {
        "\(type).\(merchantId)"
    }
}
