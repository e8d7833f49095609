import CRabbitMQ
import Foundation

/// Owns the C memory of every value handed to rabbitmq-c (names, routing keys, property strings,
/// argument/header tables).
///
/// `amqp_cstring_bytes(swiftString)` would point into a temporary that dies as soon as the call that
/// produced it returns; a queue declared that way can silently lose its `x-queue-type=quorum`
/// argument. Everything passed to rabbitmq-c is therefore copied into this arena (an `amqp_pool_t`),
/// which stays alive for the whole C call and is recycled by its owner before the next one.
/// Not thread-safe: each `AMQPConnection` owns one.
final class AMQPCArena {
    private let pool: UnsafeMutablePointer<amqp_pool_t>

    init(pageSize: Int = 4096) {
        pool = .allocate(capacity: 1)
        init_amqp_pool(pool, pageSize)
    }

    deinit {
        empty_amqp_pool(pool)
        pool.deallocate()
    }

    /// Makes all memory handed out so far reusable. Only call when C no longer uses any of it.
    func reset() {
        recycle_amqp_pool(pool)
    }

    func bytes(_ string: String) -> amqp_bytes_t {
        var string = string
        return string.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
    }

    func bytes(_ array: [UInt8]) -> amqp_bytes_t {
        array.withUnsafeBytes { bytes($0) }
    }

    /// Copies `buffer` (plus a NUL terminator, for C code that treats keys as C strings).
    func bytes(_ buffer: UnsafeRawBufferPointer) -> amqp_bytes_t {
        guard let source = buffer.baseAddress, buffer.count > 0 else { return amqp_bytes_t(len: 0, bytes: nil) }
        let destination = allocate(byteCount: buffer.count + 1)
        destination.copyMemory(from: source, byteCount: buffer.count)
        destination.storeBytes(of: 0, toByteOffset: buffer.count, as: UInt8.self)
        return amqp_bytes_t(len: buffer.count, bytes: destination)
    }

    /// Encodes a table. Keys are sorted so the wire form is deterministic.
    func table(_ dictionary: [String: AMQPFieldValue]) -> amqp_table_t {
        guard !dictionary.isEmpty else { return amqp_table_t(num_entries: 0, entries: nil) }
        let entries = allocate(byteCount: MemoryLayout<amqp_table_entry_t>.stride * dictionary.count)
            .bindMemory(to: amqp_table_entry_t.self, capacity: dictionary.count)
        for (index, key) in dictionary.keys.sorted().enumerated() {
            entries[index] = amqp_table_entry_t(key: bytes(key), value: field(dictionary[key]!))
        }
        return amqp_table_t(num_entries: Int32(dictionary.count), entries: entries)
    }

    func field(_ value: AMQPFieldValue) -> amqp_field_value_t {
        var field = amqp_field_value_t()
        switch value {
        case .string(let string):
            field.kind = kind("S")
            field.value.bytes = bytes(string)
        case .int(let int):
            field.kind = kind("l")
            field.value.i64 = int
        case .bool(let bool):
            field.kind = kind("t")
            field.value.boolean = bool ? 1 : 0
        case .double(let double):
            field.kind = kind("d")
            field.value.f64 = double
        case .bytes(let array):
            field.kind = kind("x")
            field.value.bytes = bytes(array)
        case .timestamp(let date):
            field.kind = kind("T")
            field.value.u64 = UInt64(max(0, date.timeIntervalSince1970.rounded(.down)))
        case .decimal(let scale, let decimalValue):
            field.kind = kind("D")
            field.value.decimal = amqp_decimal_t(decimals: scale, value: decimalValue)
        case .void:
            field.kind = kind("V")
        case .table(let dictionary):
            field.kind = kind("F")
            field.value.table = table(dictionary)
        case .array(let elements):
            field.kind = kind("A")
            field.value.array = array(elements)
        }
        return field
    }

    private func array(_ elements: [AMQPFieldValue]) -> amqp_array_t {
        guard !elements.isEmpty else { return amqp_array_t(num_entries: 0, entries: nil) }
        let entries = allocate(byteCount: MemoryLayout<amqp_field_value_t>.stride * elements.count)
            .bindMemory(to: amqp_field_value_t.self, capacity: elements.count)
        for (index, element) in elements.enumerated() {
            entries[index] = field(element)
        }
        return amqp_array_t(num_entries: Int32(elements.count), entries: entries)
    }

    private func kind(_ code: Unicode.Scalar) -> UInt8 {
        UInt8(ascii: code)
    }

    /// amqp_pool_alloc returns 8-byte aligned memory, enough for every rabbitmq-c struct.
    private func allocate(byteCount: Int) -> UnsafeMutableRawPointer {
        guard let memory = amqp_pool_alloc(pool, byteCount) else {
            fatalError("rabbitmq-c pool allocation of \(byteCount) bytes failed (out of memory)")
        }
        return memory
    }
}
