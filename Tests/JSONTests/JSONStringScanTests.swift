import JSON
import Testing

/// The word-at-a-time string scan must stop at exactly the same bytes as a byte-by-byte scan, wherever a special
/// byte falls within or across 8-byte words.
@Suite struct JSONStringScanTests {
    @Test func specialBytesAreFoundAtEveryOffset() throws {
        for length in 0..<40 {
            for position in 0..<max(length, 1) {
                var body = [UInt8](repeating: UInt8(ascii: "A"), count: length)
                // An escape anywhere decodes to the same text as without it.
                if length > 0 {
                    body[position] = UInt8(ascii: "B")
                    var escaped = Array(body[..<position]) + Array(#"\u0042"#.utf8) + Array(body[(position + 1)...])
                    let plain = try JSONValue.parse(Array("\"".utf8) + body + Array("\"".utf8))
                    escaped = Array("\"".utf8) + escaped + Array("\"".utf8)
                    #expect(try JSONValue.parse(escaped) == plain)
                    // A raw control character anywhere is rejected.
                    for control: UInt8 in [0x00, 0x01, 0x0A, 0x1F] {
                        var bad = body
                        bad[position] = control
                        #expect(throws: JSONParseError.self) { try JSONValue.parse(Array("\"".utf8) + bad + Array("\"".utf8)) }
                    }
                    // A quote anywhere ends the string early (trailing data).
                    var quoted = body
                    quoted[position] = UInt8(ascii: "\"")
                    #expect(throws: JSONParseError.self) { try JSONValue.parse(Array("\"".utf8) + quoted + Array("\"x".utf8)) }
                }
            }
        }
    }

    @Test func nonASCIIAnywhereIsValidatedAndKept() throws {
        for prefix in 0..<20 {
            let text = String(repeating: "a", count: prefix) + "é€😀" + String(repeating: "b", count: 20 - prefix)
            #expect(try JSONValue.parse(Array("\"\(text)\"".utf8)) == .string(text))
            // Invalid UTF-8 (a lone continuation byte) at the same place is rejected.
            let bad = Array(String(repeating: "a", count: prefix).utf8) + [0x80] + Array(String(repeating: "b", count: 20).utf8)
            #expect(throws: JSONParseError.self) { try JSONValue.parse([0x22] + bad + [0x22]) }
        }
        // Bytes 0x80…0xFF must never be taken for control characters, quotes or backslashes.
        let high = "\u{00A2}\u{00DC}\u{00DD}\u{00A0}\u{0100}\u{2022}"
        #expect(try JSONValue.parse(Array("\"\(high)\(high)\"".utf8)) == .string(high + high))
    }
}
