import JWT

/// Maps an Apple Pay contact (as the job carried it, flattened by `PaymentJob`) to Trust Payments' billing or
/// customer fields.
///
/// Contacts are optional enrichment (address verification, fraud screening), never a reason to fail a payment: a
/// value that is empty, too long or malformed is left out rather than truncated or rejected. Both the Apple Pay JS
/// names (`addressLines`, `locality`, `administrativeArea`, `countryCode`) and the `PKContact` names flattened from
/// `postalAddress` (`street`, `city`, `state`, `isoCountryCode`) are understood.
enum TrustPaymentsContactFields {
    /// Longest value sent for free-text fields (Trust Payments documents 127 for names and address parts).
    static let maximumLength = 127
    static let maximumPostcodeLength = 25

    /// The fields for `contact` with `prefix` (`billing` or `customer`), in a fixed order so serialisation is
    /// deterministic.
    static func fields(prefix: String, contact: [String: String]?) -> [(key: String, value: JSONValue)] {
        guard let contact else { return [] }
        /// The first non-empty value among `keys`, normalised.
        func first(_ keys: String...) -> String? {
            keys.lazy.compactMap { contact[$0].map(normalized) }.first { !$0.isEmpty }
        }
        let lines = (contact["addressLines"] ?? contact["street"] ?? "")
            .split(whereSeparator: \.isNewline).map { normalized(String($0)) }.filter { !$0.isEmpty }
        let country = first("countryCode", "isoCountryCode").map { $0.uppercased() }.flatMap { code in
            code.utf8.count == 2 && code.utf8.allSatisfy { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") } ? code : nil
        }
        let candidates: [(name: String, value: String?, limit: Int)] = [
            ("firstname", first("givenName"), maximumLength),
            ("lastname", first("familyName"), maximumLength),
            ("premise", lines.first, maximumLength),
            ("street", lines.count > 1 ? lines.dropFirst().joined(separator: ", ") : nil, maximumLength),
            ("town", first("locality", "city"), maximumLength),
            // Trust Payments requires the country whenever a county is sent.
            ("county", country == nil ? nil : first("administrativeArea", "state"), maximumLength),
            ("postcode", first("postalCode"), maximumPostcodeLength),
            ("countryiso2a", country, 2),
            ("email", first("emailAddress"), maximumLength),
            ("telephone", first("phoneNumber"), maximumLength),
        ]
        return candidates.compactMap { candidate in
            guard let text = candidate.value, text.count <= candidate.limit else { return nil }
            return (key: prefix + candidate.name, value: .string(text))
        }
    }

    /// Trims and collapses runs of whitespace (contacts come from user input).
    private static func normalized(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }
}
