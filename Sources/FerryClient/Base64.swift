/// Standard base64 (RFC 4648, with padding), as `PutAttachment` and `GetAttachment` carry
/// inline bytes.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// The padded base64 text of `bytes`.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            var n = UInt32(bytes[index]) << 16
            if rest == 2 { n |= UInt32(bytes[index + 1]) << 8 }
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(rest == 2 ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(UInt8(ascii: "="))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of padded base64 `text`, or nil when it is not valid base64 (wrong length,
    /// a character outside the alphabet, misplaced padding, or non-zero padding bits).
    public static func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(input.count / 4 * 3)
        var index = 0
        while index < input.count {
            let last = index + 4 == input.count
            var quad: (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
            var padding = 0
            for offset in 0..<4 {
                let byte = input[index + offset]
                var value: UInt32
                if byte == UInt8(ascii: "=") {
                    // Padding only in the last two places of the last quad, and only trailing.
                    guard last, offset >= 2 else { return nil }
                    padding += 1
                    value = 0
                } else {
                    guard padding == 0 else { return nil }
                    let decoded = values[Int(byte)]
                    guard decoded != 0xFF else { return nil }
                    value = UInt32(decoded)
                }
                switch offset {
                case 0: quad.0 = value
                case 1: quad.1 = value
                case 2: quad.2 = value
                default: quad.3 = value
                }
            }
            let n = quad.0 << 18 | quad.1 << 12 | quad.2 << 6 | quad.3
            out.append(UInt8(n >> 16 & 0xFF))
            if padding < 2 { out.append(UInt8(n >> 8 & 0xFF)) }
            if padding < 1 { out.append(UInt8(n & 0xFF)) }
            // The bits padding stands for must be zero, so every byte string has one encoding.
            if padding == 1 && n & 0xFF != 0 { return nil }
            if padding == 2 && n & 0xFFFF != 0 { return nil }
            index += 4
        }
        return out
    }
}
