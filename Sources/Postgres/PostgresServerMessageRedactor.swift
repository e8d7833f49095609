import Foundation

/// Masks data values inside server error texts before they reach a `PostgresError`.
///
/// The server echoes offending values in its messages: `invalid input syntax for type bigint: "4111…"`,
/// `Key (pan)=(4111…) already exists.`, `Failing row contains (…)`. Those values arrive as bound parameters and
/// may be card data, so they must not be logged. The redactor keeps double-quoted words that are known
/// identifiers (the schema, table, column, constraint and type names the server reports in separate fields) and
/// replaces every other quoted string, every `=(…)` key value and every `contains (…)` row image with `…`.
///
/// SQLSTATE class 42 (syntax error or access rule violation) is left as is: those messages quote SQL text, which
/// never contains values because every value is a `$n` parameter, and the quoted token is what a developer needs.
struct PostgresServerMessageRedactor {
    /// Identifiers reported by the server for this error (never values).
    let identifiers: Set<String>

    static let mask = "…"

    func redact(_ text: String, sqlState: String) -> String {
        guard !sqlState.hasPrefix("42") else { return text }
        var output = ""
        var remainder = Substring(text)
        while let next = remainder.firstIndex(where: { $0 == "\"" || $0 == "(" }) {
            let character = remainder[next]
            output += remainder[..<next]
            if character == "\"" {
                remainder = redactQuoted(remainder[next...], into: &output)
            } else if isValueGroup(after: output) {
                let group = remainder[next...]
                let closing = closingParenthesis(of: group, isRowImage: output.hasSuffix("contains "))
                output += "(" + Self.mask + ")"
                remainder = closing.map { group[group.index(after: $0)...] } ?? group[group.endIndex...]
            } else {
                output.append("(")
                remainder = remainder[remainder.index(after: next)...]
            }
        }
        output += remainder
        return output
    }

    /// `quoted` starts at an opening quote; appends the quoted word or a mask and returns what follows it.
    private func redactQuoted(_ quoted: Substring, into output: inout String) -> Substring {
        var index = quoted.index(after: quoted.startIndex)
        var content = ""
        while index < quoted.endIndex {
            let character = quoted[index]
            index = quoted.index(after: index)
            if character == "\"" {
                // A doubled quote is an escaped quote inside an identifier.
                if index < quoted.endIndex, quoted[index] == "\"" {
                    content.append("\"")
                    index = quoted.index(after: index)
                    continue
                }
                output += identifiers.contains(content) ? "\"\(content)\"" : "\"\(Self.mask)\""
                return quoted[index...]
            }
            content.append(character)
        }
        // Unterminated quote: everything after it is suspect.
        output += "\"" + Self.mask
        return quoted[quoted.endIndex...]
    }

    /// A parenthesised group holds values when it follows `=` (`Key (a)=(1)`) or `contains ` (`Failing row contains (…)`).
    private func isValueGroup(after written: String) -> Bool {
        written.hasSuffix("=") || written.hasSuffix("contains ")
    }

    /// Phrases the server writes right after a key's value group (unique, foreign-key and exclusion violations).
    private static let keyValueTerminators = [
        ") already exists", ") is not present", ") is still referenced", ") conflicts with existing key", ").",
    ]

    /// Returns the index of the parenthesis closing the value group that starts at `group.startIndex`.
    ///
    /// Values are not escaped and may contain parentheses, so instead of counting them this looks for the text
    /// the server writes after the group: the phrases above for keys, the final `).` for a row image. Without
    /// such a marker everything up to the end is treated as value.
    private func closingParenthesis(of group: Substring, isRowImage: Bool) -> Substring.Index? {
        if isRowImage {
            return group.range(of: ").", options: .backwards)?.lowerBound
        }
        return Self.keyValueTerminators.compactMap { group.range(of: $0)?.lowerBound }.min()
    }
}
