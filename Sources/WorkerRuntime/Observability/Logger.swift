import Foundation
import Synchronization

/// Structured JSON-lines logger.
///
/// One line per event with fixed keys (`time`, `level`, `stage`, `event`) and typed extra fields such as
/// `paymentId`, `jobId` and `durationMs`. There is no free-form "log this object" entry point on purpose:
/// every field is named at the call site, which keeps card data (PANs, cryptograms, keys) out of logs by
/// construction — callers pass identifiers and error *codes*, never payloads.
public struct Logger: Sendable {
    public let threshold: LogLevel
    public let component: String
    private let sink: LogSink
    private let context: [(String, LogValue)]

    public init(component: String, threshold: LogLevel, sink: LogSink = .standardOutput) {
        self.init(component: component, threshold: threshold, sink: sink, context: [])
    }

    private init(component: String, threshold: LogLevel, sink: LogSink, context: [(String, LogValue)]) {
        self.component = component
        self.threshold = threshold
        self.sink = sink
        self.context = context
    }

    /// A logger that adds `fields` to every line (e.g. the worker id).
    public func with(_ fields: [(String, LogValue)]) -> Logger {
        Logger(component: component, threshold: threshold, sink: sink, context: context + fields)
    }

    public func debug(_ event: String, _ fields: [(String, LogValue)] = []) { log(.debug, event, fields) }
    public func info(_ event: String, _ fields: [(String, LogValue)] = []) { log(.info, event, fields) }
    public func warning(_ event: String, _ fields: [(String, LogValue)] = []) { log(.warning, event, fields) }
    public func error(_ event: String, _ fields: [(String, LogValue)] = []) { log(.error, event, fields) }

    public func log(_ level: LogLevel, _ event: String, _ fields: [(String, LogValue)]) {
        guard level >= threshold else { return }
        var line = "{\"time\":\(LogValue.string(Self.timestamp(Date())).json)"
        line += ",\"level\":\"\(level.rawValue)\",\"stage\":\(LogValue.string(component).json)"
        line += ",\"event\":\(LogValue.string(event).json)"
        for (key, value) in context + fields {
            line += ",\(LogValue.string(key).json):\(value.json)"
        }
        line += "}\n"
        sink.write(line)
    }

    /// ISO 8601 UTC with milliseconds, as every PayPipe log line and CLI output writes times.
    public static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true).timeSeparator(.colon).timeZone(separator: .omitted))
    }
}

/// A typed log field value, rendered as JSON.
public enum LogValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }

    var json: String {
        switch self {
        case .int(let value): return String(value)
        case .bool(let value): return value ? "true" : "false"
        case .double(let value): return value.isFinite ? String(format: "%.3f", value) : "null"
        case .string(let value):
            var out = "\""
            for scalar in value.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
    }
}

/// Where log lines go. Lines are written whole under a lock so concurrent lanes never interleave.
public final class LogSink: Sendable {
    private let handle: Mutex<FileHandle>
    private let captured = Mutex<[String]>([])
    private let capturing: Bool

    public static let standardOutput = LogSink(handle: .standardOutput)

    public init(handle: FileHandle) {
        self.handle = Mutex(handle)
        capturing = false
    }

    /// A sink that keeps lines in memory (tests assert on what was logged).
    public init(capturing: Void) {
        handle = Mutex(FileHandle.nullDevice)
        self.capturing = true
    }

    public var lines: [String] { captured.withLock { $0 } }

    func write(_ line: String) {
        if capturing {
            captured.withLock { $0.append(line) }
        } else {
            handle.withLock { $0.write(Data(line.utf8)) }
        }
    }
}
