/// Base64 (RFC 4648): the standard alphabet with padding for envelopes in JSON, the URL alphabet
/// without padding for tokens. Pure.
public enum Base64 {
    private static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let url = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static func table(_ alphabet: [UInt8]) -> [UInt8] {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }
    private static let standardValues = table(standard)
    private static let urlValues = table(url)

    /// Standard base64 with padding.
    public static func encode(_ bytes: [UInt8]) -> String { encode(bytes, alphabet: standard, pad: true) }

    /// URL-safe base64 without padding.
    public static func encodeURL(_ bytes: [UInt8]) -> String { encode(bytes, alphabet: url, pad: false) }

    /// Decodes padded standard base64; nil for a wrong length, a character outside the
    /// alphabet, misplaced padding or non-zero padding bits.
    public static func decode<S: Collection<UInt8>>(_ text: S) -> [UInt8]? {
        if let decoded = text.withContiguousStorageIfAvailable({ decode($0) }) { return decoded }
        return Array(text).withUnsafeBufferPointer { decode($0) }
    }

    /// The same, reading the characters in place.
    public static func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        var n = text.count
        var pad = 0
        while pad < 2, n > 0, text[n - 1] == UInt8(ascii: "=") { n -= 1; pad += 1 }
        guard n % 4 != 1 else { return nil }
        if pad > 0, n % 4 != 4 - pad { return nil }
        return decode(UnsafeBufferPointer(rebasing: text[..<n]), values: standardValues)
    }

    /// Decodes URL-safe base64 without padding; nil for anything else.
    public static func decodeURL(_ text: String) -> [UInt8]? {
        let body = Array(text.utf8)
        guard body.count % 4 != 1 else { return nil }
        return body.withUnsafeBufferPointer { decode($0, values: urlValues) }
    }

    /// Standard base64 with padding, appended to `out`.
    public static func appendEncoded(_ bytes: [UInt8], to out: inout [UInt8]) {
        append(bytes, alphabet: standard, pad: true, to: &out)
    }

    private static func encode(_ bytes: [UInt8], alphabet: [UInt8], pad: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        append(bytes, alphabet: alphabet, pad: pad, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func append(_ bytes: [UInt8], alphabet: [UInt8], pad: Bool, to out: inout [UInt8]) {
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(n >> 18 & 63)]); out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)]); out.append(alphabet[Int(n & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest > 0 {
            var n = UInt32(bytes[i]) << 16
            if rest == 2 { n |= UInt32(bytes[i + 1]) << 8 }
            out.append(alphabet[Int(n >> 18 & 63)]); out.append(alphabet[Int(n >> 12 & 63)])
            if rest == 2 { out.append(alphabet[Int(n >> 6 & 63)]) } else if pad { out.append(UInt8(ascii: "=")) }
            if pad { out.append(UInt8(ascii: "=")) }
        }
    }

    /// Unpadded groups: a 2- or 3-character tail carries 1 or 2 bytes, whose unused bits must
    /// be zero (so each byte string has exactly one text form). Whole groups are decoded four
    /// characters at a time.
    private static func decode(_ c: UnsafeBufferPointer<UInt8>, values: [UInt8]) -> [UInt8]? {
        let n = c.count
        let tail = n % 4
        guard tail != 1 else { return nil }
        let size = n / 4 * 3 + (tail == 0 ? 0 : tail - 1)
        var ok = true
        let out = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = 0
            values.withUnsafeBufferPointer { v in
                var i = 0, o = 0
                while i + 4 <= n {
                    let a = v[Int(c[i])], b = v[Int(c[i + 1])], d2 = v[Int(c[i + 2])], d3 = v[Int(c[i + 3])]
                    // Every value is below 64; 0xFF marks a character outside the alphabet.
                    guard (a | b | d2 | d3) & 0xC0 == 0 else { ok = false; return }
                    let word = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(d2) << 6 | UInt32(d3)
                    buffer[o] = UInt8(truncatingIfNeeded: word >> 16)
                    buffer[o + 1] = UInt8(truncatingIfNeeded: word >> 8)
                    buffer[o + 2] = UInt8(truncatingIfNeeded: word)
                    i += 4
                    o += 3
                }
                if tail > 0 {
                    let a = v[Int(c[i])], b = v[Int(c[i + 1])], d2 = tail == 3 ? v[Int(c[i + 2])] : 0
                    guard (a | b | d2) & 0xC0 == 0 else { ok = false; return }
                    let word = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(d2) << 6
                    // The bits past the last whole byte must be zero.
                    guard word & (tail == 2 ? 0xFFFF : 0xFF) == 0 else { ok = false; return }
                    buffer[o] = UInt8(truncatingIfNeeded: word >> 16)
                    if tail == 3 { buffer[o + 1] = UInt8(truncatingIfNeeded: word >> 8) }
                }
            }
            count = ok ? size : 0
        }
        return ok ? out : nil
    }
}
