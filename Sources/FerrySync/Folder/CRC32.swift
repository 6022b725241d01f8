/// CRC-32 as used by zlib, PNG and Ethernet (IEEE 802.3: reflected polynomial 0xEDB88320,
/// initial value and final XOR 0xFFFFFFFF). `CRC32.checksum("123456789".utf8) == 0xCBF43926`.
///
/// Pure; the frame format of the folder transport and the export bundle use it.
public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// The checksum of `bytes`.
    public static func checksum<C: Collection<UInt8>>(_ bytes: C) -> UInt32 {
        update(0, with: bytes)
    }

    /// Continues `crc` (a previous result, or 0 to start) over more bytes, so a checksum can be
    /// computed over pieces: `update(checksum(a), with: b) == checksum(a + b)`.
    public static func update<C: Collection<UInt8>>(_ crc: UInt32, with bytes: C) -> UInt32 {
        var c = ~crc
        table.withUnsafeBufferPointer { t in
            for b in bytes { c = t[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        }
        return ~c
    }
}
