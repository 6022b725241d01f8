import FerryModel

/// A stamp as 18 bytes whose bytewise order is the stamp order `(millis, counter, node)`:
/// millis with its sign bit flipped, then counter and node, all big-endian.
public enum StampKey {
    public static func make(_ stamp: Stamp) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(18)
        let m = UInt64(bitPattern: stamp.millis) ^ (1 << 63)
        for s in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: m >> UInt64(s))) }
        out.append(UInt8(stamp.counter >> 8)); out.append(UInt8(stamp.counter & 0xFF))
        for s in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: stamp.node.value >> UInt64(s))) }
        return out
    }
}
