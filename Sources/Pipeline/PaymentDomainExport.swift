// Modules built on the runtime see the payment model (PaymentJob, StageMessage, PaymentStatus, Stage, StageFailure…)
// through `import Pipeline`, as they did when it lived here, until the runtime stops knowing payments (issue 17 item 4).
@_exported import PaymentDomain
