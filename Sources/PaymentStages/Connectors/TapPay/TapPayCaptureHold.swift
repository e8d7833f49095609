import JSON

extension TapPayConnector {
    /// A manual AUTH carries `delay_capture_in_days` `-1`, "no automatic capture" [sdk: TapPay's Node SDK typings],
    /// captured later by `/tpc/transaction/cap` [doc].
    public static func holdForCapture(_ payload: inout JSONValue, requestTypes: inout [String]) {
        payload.set(-1, forKey: "delay_capture_in_days")
    }
}
