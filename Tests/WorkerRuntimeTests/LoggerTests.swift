import Foundation
import Testing
@testable import WorkerRuntime

@Suite struct LoggerTests {
    @Test func writesOneJSONObjectPerLine() throws {
        let sink = LogSink(capturing: ())
        let logger = Logger(component: "decrypt", threshold: .info, sink: sink).with([("pid", 42)])
        logger.info("payment_advanced", [("paymentId", "p-1"), ("durationMs", .double(1.5)), ("note", "quote \" and\nnewline")])
        logger.debug("hidden")
        #expect(sink.lines.count == 1)
        let object = try #require(JSONSerialization.jsonObject(with: Data(sink.lines[0].utf8)) as? [String: Any])
        #expect(object["level"] as? String == "info")
        #expect(object["stage"] as? String == "decrypt")
        #expect(object["event"] as? String == "payment_advanced")
        #expect(object["paymentId"] as? String == "p-1")
        #expect(object["pid"] as? Int == 42)
        #expect(object["note"] as? String == "quote \" and\nnewline")
        #expect(object["time"] is String)
    }
}
