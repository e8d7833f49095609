import Foundation
import HTTP
import Pipeline

/// Phase 2 of a round: each call on the runtime's call-out pool, through the endpoint gate, a send only within the
/// round's send window, made by the merchant's connector (``OperationConnector``).
extension OperationsStage {
    /// Through the gate as submit's calls: a circuit per endpoint URL, the merchant's slots; a send only within the
    /// round's send window (a status query charges nothing).
    public func gating(_ call: Call, for message: Message) -> GatedCall {
        switch call {
        case .send(let planned, _): GatedCall(EndpointGate.Call(endpoint: planned.endpoint.url, owner: message.merchantId), windowed: true)
        case .query(let planned, _): GatedCall(EndpointGate.Call(endpoint: planned.endpoint.url, owner: message.merchantId))
        }
    }

    public func perform(_ call: Call, for message: Message, window: SendWindow?, client http: HTTPClient) -> (answer: Answer, report: CallReport) {
        let planned = call.planned
        let connector = connectors.connector(planned.endpoint.connector)
        switch call {
        case .send(_, let request):
            let answer = connector.operate(request, planned.context, endpoint: planned.endpoint, requestId: "O\(planned.attempt)", now: Date(),
                                           window: window, using: http)
            return (.sent(answer), Self.report(answer))
        case .query(_, let request):
            let evidence = connector.findOperation(request, planned.context, endpoint: planned.endpoint, requestId: "Q\(planned.attempt)", now: Date(),
                                                   using: http)
            return (.queried(evidence), Self.report(evidence))
        }
    }

    /// A call held back was not made: with the gateway calls' codes (``GatewayCall/heldBack(_:merchantId:slots:)``),
    /// and a send the window closed on as the HTTP send gate's refusal would be.
    public func heldBack(_ call: Call, for message: Message, because reason: HeldBack) -> Answer {
        let (code, detail) = heldBack(reason, merchantId: message.merchantId)
        switch call {
        case .send: return .sent(.notSent(code: code, reason: detail))
        case .query: return .queried(.failure(OperationQueryFailure(code: code, reason: detail)))
        }
    }

    /// The code and reason of a call the call-out phase held back.
    func heldBack(_ reason: HeldBack, merchantId: String) -> (code: String, reason: String) {
        switch reason {
        case .gate(let refusal): GatewayCall.heldBack(refusal, merchantId: merchantId, slots: gate.policy.maxConcurrent)
        case .sendWindow(let refusal): ("paypipe.send_window", "not sent: \(refusal)")
        }
    }

    /// What an operation's answer tells the endpoint's circuit (``GatewayCall/report(_:)``).
    static func report(_ answer: OperationSteps.Answer) -> CallReport {
        switch answer {
        case .confirmed, .refused: .healthy
        case .notSent(let code, _), .uncertain(let code, _): GatewayCall.report(code)
        }
    }

    static func report<Value>(_ answer: Result<Value, OperationQueryFailure>) -> CallReport {
        switch answer {
        case .success: .healthy
        case .failure(let failure): GatewayCall.report(failure.code)
        }
    }
}
