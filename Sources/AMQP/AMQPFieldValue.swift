import Foundation

/// A value in an AMQP field table (queue arguments, message headers, `x-death` entries).
///
/// Integers of every wire width decode to `.int`, so `x-delivery-count` reads the same whether the
/// broker sent it as a 32- or 64-bit value. Strings encode as long strings (`S`), integers as signed
/// 64-bit (`l`), which is what RabbitMQ expects for `x-message-ttl`, `x-delivery-limit` and friends.
public enum AMQPFieldValue: Sendable, Equatable {
    case string(String)
    case int(Int64)
    case bool(Bool)
    case table([String: AMQPFieldValue])
    case array([AMQPFieldValue])
    case double(Double)
    /// Raw bytes (`x`), also used for long strings that are not valid UTF-8.
    case bytes([UInt8])
    /// Whole seconds since 1970 on the wire (`T`).
    case timestamp(Date)
    /// `value / 10^scale` (`D`).
    case decimal(scale: UInt8, value: UInt32)
    /// An explicit "no value" (`V`).
    case void

    /// The string payload, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { value } else { nil }
    }

    /// The integer payload, if this is an integer.
    public var intValue: Int64? {
        if case .int(let value) = self { value } else { nil }
    }

    /// The table payload, if this is a table.
    public var tableValue: [String: AMQPFieldValue]? {
        if case .table(let value) = self { value } else { nil }
    }

    /// The array payload, if this is an array.
    public var arrayValue: [AMQPFieldValue]? {
        if case .array(let value) = self { value } else { nil }
    }
}

extension AMQPFieldValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension AMQPFieldValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) { self = .int(value) }
}

extension AMQPFieldValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension AMQPFieldValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension AMQPFieldValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: AMQPFieldValue...) { self = .array(elements) }
}

extension AMQPFieldValue: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, AMQPFieldValue)...) {
        self = .table(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
