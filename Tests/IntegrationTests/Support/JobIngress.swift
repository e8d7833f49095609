import AMQP
import Foundation
import Pipeline

/// Publishes jobs to the real ingress exactly as docs/job-contract.md tells backend teams: exchange `paypipe.jobs`,
/// routing key `payment.requested`, persistent, `application/json`, `message_id`, with publisher confirms.
enum JobIngress {
    struct Job {
        let body: [UInt8]
        /// The contract's `message_id` (the job id); the bad-input corpus uses the case id to find dead letters.
        var messageId: String?
        /// The AMQP `timestamp` property, as the contract asks publishers to set it (the publish time).
        var timestamp: Date?
        /// AMQP headers (the bad-input corpus's hostile ones).
        var headers: [String: AMQPFieldValue] = [:]
    }

    static func publish(_ jobs: [Job], amqpURL: String = TestServices.amqpURL, retrySchedule: RetrySchedule) throws {
        let publisher = AMQPPublisher(configuration: try AMQPConfiguration(url: amqpURL),
                                      topology: PipelineTopology.topology(retrySchedule: retrySchedule))
        defer { publisher.close() }
        try publisher.publish(jobs.map {
            AMQPOutboundMessage(
                exchange: PipelineTopology.jobsExchange, routingKey: PipelineTopology.jobRoutingKey, body: $0.body,
                properties: AMQPProperties(contentType: "application/json", messageId: $0.messageId, persistent: true, headers: $0.headers, timestamp: $0.timestamp),
                mandatory: true)
        }, timeout: 30)
    }
}
