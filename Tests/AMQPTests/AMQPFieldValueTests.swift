import Foundation
import Testing
@testable import AMQP

@Suite("Field tables and backoff (no broker)")
struct AMQPFieldValueTests {
    @Test func tableSurvivesEncodeDecode() {
        let table: [String: AMQPFieldValue] = [
            "text": "héllo",
            "int": .int(-42),
            "big": .int(Int64.max),
            "flag": true,
            "ratio": 0.25,
            "raw": .bytes([0, 255, 7]),
            "when": .timestamp(Date(timeIntervalSince1970: 1_700_000_000)),
            "price": .decimal(scale: 2, value: 1999),
            "nothing": .void,
            "nested": ["deeper": ["list": [1, "two", false, ["k": "v"]]]],
            "empty-list": .array([]),
            "empty-table": .table([:]),
        ]
        let arena = AMQPCArena()
        let encoded = arena.table(table)
        #expect(encoded.num_entries == Int32(table.count))
        #expect(AMQPTableCodec.decode(encoded) == table)
    }

    @Test func propertiesSurviveEncodeDecode() {
        let properties = AMQPProperties(
            contentType: "application/json", contentEncoding: "identity", messageId: "m-1", correlationId: "c-1",
            replyTo: "r", type: "payment.authorise", appId: "paypipe", persistent: false, priority: 3,
            headers: ["x-attempt": 2], timestamp: Date(timeIntervalSince1970: 1_700_000_123), expiration: "60000")
        let arena = AMQPCArena()
        #expect(AMQPProperties(properties.encode(into: arena)) == properties)
    }

    @Test func stringsAreCopiedIntoTheArena() {
        let arena = AMQPCArena()
        let bytes = arena.bytes(String(repeating: "q", count: 3) + ".quorum")
        // The Swift string above is a temporary; the arena copy must outlive it and be NUL-terminated.
        #expect(AMQPTableCodec.string(bytes) == "qqq.quorum")
        #expect(bytes.bytes!.load(fromByteOffset: bytes.len, as: UInt8.self) == 0)
    }

    @Test func deliveryCountComesFromHeader() {
        let properties = AMQPProperties(headers: ["x-delivery-count": .int(3)])
        let delivery = AMQPDelivery(body: [], properties: properties, exchange: "", routingKey: "q",
                                    redelivered: true, deliveryTag: 1, generation: 1)
        #expect(delivery.deliveryCount == 3)
        let fresh = AMQPDelivery(body: [], properties: AMQPProperties(), exchange: "", routingKey: "q",
                                 redelivered: false, deliveryTag: 1, generation: 1)
        #expect(fresh.deliveryCount == 0)
    }

    /// The broker writes `x-delivery-count` only when it redelivers; on a first delivery the header is whatever the
    /// publisher put there, so it counts for nothing (a forged 25 would dead-letter a fresh job as a crash loop).
    @Test func aPublishersDeliveryCountIsIgnored() {
        let forged = AMQPProperties(headers: ["x-delivery-count": .int(25)])
        let first = AMQPDelivery(body: [], properties: forged, exchange: "paypipe.jobs", routingKey: "q",
                                 redelivered: false, deliveryTag: 1, generation: 1)
        #expect(first.deliveryCount == 0)
        let negative = AMQPDelivery(body: [], properties: AMQPProperties(headers: ["x-delivery-count": .int(-4)]),
                                    exchange: "", routingKey: "q", redelivered: true, deliveryTag: 1, generation: 1)
        #expect(negative.deliveryCount == 0)
    }

    @Test func backoffIsCappedExponentialWithFullJitter() {
        let backoff = AMQPBackoff()
        #expect(backoff.ceiling(forAttempt: 1) == 0.2)
        #expect(backoff.ceiling(forAttempt: 2) == 0.4)
        #expect(backoff.ceiling(forAttempt: 6) == 6.4)
        #expect(backoff.ceiling(forAttempt: 7) == 10)
        #expect(backoff.ceiling(forAttempt: 500) == 10)
        let samples = (0..<2000).map { _ in backoff.delay(forAttempt: 9) }
        #expect(samples.allSatisfy { (0...10).contains($0) })
        // Full jitter: spread over the whole range, not clustered at the ceiling.
        #expect(samples.contains { $0 < 2 })
        #expect(samples.contains { $0 > 8 })
    }
}
