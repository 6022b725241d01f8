/// CRC-32 as used by zlib, PNG and Ethernet (IEEE 802.3: reflected polynomial 0xEDB88320,
/// initial value and final XOR 0xFFFFFFFF). `CRC32.checksum("123456789".utf8) == 0xCBF43926`.
///
/// Pure; the frame format of the folder transport and the export bundle use it. Contiguous
/// bytes go through slicing-by-8 (eight table lookups per 8 bytes).
public enum CRC32 {
    /// `tables[k][n]`: the CRC of byte `n` followed by `k` zero bytes.
    private static let tables: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 256 * 8)
        for n in 0..<256 {
            var c = UInt32(n)
            for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            t[n] = c
        }
        for n in 0..<256 {
            for k in 1..<8 { t[k * 256 + n] = (t[(k - 1) * 256 + n] >> 8) ^ t[Int(t[(k - 1) * 256 + n] & 0xFF)] }
        }
        return t
    }()

    /// The checksum of `bytes`.
    public static func checksum<C: Collection<UInt8>>(_ bytes: C) -> UInt32 {
        update(0, with: bytes)
    }

    /// Continues `crc` (a previous result, or 0 to start) over more bytes, so a checksum can be
    /// computed over pieces: `update(checksum(a), with: b) == checksum(a + b)`.
    public static func update<C: Collection<UInt8>>(_ crc: UInt32, with bytes: C) -> UInt32 {
        if let result = bytes.withContiguousStorageIfAvailable({ update(crc, buffer: UnsafeRawBufferPointer($0)) }) {
            return result
        }
        var c = ~crc
        tables.withUnsafeBufferPointer { t in
            for b in bytes { c = t[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        }
        return ~c
    }

    private static func update(_ crc: UInt32, buffer: UnsafeRawBufferPointer) -> UInt32 {
        var c = ~crc
        tables.withUnsafeBufferPointer { t in
            var i = 0
            let n = buffer.count
            while i + 8 <= n {
                let lo = c ^ (UInt32(buffer[i]) | UInt32(buffer[i + 1]) << 8 | UInt32(buffer[i + 2]) << 16 | UInt32(buffer[i + 3]) << 24)
                let hi = UInt32(buffer[i + 4]) | UInt32(buffer[i + 5]) << 8 | UInt32(buffer[i + 6]) << 16 | UInt32(buffer[i + 7]) << 24
                c = t[7 * 256 + Int(lo & 0xFF)] ^ t[6 * 256 + Int((lo >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((lo >> 16) & 0xFF)] ^ t[4 * 256 + Int(lo >> 24)]
                    ^ t[3 * 256 + Int(hi & 0xFF)] ^ t[2 * 256 + Int((hi >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((hi >> 16) & 0xFF)] ^ t[Int(hi >> 24)]
                i += 8
            }
            while i < n {
                c = t[Int((c ^ UInt32(buffer[i])) & 0xFF)] ^ (c >> 8)
                i += 1
            }
        }
        return ~c
    }
}
