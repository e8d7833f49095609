/// A one-dimensional array bound as a single parameter, so that one statement can carry a whole batch of rows
/// (`INSERT … SELECT … FROM unnest($1::uuid[], $2::text[], …)`, `WHERE id = ANY($1::uuid[])`).
///
/// Why: a worker handles up to a hundred deliveries per transaction, and PostgreSQL's cost per *statement*
/// (bind, plan-cache check, executor start-up, constraint expressions, locks, one round trip) dwarfs its cost per
/// row. One set-based statement per batch instead of one statement per delivery is what lets a stage's database
/// work scale with rows rather than with statements.
///
/// Sent as PostgreSQL's text array literal with the type left unspecified: write the element type as a cast in the
/// SQL (`$1::bytea[]`). Every element is double-quoted and escaped (`"` and `\`), so any value round-trips; `nil`
/// elements are SQL NULL; `[UInt8]` elements travel as bytea hex text (`\x0a1b…`). Like any text parameter, the
/// literal must not contain a NUL byte, so a string element with one is refused at bind time.
public struct PostgresArray: PostgresBindable {
    public static var postgresDataType: PostgresDataType { .unspecified }

    /// The array literal, `{"a","b",NULL}`.
    public let literal: [UInt8]
    /// Number of elements.
    public let count: Int

    public init<Element: PostgresBindable>(_ elements: [Element]) {
        var literal: [UInt8] = [UInt8(ascii: "{")]
        literal.reserveCapacity(2 + elements.count * 16)
        var value: [UInt8] = []
        for (index, element) in elements.enumerated() {
            if index > 0 { literal.append(UInt8(ascii: ",")) }
            value.removeAll(keepingCapacity: true)
            guard element.encodePostgresValue(into: &value) else {
                literal.append(contentsOf: "NULL".utf8)
                continue
            }
            literal.append(UInt8(ascii: "\""))
            if Element.postgresFormat == .binary {
                // Only bytea binds in binary; its text form is `\x` + hex digits (the backslash escaped once more).
                literal.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\"), UInt8(ascii: "x")])
                for byte in value {
                    literal.append(PostgresHex.lowercaseDigits[Int(byte >> 4)])
                    literal.append(PostgresHex.lowercaseDigits[Int(byte & 0x0F)])
                }
            } else {
                for byte in value {
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { literal.append(UInt8(ascii: "\\")) }
                    literal.append(byte)
                }
            }
            literal.append(UInt8(ascii: "\""))
        }
        literal.append(UInt8(ascii: "}"))
        self.literal = literal
        count = elements.count
    }

    public func encodePostgresValue(into buffer: inout [UInt8]) -> Bool {
        buffer.append(contentsOf: literal)
        return true
    }
}
