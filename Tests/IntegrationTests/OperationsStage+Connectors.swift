import HTTP
import PaymentStages
import Pipeline

extension OperationsStage {
    /// The stage with every connector sharing one Trust Payments client's HTTP settings and card-data policy, as the
    /// suites build it (the worker builds its connectors from the registry: ``OperationsWorker/fromEnvironment``).
    init(directory: MerchantDirectory, client: TrustPaymentsClient, steps: OperationSteps = OperationSteps(),
         sendWindow: Double = 5, reconcileGrace: Double = 30, gate: EndpointGatePolicy = EndpointGatePolicy(maxWait: 1)) {
        self.init(directory: directory,
                  connectors: GatewayConnectors(trustPayments: client, opp: OPPConnector(http: client.http, transport: client.transport),
                                                tapPay: TapPayConnector(http: client.http, transport: client.transport)),
                  steps: steps, sendWindow: sendWindow, reconcileGrace: reconcileGrace, gate: gate)
    }
}

extension OperationsWorker {
    /// The stage with its upkeep round wired as the launch wires it (``OperationsUpkeepRound``, polling every
    /// `settlementPoll` seconds).
    init(_ stage: OperationsStage, settlementPoll: Double) {
        self.init(stage, upkeepRound: OperationsUpkeepRound(stage: stage, settlementPoll: settlementPoll))
    }
}
