import Testing

/// Every integration suite is nested here: they share one RabbitMQ and one PostgreSQL, reset them, and
/// some restart them, so they must never run concurrently. `.serialized` applies to nested suites too.
@Suite(.serialized) enum Integration {}
