import Foundation

/// Apple's merchant-token notification: `GET {tokenNotificationURL}/notification/merchantToken/{eventId}`, no body, no
/// authentication ("Send Merchant Token Event", developer.apple.com/documentation/merchanttokennotificationservices).
/// The event id is the only data; the details are pulled later over mutual TLS (`MerchantTokenEventPuller`).
///
/// PayPipe's `tokenNotificationURL` for a merchant is `https://<host>/<PayPipe merchantId>`, so the path names the
/// merchant whose identity certificate fetches the event: `/<merchantId>/notification/merchantToken/<eventId>`. The
/// bare `/notification/merchantToken/<eventId>` is also accepted (queued with no merchant, docs/merchant-tokens.md).
public struct MerchantTokenNotification: Sendable, Equatable {
    public var merchantId: String?
    public var eventId: String

    /// Apple's appended path component.
    public static let pathSuffix = "notification/merchantToken"
    /// Longest accepted event id or merchant id: Apple's identifiers are at most 64 characters; the room above that
    /// only keeps a malformed request from filling the table.
    public static let maxIdentifierLength = 128

    public init(merchantId: String?, eventId: String) {
        self.merchantId = merchantId
        self.eventId = eventId
    }

    /// The notification a request path carries, or nil when the path is not one (404).
    public static func parse(path: String) -> MerchantTokenNotification? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        // "", [merchantId,] "notification", "merchantToken", eventId
        guard segments.first == "", segments.count == 4 || segments.count == 5 else { return nil }
        let tail = segments.suffix(3)
        guard tail.first == "notification", tail.dropFirst().first == "merchantToken", let eventId = tail.last,
              isIdentifier(eventId) else { return nil }
        if segments.count == 5 {
            guard isIdentifier(segments[1]) else { return nil }
            return MerchantTokenNotification(merchantId: segments[1], eventId: eventId)
        }
        return MerchantTokenNotification(merchantId: nil, eventId: eventId)
    }

    /// Letters, digits and `.-_:`: what Apple's event ids (UUID-like) and merchant ids (`merchant.com.example`,
    /// PayPipe's own ids) use; anything else is no notification.
    static func isIdentifier(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maxIdentifierLength
            && text.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || ".-_:".unicodeScalars.contains($0)) }
    }
}

/// An IPv4 or IPv6 network in CIDR notation (`17.58.0.0/18`), for the notification endpoint's source allow list.
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    public let address: IPAddress
    public let prefixLength: Int

    /// nil for anything but `address/prefix` with a numeric address and a prefix within its family's width.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let address = IPAddress(String(parts[0])), let prefix = Int(parts[1]), prefix >= 0,
              prefix <= address.bytes.count * 8 else { return nil }
        self.address = address
        self.prefixLength = prefix
    }

    public func contains(_ candidate: IPAddress) -> Bool {
        let network = address.bytes
        let bytes = candidate.bytes
        guard network.count == bytes.count else { return false }
        for bit in 0..<prefixLength {
            let mask = UInt8(0x80) >> UInt8(bit % 8)
            if network[bit / 8] & mask != bytes[bit / 8] & mask { return false }
        }
        return true
    }

    public var description: String { "\(address)/\(prefixLength)" }
}

extension IPAddress {
    var bytes: [UInt8] {
        switch self {
        case .v4(let bytes), .v6(let bytes): bytes
        }
    }
}

/// Who may send notifications: Apple's published source networks by default, or any source.
public enum NotificationSourcePolicy: Sendable, Equatable {
    case any
    case networks([IPNetwork])

    /// Apple's inbound ranges for merchant-token notifications, "Receiving and handling merchant token notifications"
    /// (developer.apple.com/documentation/applepaymerchanttokenmanagementapi/receiving-and-handling-merchant-token-notifications) [doc].
    public static let appleNetworks = ["17.58.0.0/18", "17.58.192.0/18"]

    /// `any`, or comma-separated CIDR networks; nil when an entry is not a network.
    public static func parse(_ text: String) -> NotificationSourcePolicy? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed == "any" { return .any }
        let entries = trimmed.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard !entries.isEmpty else { return nil }
        var networks: [IPNetwork] = []
        for entry in entries {
            guard let network = IPNetwork(entry) else { return nil }
            networks.append(network)
        }
        return .networks(networks)
    }

    /// Whether a peer (`ip:port` or `[ip]:port`, as `HTTPServerRequest.remoteAddress`) may notify. An unknown or
    /// unparsable peer is refused unless any source is allowed.
    public func allows(remoteAddress: String?) -> Bool {
        guard case .networks(let networks) = self else { return true }
        guard let address = remoteAddress.flatMap(Self.host).flatMap(IPAddress.init) else { return false }
        return networks.contains { $0.contains(address) }
    }

    static func host(of remoteAddress: String) -> String? {
        if remoteAddress.hasPrefix("["), let close = remoteAddress.firstIndex(of: "]") {
            return String(remoteAddress[remoteAddress.index(after: remoteAddress.startIndex)..<close])
        }
        guard let colon = remoteAddress.lastIndex(of: ":") else { return remoteAddress }
        return String(remoteAddress[..<colon])
    }
}

/// What the endpoint answers a request, decided before (and after) the one database write.
public enum NotificationAnswer: Sendable, Equatable {
    /// Queued (or queued before): 200, "even if your endpoint can't find the related merchant token or event identifier" [doc].
    case queued(MerchantTokenNotification)
    /// The source is outside the allowed networks: 403, nothing queued.
    case forbidden
    /// Not a notification path: 404.
    case notFound
    /// Not a GET: 405.
    case methodNotAllowed

    /// The decision before the write: `.queued` means "queue it, then answer 200, or 500 if that fails".
    public static func decide(method: String, path: String, remoteAddress: String?, sources: NotificationSourcePolicy) -> NotificationAnswer {
        guard let notification = MerchantTokenNotification.parse(path: path) else { return .notFound }
        guard method == "GET" else { return .methodNotAllowed }
        guard sources.allows(remoteAddress: remoteAddress) else { return .forbidden }
        return .queued(notification)
    }
}
