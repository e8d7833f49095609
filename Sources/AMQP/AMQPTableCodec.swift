import CRabbitMQ
import Foundation

/// Decodes rabbitmq-c tables and byte strings into Swift values (copies; the C memory may be
/// recycled right afterwards).
enum AMQPTableCodec {
    static func decode(_ table: amqp_table_t) -> [String: AMQPFieldValue] {
        guard table.num_entries > 0, let entries = table.entries else { return [:] }
        var result: [String: AMQPFieldValue] = [:]
        result.reserveCapacity(Int(table.num_entries))
        for index in 0..<Int(table.num_entries) {
            result[string(entries[index].key)] = decode(entries[index].value)
        }
        return result
    }

    static func decode(_ field: amqp_field_value_t) -> AMQPFieldValue {
        switch Unicode.Scalar(field.kind) {
        case "t": return .bool(field.value.boolean != 0)
        case "b": return .int(Int64(field.value.i8))
        case "B": return .int(Int64(field.value.u8))
        case "s": return .int(Int64(field.value.i16))
        case "u": return .int(Int64(field.value.u16))
        case "I": return .int(Int64(field.value.i32))
        case "i": return .int(Int64(field.value.u32))
        case "l": return .int(field.value.i64)
        // Unsigned 64-bit values above Int64.max do not occur in RabbitMQ headers; clamp rather than trap.
        case "L": return .int(Int64(clamping: field.value.u64))
        case "f": return .double(Double(field.value.f32))
        case "d": return .double(field.value.f64)
        case "D": return .decimal(scale: field.value.decimal.decimals, value: field.value.decimal.value)
        case "S":
            let raw = bytes(field.value.bytes)
            if let text = String(bytes: raw, encoding: .utf8) { return .string(text) }
            return .bytes(raw)
        case "x": return .bytes(bytes(field.value.bytes))
        case "T": return .timestamp(Date(timeIntervalSince1970: Double(field.value.u64)))
        case "F": return .table(decode(field.value.table))
        case "A":
            let array = field.value.array
            guard array.num_entries > 0, let entries = array.entries else { return .array([]) }
            return .array((0..<Int(array.num_entries)).map { decode(entries[$0]) })
        default: return .void
        }
    }

    /// UTF-8 text of an AMQP short/long string (invalid sequences are repaired, never trapped on).
    static func string(_ bytes: amqp_bytes_t) -> String {
        guard bytes.len > 0, let start = bytes.bytes else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: start, count: bytes.len), as: UTF8.self)
    }

    static func bytes(_ bytes: amqp_bytes_t) -> [UInt8] {
        guard bytes.len > 0, let start = bytes.bytes else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: start, count: bytes.len))
    }
}
