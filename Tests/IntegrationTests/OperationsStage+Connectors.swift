import HTTP
import PaymentStages
import Pipeline

extension OperationsStage {
    /// The stage with every connector sharing one Trust Payments client's HTTP settings and card-data policy, as the
    /// suites build it (the worker builds its connectors from the registry: ``OperationsStage/fromEnvironment``), its
    /// upkeep round wired as the launch wires it (``OperationsUpkeepRound``, polling every `settlementPoll` seconds).
    init(directory: MerchantDirectory, client: TrustPaymentsClient, steps: OperationSteps = OperationSteps(),
         sendWindow: Double = 5, reconcileGrace: Double = 30, settlementPoll: Double = 6 * 3600,
         gate: EndpointGatePolicy = EndpointGatePolicy(maxWait: 1)) {
        self.init(directory: directory,
                  connectors: GatewayConnectors(trustPayments: client, opp: OPPConnector(http: client.http, transport: client.transport),
                                                tapPay: TapPayConnector(http: client.http, transport: client.transport)),
                  steps: steps, sendWindow: sendWindow, reconcileGrace: reconcileGrace, gate: gate)
        upkeepRound = OperationsUpkeepRound(stage: self, settlementPoll: settlementPoll)
    }
}
