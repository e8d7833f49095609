/// The variables of `paypipe-apple-notifications`, the endpoint Apple's merchant-token notifications reach
/// (docs/merchant-tokens.md). It also reads the runtime's connection, log and metrics variables (every worker's).
public enum MerchantTokenSettings {
    /// The endpoint's name as the runtime knows it: its log component, `--help` and metrics port default.
    public static let notificationsName = StageName("apple-notifications")
    static let notifications = [ConfigurationReader.worker(notificationsName)]
    /// `PAYPIPE_METRICS_PORT` when unset: after the five stages' 9101…9105.
    public static let notificationsMetricsPort: UInt16 = 9106

    public static let notificationsHost = TextSetting(
        "PAYPIPE_APPLE_NOTIFICATIONS_HOST", readers: notifications, default: "0.0.0.0", format: "IP address",
        "address the notification endpoint binds (behind the TLS-terminating ingress Apple reaches: TLS 1.2 or later)")
    public static let notificationsPort = IntegerSetting<UInt16>(
        "PAYPIPE_APPLE_NOTIFICATIONS_PORT", readers: notifications, default: 9290, range: 0...65535,
        "port of `GET [/<merchantId>]/notification/merchantToken/<eventId>`; 0 picks a free port")
    public static let notificationsAllowedNetworks = TextSetting(
        "PAYPIPE_APPLE_NOTIFICATIONS_ALLOWED_NETWORKS", readers: notifications,
        default: "17.58.0.0/18,17.58.192.0/18", format: "comma-separated CIDR networks, or `any`",
        "sources that may notify (others get 403): Apple's published ranges by default; `any` when a proxy in front hides the source")
    public static let notificationsThreads = IntegerSetting<Int>(
        "PAYPIPE_APPLE_NOTIFICATIONS_THREADS", readers: notifications, default: 2, range: 1...64,
        "server threads; each request is one short INSERT")

    // MARK: Apple's Merchant Token Management API (the operations worker's pull, the merchant-initiated unlink)
    static let tokenAPIReaders: [ConfigurationReader] = [.worker(Stage.operations.name), .cli]
    public static let tokenAPIURL = TextSetting(
        "PAYPIPE_APPLE_TOKEN_API_URL", readers: tokenAPIReaders, default: "https://apple-pay-gateway.apple.com", format: "`https://` URL",
        "Apple's merchant-token API (the operations worker's event pull, `paypipe credential unlink`); the sandbox points it at the simulator")
    public static let tokenAPICAFile = ConfigurationVariable(
        "PAYPIPE_APPLE_TOKEN_API_CA_FILE", readers: tokenAPIReaders, default: "unset: the system store", format: "PEM file path",
        "CA certificates trusted for `PAYPIPE_APPLE_TOKEN_API_URL` (the simulator's private CA)")
    public static let identityDirectory = ConfigurationVariable(
        "PAYPIPE_APPLE_IDENTITY_DIRECTORY", readers: tokenAPIReaders, default: "unset: no merchant can call Apple", format: "directory path",
        "per merchant `<merchantId>/merchant-identifier`, `identity.cert.pem`, `identity.key.pem`: the client identity for Apple's merchant-token API; set, the operations worker pulls and applies Apple's events every `PAYPIPE_RECONCILE_INTERVAL` (docs/merchant-tokens.md)")

    public static let all: [ConfigurationVariable] = [
        notificationsHost.variable, notificationsPort.variable, notificationsAllowedNetworks.variable, notificationsThreads.variable,
        tokenAPIURL.variable, tokenAPICAFile, identityDirectory,
    ]
}
