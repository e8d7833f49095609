import AMQP
import Foundation

// `publish-job-example JOB.json [--amqp-url URL]`: publishes one payment job exactly as docs/asyncapi.yaml
// describes — exchange paypipe.jobs, routing key payment.requested, persistent, content_type
// application/json, message_id = jobId, mandatory — and exits 0 only once the broker has confirmed it.
// Uses only the AMQP module, as a backend team's Swift service would.

let usage = "usage: publish-job-example JOB.json [--amqp-url URL]   (PAYPIPE_AMQP_URL is the default URL)"

func fail(_ message: String, _ code: Int32) -> Never {
    FileHandle.standardError.write(Data("publish-job-example: \(message)\n".utf8))
    exit(code)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var amqpURL = ProcessInfo.processInfo.environment["PAYPIPE_AMQP_URL"] ?? "amqp://guest:guest@127.0.0.1:5672/%2f"
if let index = arguments.firstIndex(of: "--amqp-url") {
    guard index + 1 < arguments.count else { fail(usage, 64) }
    amqpURL = arguments[index + 1]
    arguments.removeSubrange(index...(index + 1))
}
guard arguments.count == 1, arguments[0] != "--help" else { fail(usage, 64) }

guard let body = FileManager.default.contents(atPath: arguments[0]),
      let job = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
      let jobId = job["jobId"] as? String else {
    fail("\(arguments[0]) is not a job object with a string jobId", 65)
}

do {
    // The publisher declares nothing: the topology belongs to PayPipe, and a missing exchange should fail
    // the publish (404) rather than be created by a client.
    let publisher = AMQPPublisher(configuration: try AMQPConfiguration(url: amqpURL), topology: AMQPTopology())
    defer { publisher.close() }
    let properties = AMQPProperties(contentType: "application/json", messageId: jobId, persistent: true, timestamp: Date())
    try publisher.publish(
        AMQPOutboundMessage(exchange: "paypipe.jobs", routingKey: "payment.requested", body: Array(body),
                            properties: properties, mandatory: true),
        timeout: 30)
    print("{\"jobId\":\"\(jobId)\",\"confirmed\":true}")
} catch {
    fail("not confirmed: \(error)", 69)
}
