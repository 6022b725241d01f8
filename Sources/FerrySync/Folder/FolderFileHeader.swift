import FerryModel

/// The header at the start of every folder segment and snapshot file.
///
/// Binary form (52 bytes, integers big-endian), see docs/protocol.md "The folder transport":
/// `magic u32 ("FSEG" for a segment, "FSNP" for a snapshot) | version u8 (1) | 3 zero bytes |
///  owner 16 | device u64 | seq u64 | body length u64 | CRC-32 u32 of the 48 bytes before it`.
///
/// For a segment `seq` is its sequence number; for a snapshot it is the highest segment seq the
/// snapshot supersedes. The body (frames) is exactly `bodyLength` bytes, which tells a reader a
/// torn file (shorter: wait for the rest) from a damaged frame length (the file is complete).
public struct FolderFileHeader: Sendable, Hashable {
    /// Which of the two file kinds.
    public enum Kind: Sendable, Hashable {
        case segment
        case snapshot

        var magic: UInt32 {
            switch self {
            case .segment: 0x4653_4547  // "FSEG"
            case .snapshot: 0x4653_4E50  // "FSNP"
            }
        }
    }

    /// The format version this build writes and reads.
    public static let formatVersion: UInt8 = 1
    /// The size of the binary form.
    public static let encodedSize = 52

    public var kind: Kind
    public var owner: OwnerID
    public var device: NodeID
    public var seq: UInt64
    public var bodyLength: UInt64

    public init(kind: Kind, owner: OwnerID, device: NodeID, seq: UInt64, bodyLength: UInt64) {
        self.kind = kind
        self.owner = owner
        self.device = device
        self.seq = seq
        self.bodyLength = bodyLength
    }

    /// The start of a file's bytes: zeros where its header goes (`finish` writes it once the
    /// body's length is known), with room reserved for `bodyCapacity` bytes of body.
    static func fileStart(bodyCapacity: Int) -> [UInt8] {
        var file = [UInt8](repeating: 0, count: encodedSize)
        file.reserveCapacity(encodedSize + bodyCapacity)
        return file
    }

    /// Writes into the front of `file` (begun with `fileStart`) the header of a file of `kind`
    /// whose body is the rest of it.
    static func finish(_ file: inout [UInt8], kind: Kind, owner: OwnerID, device: NodeID, seq: UInt64) {
        let header = FolderFileHeader(kind: kind, owner: owner, device: device, seq: seq, bodyLength: UInt64(file.count - encodedSize))
        file.replaceSubrange(0..<encodedSize, with: header.encoded)
    }

    /// The binary form.
    public var encoded: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(Self.encodedSize)
        BigEndian.append(kind.magic, to: &out)
        out.append(Self.formatVersion)
        out.append(contentsOf: [0, 0, 0])
        owner.append(to: &out)
        BigEndian.append(device.value, to: &out)
        BigEndian.append(seq, to: &out)
        BigEndian.append(bodyLength, to: &out)
        BigEndian.append(CRC32.checksum(out), to: &out)
        return out
    }

    /// Reads the header from the start of `bytes`. Pure; checks the magic, version and checksum.
    /// Throws `.truncated` when fewer than `encodedSize` bytes are there (a file still arriving).
    public static func decode(_ bytes: ArraySlice<UInt8>) throws(EnvelopeError) -> FolderFileHeader {
        guard bytes.count >= encodedSize else { throw .truncated(needed: encodedSize, available: bytes.count) }
        let b = bytes.startIndex
        let kind: Kind
        switch BigEndian.uint32(bytes, at: b) {
        case Kind.segment.magic: kind = .segment
        case Kind.snapshot.magic: kind = .snapshot
        default: throw .malformed("not a Ferry folder file (unknown magic)")
        }
        guard bytes[b + 4] == formatVersion else { throw .unsupportedVersion(bytes[b + 4]) }
        guard CRC32.checksum(bytes[b..<(b + 48)]) == BigEndian.uint32(bytes, at: b + 48) else {
            throw .malformed("the file header's checksum does not match (corrupted bytes)")
        }
        guard bytes[b + 5] == 0, bytes[b + 6] == 0, bytes[b + 7] == 0 else { throw .malformed("reserved header bytes are not zero") }
        let bodyLength = BigEndian.uint64(bytes, at: b + 40)
        guard bodyLength <= UInt64(Int64.max / 2) else { throw .tooLarge(size: Int.max, limit: Int(Int64.max / 2)) }
        return FolderFileHeader(kind: kind, owner: ID128(bytes: bytes[(b + 8)..<(b + 24)]),
                                device: NodeID(BigEndian.uint64(bytes, at: b + 24)),
                                seq: BigEndian.uint64(bytes, at: b + 32), bodyLength: bodyLength)
    }
}
