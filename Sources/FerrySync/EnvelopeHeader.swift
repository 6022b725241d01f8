import FerryModel

/// The clear part of an envelope. A host (a relay, a shared folder) sees these fields and
/// nothing else; they are authenticated as the associated data of the sealed body, so changing
/// any of them makes the envelope fail to open.
///
/// Binary form (76 bytes, integers big-endian), see docs/protocol.md "Envelopes":
/// `version u8 | flags u8 (bit 0: deleted) | owner 16 | device u64 | event 16 |
///  stamp millis i64, counter u16, node u64 | stream 16`.
public struct EnvelopeHeader: Sendable, Hashable {
    /// The format version this build writes and reads.
    public static let formatVersion: UInt8 = 1
    /// The size of the binary form.
    public static let encodedSize = 76

    public var version: UInt8
    /// The owner whose log this envelope belongs to.
    public var owner: OwnerID
    /// The device that sealed the envelope (not necessarily the one that made the version).
    public var device: NodeID
    /// Unique per version: derived from the stream and stamp, so sealing the same version again
    /// gives the same event id and a host deduplicates it.
    public var event: EventID
    /// The version's stamp; a host compares these to keep the newest per stream.
    public var stamp: Stamp
    /// The version is a tombstone.
    public var deleted: Bool
    /// The record's pseudonymous id.
    public var stream: StreamID

    public init(version: UInt8 = EnvelopeHeader.formatVersion, owner: OwnerID, device: NodeID, event: EventID,
                stamp: Stamp, deleted: Bool, stream: StreamID) {
        self.version = version
        self.owner = owner
        self.device = device
        self.event = event
        self.stamp = stamp
        self.deleted = deleted
        self.stream = stream
    }

    /// The binary form (also the associated data of the sealed body).
    public var encoded: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(EnvelopeHeader.encodedSize)
        append(to: &out)
        return out
    }

    public func append(to out: inout [UInt8]) {
        out.append(version)
        out.append(deleted ? 1 : 0)
        owner.append(to: &out)
        BigEndian.append(device.value, to: &out)
        event.append(to: &out)
        BigEndian.append(UInt64(bitPattern: stamp.millis), to: &out)
        out.append(UInt8(stamp.counter >> 8)); out.append(UInt8(stamp.counter & 0xFF))
        BigEndian.append(stamp.node.value, to: &out)
        stream.append(to: &out)
    }

    /// Reads the binary form from the start of `bytes`. Pure; checks every field.
    public static func decode(_ bytes: ArraySlice<UInt8>) throws(EnvelopeError) -> EnvelopeHeader {
        guard bytes.count >= encodedSize else { throw .truncated(needed: encodedSize, available: bytes.count) }
        let b = bytes.startIndex
        let version = bytes[b]
        guard version == formatVersion else { throw .unsupportedVersion(version) }
        let flags = bytes[b + 1]
        guard flags & ~1 == 0 else { throw .malformed("unknown header flags \(flags)") }
        let owner = ID128(bytes: bytes[(b + 2)..<(b + 18)])
        let device = NodeID(BigEndian.uint64(bytes, at: b + 18))
        let event = ID128(bytes: bytes[(b + 26)..<(b + 42)])
        let millis = Int64(bitPattern: BigEndian.uint64(bytes, at: b + 42))
        guard Stamp.millisRange.contains(millis) else { throw .malformed("the stamp's time is out of range") }
        let counter = UInt16(bytes[b + 50]) << 8 | UInt16(bytes[b + 51])
        let node = NodeID(BigEndian.uint64(bytes, at: b + 52))
        let stream = ID128(bytes: bytes[(b + 60)..<(b + 76)])
        return EnvelopeHeader(version: version, owner: owner, device: device, event: event,
                              stamp: Stamp(millis: millis, counter: counter, node: node), deleted: flags & 1 == 1, stream: stream)
    }
}

/// Big-endian integer helpers for the binary formats.
enum BigEndian {
    /// One append of the value's bytes (not one per byte, each checking for room).
    static func append(_ v: UInt64, to out: inout [UInt8]) {
        withUnsafeBytes(of: v.bigEndian) { out.append(contentsOf: $0) }
    }

    static func append(_ v: UInt32, to out: inout [UInt8]) {
        withUnsafeBytes(of: v.bigEndian) { out.append(contentsOf: $0) }
    }

    static func uint64(_ bytes: ArraySlice<UInt8>, at i: Int) -> UInt64 {
        var v: UInt64 = 0
        for k in 0..<8 { v = v << 8 | UInt64(bytes[i + k]) }
        return v
    }

    static func uint32(_ bytes: ArraySlice<UInt8>, at i: Int) -> UInt32 {
        var v: UInt32 = 0
        for k in 0..<4 { v = v << 8 | UInt32(bytes[i + k]) }
        return v
    }
}
