import JSON

extension OPPConnector {
    /// A manual AUTH is a pre-authorisation, `paymentType` `PA` whatever the merchant's `paymentType`, captured later by
    /// `CP` [doc: OPP white-label back-office pages; other-gateways.md §2 [secondary]].
    public static func holdForCapture(_ payload: inout JSONValue, requestTypes: inout [String]) {
        payload.set("PA", forKey: "paymentType")
        requestTypes = ["PA"]
    }
}
