// Modules built on the payment side see the payment model (PaymentJob, StageMessage, PaymentStatus, Stage…) and the
// runtime (StageRuntime, StageHandler, StageFailure…) through `import Pipeline`: it is where the two meet.
@_exported import PaymentDomain
@_exported import WorkerRuntime
