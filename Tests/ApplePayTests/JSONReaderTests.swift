@testable import ApplePay
import Foundation
import Testing

@Suite struct JSONReaderTests {
    @Test func parsesTheGrammar() throws {
        let value = try JSONReader.parse(Array(#" {"a":[1,-2.5e3,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"],"b":{}} "#.utf8))
        let object = try #require(value.objectValue)
        let array = try #require(object["a"]?.arrayValue)
        #expect(array[0] == .number("1"))
        #expect(array[1] == .number("-2.5e3"))
        #expect(array[2] == .bool(true) && array[3] == .bool(false) && array[4] == .null)
        #expect(array[5].stringValue == "x\"\\/\u{08}\u{0C}\n\r\té😀")
        #expect(object["b"] == .object(JSONObject(members: [])))
        #expect(array[0].int64Value == 1 && array[1].int64Value == nil)
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "tru", "\"\\x\"", "\"\\ud800\"", "\"a\nb\"",
                      "{\"a\":1,\"a\":2}", "[1] 2", "{'a':1}"])
    func rejectsInvalidDocuments(text: String) {
        #expect(throws: JSONReader.Failure.self) { try JSONReader.parse(Array(text.utf8)) }
    }

    @Test func rejectsInvalidUTF8AndDeepNesting() {
        #expect(throws: JSONReader.Failure.self) { try JSONReader.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONReader.Failure.self) { try JSONReader.parse(Array((String(repeating: "[", count: 40) + String(repeating: "]", count: 40)).utf8)) }
    }

    @Test func duplicateKeysInLargeObjectsAreFound() {
        let members = (0..<40).map { "\"k\($0)\":\($0)" } + ["\"k3\":0"]
        #expect(throws: JSONReader.Failure.self) { try JSONReader.parse(Array(("{" + members.joined(separator: ",") + "}").utf8)) }
    }

    @Test func agreesWithFoundationOnRealTokens() throws {
        for file in ["gala/token.json", "basis-theory/ec/token.new.json", "processout/token-rsa.json"] {
            let bytes = try Fixtures.bytes(file)
            let ours = try JSONReader.parse(bytes)
            let foundation = try JSONSerialization.jsonObject(with: Data(bytes)) as! [String: Any]
            let paymentData = (foundation["paymentData"] as? [String: Any]) ?? foundation
            let mine = ours.objectValue?["paymentData"]?.objectValue ?? ours.objectValue
            #expect(mine?["signature"]?.stringValue == paymentData["signature"] as? String, "\(file)")
            #expect(mine?["data"]?.stringValue == paymentData["data"] as? String, "\(file)")
        }
    }
}
