import Foundation
import Pipeline
import Postgres

/// Apple's merchant-token events, pulled and applied as part of the operations worker's upkeep (every
/// `PAYPIPE_RECONCILE_INTERVAL`): pull the due events (``MerchantTokenEventPuller``), then apply the pulled ones
/// (``MerchantTokenEventApplier``). In the operations worker because it already calls out with merchants' secrets and
/// holds the data key, while the notification endpoint faces the internet and holds no private key
/// (docs/merchant-tokens.md). Off (nil) unless `PAYPIPE_APPLE_IDENTITY_DIRECTORY` is set.
public struct MerchantTokenUpkeep: Sendable {
    public let puller: MerchantTokenEventPuller
    public let applier: MerchantTokenEventApplier
    /// `paypipe_merchant_token_pulls_total`, `paypipe_merchant_token_events_applied_total`.
    public let metrics = MerchantTokenMetrics()

    public init(puller: MerchantTokenEventPuller, applier: MerchantTokenEventApplier) {
        self.puller = puller
        self.applier = applier
    }

    /// nil when no identity directory is configured (no merchant could be pulled for).
    public static func fromEnvironment(_ environment: EnvironmentReader, vault: DataVault) throws(ConfigurationError) -> MerchantTokenUpkeep? {
        guard let directory = environment.raw(MerchantTokenSettings.identityDirectory.name), !directory.isEmpty else { return nil }
        let puller = MerchantTokenEventPuller(
            baseURL: try environment.read(MerchantTokenSettings.tokenAPIURL),
            identity: { AppleTokenAPIIdentity.fromDirectory(directory, merchantId: $0) },
            merchants: { AppleTokenAPIIdentity.merchants(inDirectory: directory) },
            caCertificatePath: environment.raw(MerchantTokenSettings.tokenAPICAFile.name))
        return MerchantTokenUpkeep(puller: puller, applier: MerchantTokenEventApplier(credentials: CredentialStore(vault: vault)))
    }

    /// One round; logs what it did (never a card number: event ids, credential ids and outcomes only).
    public func run(database: PostgresConnection, logger: Logger) throws {
        for (eventId, outcome) in try puller.pullDue(on: database) {
            metrics.pulled(outcome)
            switch outcome {
            case .pulled(let event, _):
                logger.info("merchant_token_event_pulled", [("eventId", .string(eventId)), ("eventType", .string(event.type.rawValue))])
            case .retry(_, let reason):
                logger.warning("merchant_token_event_retry", [("eventId", .string(eventId)), ("reason", .string(reason))])
            case .failed(let reason):
                logger.error("merchant_token_event_failed", [("eventId", .string(eventId)), ("reason", .string(reason))])
            }
        }
        for (eventId, changes) in try applier.applyPulled(on: database) {
            for change in changes {
                metrics.applied(change)
                logger.info("merchant_token_event_applied", [("eventId", .string(eventId)), ("change", .string(change.note))])
            }
        }
    }
}
