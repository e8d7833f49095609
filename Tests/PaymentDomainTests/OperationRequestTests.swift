import Foundation
import JSON
import Testing
@testable import PaymentDomain

/// The operation job contract: decoding, classified errors, the content hash, and docs/schemas/operation.schema.json
/// requiring what the decoder requires. Files only: no service.
@Suite struct OperationRequestTests {
    static let paymentId = "6F9619FF-8B86-D011-B42D-00C04FC964FF"

    static func decode(_ json: String, _ kind: OperationRequest.Kind = .refund) throws(OperationRequest.DecodingError) -> OperationRequest {
        try OperationRequest.decode(Array(json.utf8), kind: kind)
    }

    @Test func routingKeysNameTheKinds() {
        #expect(OperationRequest.Kind.allCases.map(\.routingKey)
            == ["payment.capture.requested", "payment.void.requested", "payment.refund.requested"])
        for kind in OperationRequest.Kind.allCases { #expect(OperationRequest.Kind(routingKey: kind.routingKey) == kind) }
        #expect(OperationRequest.Kind(routingKey: "payment.requested") == nil)
    }

    @Test func decodesByPaymentIdOrByJobId() throws {
        let byId = try Self.decode(#"{"operationId":"r-1","merchantId":"m1","paymentId":"\#(Self.paymentId)","amount":250,"new":1}"#)
        #expect(byId.kind == .refund && byId.operationId == "r-1" && byId.merchantId == "m1" && byId.amount == 250)
        #expect(byId.payment == .paymentId(UUID(uuidString: Self.paymentId)!))
        let byJob = try Self.decode(#"{"operationId":"c-1","merchantId":"m1","jobId":"order-1-attempt-1"}"#, .capture)
        #expect(byJob.payment == .jobId("order-1-attempt-1") && byJob.amount == nil)
        let nullAmount = try Self.decode(#"{"operationId":"c-1","merchantId":"m1","jobId":"order-1-attempt-1","amount":null}"#, .capture)
        #expect(nullAmount == byJob)
    }

    @Test(arguments: [
        ("not json", "is not a JSON object"),
        ("[1]", "is not a JSON object"),
        (#"{"operationId":"r-1","merchantId":"m1","paymentId":"x","paymentId":"y"}"#, "is not a JSON object"),
        (#"{"operationId":"r-1","paymentId":"x"}"#, "merchantId"),
        (#"{"operationId":"r 1","merchantId":"m1"}"#, "operationId"),
        (#"{"merchantId":"m1","jobId":"j"}"#, "operationId"),
    ])
    func unaddressedBodiesAreMalformed(body: String, mention: String) {
        #expect {
            try Self.decode(body)
        } throws: { error in
            guard let error = error as? OperationRequest.DecodingError, case .unaddressed(let reason) = error else { return false }
            return error.code == "malformed_job" && reason.contains(mention)
        }
    }

    @Test func invalidUTF8IsMalformed() {
        #expect(throws: OperationRequest.DecodingError.unaddressed(reason: "body is not valid UTF-8")) {
            try OperationRequest.decode([0x7B, 0xFF, 0x7D], kind: .void)
        }
    }

    @Test(arguments: [
        (#""paymentId":"not-a-uuid""#, OperationRequest.Kind.refund, "paymentId must be a UUID"),
        (#""jobId":"a b""#, .refund, "jobId must be an identifier"),
        (#""jobId":7"#, .refund, "must be strings"),
        (#""amount":1"#, .refund, "by paymentId or by jobId"),
        (#""jobId":"j","paymentId":"\#(paymentId)""#, .refund, "not both"),
        (#""jobId":"j","amount":0"#, .capture, "between 1 and"),
        (#""jobId":"j","amount":-5"#, .refund, "between 1 and"),
        (#""jobId":"j","amount":100000000000"#, .refund, "between 1 and"),
        (#""jobId":"j","amount":2.5"#, .refund, "integer number of minor units"),
        (#""jobId":"j","amount":"250""#, .refund, "integer number of minor units"),
        (#""jobId":"j","amount":250"#, .void, "a void takes no amount"),
    ])
    func addressedButInvalidOperationsFail(members: String, kind: OperationRequest.Kind, mention: String) {
        #expect {
            try Self.decode(#"{"operationId":"op-1","merchantId":"m1",\#(members)}"#, kind)
        } throws: { error in
            guard let error = error as? OperationRequest.DecodingError,
                  case .invalid(let merchant, let operation, let reason) = error else { return false }
            return error.code == "invalid_job" && merchant == "m1" && operation == "op-1" && reason.contains(mention)
        }
    }

    /// Key order, spacing and a payment id's case do not change the content; the kind, the payment, the amount do.
    @Test func theContentHashIsCanonical() throws {
        let a = try Self.decode(#"{"operationId":"r-1","merchantId":"m1","paymentId":"\#(Self.paymentId)","amount":250}"#)
        let b = try Self.decode(#"{ "amount" : 250, "paymentId" : "\#(Self.paymentId.lowercased())", "merchantId":"m1","operationId":"r-1","x":[]}"#)
        #expect(a.contentHash == b.contentHash)
        let capture = try Self.decode(#"{"operationId":"r-1","merchantId":"m1","paymentId":"\#(Self.paymentId)","amount":250}"#, .capture)
        let other = try Self.decode(#"{"operationId":"r-1","merchantId":"m1","paymentId":"\#(Self.paymentId)","amount":251}"#)
        let whole = try Self.decode(#"{"operationId":"r-1","merchantId":"m1","paymentId":"\#(Self.paymentId)"}"#)
        let byJob = try Self.decode(#"{"operationId":"r-1","merchantId":"m1","jobId":"\#(Self.paymentId)","amount":250}"#)
        #expect(Set([a, capture, other, whole, byJob].map(\.contentHash)).count == 5)
    }

    // MARK: The schema

    static let schemaPath = FailureCatalogueTests.root.appendingPathComponent("docs/schemas/operation.schema.json").path

    /// The schema parses, requires exactly what the decoder requires, and its identifier and amount rules are the decoder's.
    @Test func theSchemaRequiresWhatTheDecoderRequires() throws {
        let schema = try JSONValue.parse(Array(try Data(contentsOf: URL(fileURLWithPath: Self.schemaPath))))
        let required = try #require(schema["required"]?.arrayValue).compactMap(\.stringValue)
        #expect(required.sorted() == ["merchantId", "operationId"])
        let paymentOptions = try #require(schema["oneOf"]?.arrayValue)
        let alternatives = paymentOptions.compactMap { $0["required"]?.arrayValue?.compactMap(\.stringValue) }
        #expect(Set(alternatives) == [["paymentId"], ["jobId"]])
        let properties = try #require(schema["properties"])
        for field in ["operationId", "merchantId", "jobId"] {
            #expect(properties[field]?["pattern"]?.stringValue == "^[A-Za-z0-9._:-]{1,128}$", "\(field)")
        }
        #expect(properties["amount"]?["minimum"]?.int64Value == 1)
        #expect(properties["amount"]?["maximum"]?.int64Value == OperationRequest.maximumAmount)
        // Every example in the schema decodes (as a refund, the kind that accepts every member).
        let examples = try #require(schema["examples"]?.arrayValue)
        #expect(examples.count >= 3)
        for example in examples {
            #expect(throws: Never.self) { try OperationRequest.decode(example.serialized(), kind: .refund) }
        }
    }
}
