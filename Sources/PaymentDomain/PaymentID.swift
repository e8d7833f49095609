import Crypto
import Foundation

extension UUID {
    /// The one text form of a payment id in everything PayPipe writes (hand-offs, events, message ids, the card data's
    /// AAD, the gateway's order reference, CLI output): lowercase RFC 4122, as PostgreSQL prints a `uuid`. Parsing
    /// (``init(paymentIDText:)``, or `UUID(uuidString:)`) accepts either case.
    ///
    /// Written from the bytes: `uuidString` formats with `snprintf` (and then needs lowercasing), which every stage
    /// would pay several times per payment.
    public var paymentIDText: String { hexText(hyphenated: true) }

    /// The 32 hex digits of ``paymentIDText`` without its hyphens.
    public var paymentIDHex: String { hexText(hyphenated: false) }

    private func hexText(hyphenated: Bool) -> String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                var count = 0
                for (index, byte) in bytes.enumerated() {
                    if hyphenated, index == 4 || index == 6 || index == 8 || index == 10 {
                        out[count] = UInt8(ascii: "-")
                        count += 1
                    }
                    out[count] = Hex.digit(byte >> 4)
                    out[count + 1] = Hex.digit(byte & 0x0F)
                    count += 2
                }
                return count
            }
        }
    }

    /// `UUID(uuidString:)`, without its `sscanf` for the canonical form (`8-4-4-4-12` hex digits of either case); any
    /// other text is left to Foundation, so exactly the same texts are accepted.
    public init?(paymentIDText text: String) {
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &value) { out -> Bool in
            var offset = 0, byte = 0
            var high: UInt8?
            for character in text.utf8 {
                defer { offset += 1 }
                if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                    guard character == UInt8(ascii: "-") else { return false }
                    continue
                }
                guard offset < 36, let nibble = Hex.nibble(character) else { return false }
                if let first = high {
                    out[byte] = first << 4 | nibble
                    byte += 1
                    high = nil
                } else {
                    high = nibble
                }
            }
            return offset == 36
        }
        guard parsed else {
            guard let parsed = UUID(uuidString: text) else { return nil }
            self = parsed
            return
        }
        self.init(uuid: value)
    }
}
