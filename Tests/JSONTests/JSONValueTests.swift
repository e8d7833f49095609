import JSON
import Testing

@Suite struct JSONValueTests {
    @Test func serialisesDeterministicallyInInsertionOrder() {
        let value: JSONValue = [
            "z": 1, "a": [true, false, nil], "m": ["nested": "x", "b": -5], "url": "https://example.com/a/b",
            "d": 1.5, "e": "",
        ]
        let expected = #"{"z":1,"a":[true,false,null],"m":{"nested":"x","b":-5},"url":"https://example.com/a/b","d":1.5,"e":""}"#
        #expect(value.serializedString == expected)
        // Same value, same bytes, every time.
        #expect(value.serialized() == value.serialized())
        #expect(value.serialized() == Array(expected.utf8))
    }

    @Test func escapesOnlyWhatJSONRequires() {
        let value = JSONValue.string("quote\" backslash\\ slash/ nl\n cr\r tab\t bs\u{08} ff\u{0C} nul\u{00} us\u{1F} é € 😀")
        #expect(value.serializedString
            == #""quote\" backslash\\ slash/ nl\n cr\r tab\t bs\b ff\f nul\u0000 us\u001f é € 😀""#)
    }

    @Test func numbers() throws {
        #expect(JSONValue.integer(Int64.max).serializedString == "9223372036854775807")
        #expect(JSONValue.integer(Int64.min).serializedString == "-9223372036854775808")
        #expect(JSONValue.double(0.1).serializedString == "0.1")
        #expect(JSONValue.double(.infinity).serializedString == "null")
        #expect(JSONValue.double(.nan).serializedString == "null")
        #expect(try JSONValue.parse("1735689600") == .integer(1_735_689_600))
        #expect(try JSONValue.parse("-0") == .integer(0))
        #expect(try JSONValue.parse("10.50") == .double(10.5))
        #expect(try JSONValue.parse("1e3") == .double(1000))
        #expect(try JSONValue.parse("1E-2") == .double(0.01))
        // Beyond Int64: a double.
        #expect(try JSONValue.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(JSONValue.integer(7).int64Value == 7)
        #expect(JSONValue.double(7).int64Value == nil)  // strict: only integer literals
        #expect(JSONValue.double(7.5).int64Value == nil)
        for double in [0.1, 1e-7, 123456.789, -2.5e300, Double.leastNonzeroMagnitude] {
            #expect(try JSONValue.parse(JSONValue.double(double).serialized()) == .double(double))
        }
    }

    @Test func parseThenSerialiseRoundTripsCompactDocuments() throws {
        let documents = [
            #"{"iss":"jwt.example.user","iat":1735689600,"payload":{"baseamount":"1050","requesttypedescriptions":["THREEDQUERY","AUTH"]}}"#,
            #"[1,-2,3.25,"a",true,false,null,{},[]]"#,
            #"{"unicode":"é€😀","escaped":"a\"b\\c\nd","slash":"a/b"}"#,
            #""just a string""#,
            "null",
        ]
        for document in documents {
            let value = try JSONValue.parse(document)
            #expect(value.serializedString == document)
            #expect(try JSONValue.parse(value.serialized()) == value)
        }
    }

    @Test func parsesWhitespaceAndEscapes() throws {
        let value = try JSONValue.parse(" {\r\n \"a\" : [ 1 , 2 ] ,\t\"b\":\"\\u00e9\\/\\ud83d\\ude00\" } \n")
        #expect(value == ["a": [1, 2], "b": "é/😀"])
        #expect(value.serializedString == #"{"a":[1,2],"b":"é/😀"}"#)
    }

    @Test(arguments: [
        "", " ", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "01", "1.", ".5", "-", "+1", "1e", "tru", "nul",
        "\"unterminated", "\"raw\ncontrol\"", "\"bad\\x\"", "\"\\ud83d\"", "\"\\ude00\"", "\"\\u12\"", "NaN",
        "Infinity", "1 2", "{}{}", "{\"a\":1,\"a\":2}", "'single'", "[1e999]",
    ])
    func rejectsInvalidDocuments(document: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(document) }
    }

    @Test func rejectsInvalidUTF8AndDeepNesting() {
        #expect(throws: JSONParseError.invalidString(offset: 0)) { try JSONValue.parse([0x22, 0xC3, 0x28, 0x22]) }
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONParseError.nestingTooDeep(offset: 64)) { try JSONValue.parse(deep) }
        let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try JSONValue.parse(fine) }
        #expect(throws: JSONParseError.duplicateKey(offset: 7)) { try JSONValue.parse(#"{"a":1,"a":2}"#) }
    }

    @Test func accessorsAndSet() {
        var value: JSONValue = ["iss": "merchant", "iat": 1, "list": ["x"]]
        #expect(value["iss"]?.stringValue == "merchant")
        #expect(value["list"]?[0]?.stringValue == "x")
        #expect(value["list"]?[1] == nil)
        #expect(value["missing"] == nil)
        #expect(JSONValue.string("s")["key"] == nil)
        value.set(2, forKey: "iat")
        value.set("new", forKey: "jti")
        #expect(value.serializedString == #"{"iss":"merchant","iat":2,"list":["x"],"jti":"new"}"#)
        #expect(JSONValue.null.isNull)
        #expect(JSONValue.bool(true).boolValue == true)
    }

    @Test func objectsKeepOrderAndValueSemantics() {
        var object: JSONValue = ["b": 1, "a": "x"]
        #expect(object.isObject && !JSONValue.array([]).isObject)
        object.set(2, forKey: "b")
        object.set(true, forKey: "c")
        #expect(object.objectValue?.map(\.key) == ["b", "a", "c"])
        #expect(object.serializedString == #"{"b":2,"a":"x","c":true}"#)
        #expect(object != ["a": "x", "b": 2, "c": true])
        // `set` on a copy leaves the original alone.
        let original: JSONValue = ["a": 1]
        var copy = original
        copy.set(2, forKey: "a")
        #expect(original == ["a": 1])
        #expect(copy == ["a": 2])
    }

    @Test func equalityRespectsMemberOrder() {
        let ab: JSONValue = ["a": 1, "b": 2]
        let ba: JSONValue = ["b": 2, "a": 1]
        #expect(ab != ba)
        #expect(ab == ["a": 1, "b": 2])
        #expect(JSONValue.integer(1) != JSONValue.double(1))
    }
}
