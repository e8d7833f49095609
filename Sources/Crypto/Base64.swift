/// Decoding of standard padded base64 (RFC 4648 §4), the encoding of Apple Pay's binary token fields.
///
/// Reads the UTF-8 bytes of a string directly into the output array: going through Foundation
/// (`Data(base64Encoded:)` then `Array(data)`) costs a `Data` allocation, a copy and generic conversions, about 1% of
/// a token. Accepts what `Data(base64Encoded:)` accepts without options (the standard alphabet, a length that is a
/// multiple of four, no whitespace or line breaks, unused trailing bits ignored) except for padding, which must be
/// the one or two `=` a canonical encoding ends with (Foundation also decodes e.g. `AB=C` and `ABCD====`).
public enum Base64 {
    /// 6-bit value of each ASCII byte; 0xFF for bytes outside the alphabet (including `=`).
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(byte)] = UInt8(value)
        }
        return table
    }()

    /// The decoded bytes, or nil if `text` is not padded standard base64.
    public static func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let count = text.count
        guard count % 4 == 0 else { return nil }
        guard count > 0 else { return [] }
        let padding = text[count - 1] == UInt8(ascii: "=") ? (text[count - 2] == UInt8(ascii: "=") ? 2 : 1) : 0
        let outputCount = count / 4 * 3 - padding
        return decodeTable.withUnsafeBufferPointer { table -> [UInt8]? in
            var valid = true
            let output = [UInt8](unsafeUninitializedCapacity: outputCount) { buffer, initialized in
                var input = 0
                var out = 0
                // Full quads (the last one is handled below when padded).
                let fullEnd = padding == 0 ? count : count - 4
                while input < fullEnd {
                    let a = table[Int(text[input])], b = table[Int(text[input + 1])]
                    let c = table[Int(text[input + 2])], d = table[Int(text[input + 3])]
                    guard (a | b | c | d) & 0xC0 == 0 else {
                        valid = false
                        break
                    }
                    let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    buffer[out] = UInt8(truncatingIfNeeded: group >> 16)
                    buffer[out + 1] = UInt8(truncatingIfNeeded: group >> 8)
                    buffer[out + 2] = UInt8(truncatingIfNeeded: group)
                    input += 4
                    out += 3
                }
                if valid && padding > 0 {
                    let a = table[Int(text[input])], b = table[Int(text[input + 1])]
                    let c = padding == 2 ? 0 : table[Int(text[input + 2])]
                    if (a | b | c) & 0xC0 != 0 {
                        valid = false
                    } else {
                        let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6
                        buffer[out] = UInt8(truncatingIfNeeded: group >> 16)
                        out += 1
                        if padding == 1 {
                            buffer[out] = UInt8(truncatingIfNeeded: group >> 8)
                            out += 1
                        }
                    }
                }
                initialized = valid ? out : 0
            }
            return valid ? output : nil
        }
    }

    /// Decodes the UTF-8 of `text`.
    public static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode($0) }
    }
}
