import Foundation
import JSON
import Testing

/// The parser's fast paths (escape-free strings, ASCII detection, direct integer conversion, linear duplicate-key
/// check) and the Apple Pay token cases that came with the ApplePay module's former reader.
@Suite struct JSONParserTests {
    @Test func parsesTheGrammar() throws {
        let value = try JSONValue.parse(Array(#" {"a":[1,-2.5e3,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"],"b":{}} "#.utf8))
        #expect(value.isObject && value.objectValue?.map(\.key) == ["a", "b"])
        let array = try #require(value["a"]?.arrayValue)
        #expect(array[0] == .integer(1))
        #expect(array[1] == .double(-2500))
        #expect(array[2] == .bool(true) && array[3] == .bool(false) && array[4] == .null)
        #expect(array[5].stringValue == "x\"\\/\u{08}\u{0C}\n\r\té😀")
        #expect(value["b"] == .object([]))
        #expect(array[0].int64Value == 1 && array[1].int64Value == nil)
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "tru", "\"\\x\"", "\"\\ud800\"", "\"a\nb\"",
                      "{\"a\":1,\"a\":2}", "[1] 2", "{'a':1}"])
    func rejectsInvalidDocuments(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Array(text.utf8)) }
    }

    @Test func rejectsInvalidUTF8AndDeepNesting() {
        #expect(throws: JSONParseError.self) { try JSONValue.parse([0x22, 0xC3, 0x28, 0x22]) }
        let deep = Array((String(repeating: "[", count: 40) + String(repeating: "]", count: 40)).utf8)
        #expect(throws: JSONParseError.nestingTooDeep(offset: 32)) { try JSONValue.parse(deep, maxDepth: 32) }
        #expect(throws: Never.self) { try JSONValue.parse(deep) }
    }

    @Test func duplicateKeysInLargeObjectsAreFound() {
        let members = (0..<40).map { "\"k\($0)\":\($0)" } + ["\"k3\":0"]
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Array(("{" + members.joined(separator: ",") + "}").utf8)) }
    }

    /// Small objects are checked by scanning, larger ones through a Set built once they pass 16 members: a
    /// duplicate must be caught on both sides of that switch, with the offset of the repeated key.
    @Test(arguments: [1, 15, 16, 17, 40])
    func duplicateKeysAreFoundAtEverySize(memberCount: Int) throws {
        let members = (0..<memberCount).map { "\"k\($0)\":\($0)" }
        let unique = "{" + members.joined(separator: ",") + "}"
        #expect(try JSONValue.parse(unique).objectValue?.count == memberCount)
        let prefix = "{" + members.joined(separator: ",") + ","
        for repeated in [0, memberCount - 1] {
            let document = prefix + "\"k\(repeated)\":0}"
            #expect(throws: JSONParseError.duplicateKey(offset: prefix.utf8.count)) { try JSONValue.parse(document) }
        }
    }

    @Test func integersAreExactUpToInt64() throws {
        #expect(try JSONValue.parse("999999999999999999") == .integer(999_999_999_999_999_999))  // 18 digits
        #expect(try JSONValue.parse("-999999999999999999") == .integer(-999_999_999_999_999_999))
        #expect(try JSONValue.parse("9223372036854775807") == .integer(.max))  // 19 digits
        #expect(try JSONValue.parse("-9223372036854775808") == .integer(.min))
        #expect(try JSONValue.parse("-9223372036854775809") == .double(-9.223372036854775808e18))  // beyond Int64: a double
        #expect(try JSONValue.parse("[0,-0,7,1234]") == [0, 0, 7, 1234])
        #expect(try JSONValue.parse("100.0") == .double(100))
        #expect(try JSONValue.parse("100.0").int64Value == nil)
    }

    /// ASCII strings skip UTF-8 validation; everything else must still be rejected when malformed, with or without
    /// escapes, and valid non-ASCII (including a literal U+FFFD) kept byte for byte.
    @Test(arguments: [
        [0x80], [0xC0, 0xAF], [0xE2, 0x82], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF], [0x61, 0xC3],
    ] as [[UInt8]])
    func malformedUTF8IsRejected(sequence: [UInt8]) {
        let plain: [UInt8] = [0x22, 0x61] + sequence + [0x62, 0x22]
        #expect(throws: JSONParseError.invalidString(offset: 0)) { try JSONValue.parse(plain) }
        let escaped: [UInt8] = Array(#""\n"#.utf8) + sequence + Array(#"\t""#.utf8)
        #expect(throws: JSONParseError.invalidString(offset: 0)) { try JSONValue.parse(escaped) }
        #expect(throws: JSONParseError.invalidString(offset: 5)) { try JSONValue.parse(Array(#"{"a":"#.utf8) + plain + [0x7D]) }
    }

    @Test func validNonASCIIStringsAreKept() throws {
        for text in ["é", "€uro", "😀", "replacement \u{FFFD} char", "mixed ascii then ü", "\u{10FFFF}"] {
            let quoted = "\"" + text + "\""
            #expect(try JSONValue.parse(Array(quoted.utf8)) == .string(text))
            #expect(try JSONValue.parse(quoted) == .string(text))
            #expect(try JSONValue.parse("\"\\n" + text + "\"") == .string("\n" + text))
        }
    }

    @Test func stringAndByteInputsAgree() throws {
        let document = #"{"a":[1,2.5,"x\u00e9"],"b":null,"c":{"d":true}}"#
        #expect(try JSONValue.parse(document) == JSONValue.parse(Array(document.utf8)))
        #expect(throws: JSONParseError.trailingData(offset: 3)) { try JSONValue.parse("{} x") }
    }

    @Test func agreesWithFoundationOnRealTokens() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/applepay")
        for file in ["gala/token.json", "basis-theory/ec/token.new.json", "processout/token-rsa.json"] {
            let bytes = Array(try Data(contentsOf: fixtures.appendingPathComponent(file)))
            let ours = try JSONValue.parse(bytes)
            let foundation = try JSONSerialization.jsonObject(with: Data(bytes)) as! [String: Any]
            let paymentData = (foundation["paymentData"] as? [String: Any]) ?? foundation
            let mine = ours["paymentData"] ?? ours
            #expect(mine["signature"]?.stringValue == paymentData["signature"] as? String, "\(file)")
            #expect(mine["data"]?.stringValue == paymentData["data"] as? String, "\(file)")
            #expect(try JSONValue.parse(ours.serialized()) == ours, "\(file)")
        }
    }
}
