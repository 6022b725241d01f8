/// One length-prefixed, checksummed record in a folder segment, a folder snapshot or an export
/// bundle.
///
/// Binary form, integers big-endian: `magic u32 (0x46524D31, "FRM1") | length u32 |
/// CRC-32 u32 of the payload | payload (length bytes)`. The payload is an `Envelope.encoded`.
///
/// `read` is pure and size-capped: given bytes and an offset it returns one complete frame, or
/// says the bytes stop inside one (`incomplete`: a torn tail, wait for more), or that the bytes
/// at the offset are not a valid frame (`corrupt`: report it and go on at `resumeAt`, the next
/// place the magic occurs).
public enum Frame {
    /// The first four bytes of every frame ("FRM1").
    public static let magic: UInt32 = 0x4652_4D31
    /// The bytes before the payload.
    public static let headerSize = 12
    /// The largest payload a reader accepts: one binary envelope at its largest.
    public static let maxPayloadBytes = Envelope.maxEncodedBytes

    /// What `read` found at an offset.
    public enum ReadResult: Sendable, Equatable {
        /// A frame whose checksum matches; its payload is `bytes[payload]`; the next frame
        /// starts at `next`.
        case frame(payload: Range<Int>, next: Int)
        /// The bytes end inside a frame that looks valid so far: read again when more arrived.
        case incomplete
        /// The bytes at the offset are not a valid frame, for `reason`. Reading may go on at
        /// `resumeAt` (> the offset): the next occurrence of the magic, or the last bytes that
        /// could still begin one.
        case corrupt(reason: String, resumeAt: Int)
    }

    /// The frame holding `payload`. `payload` must be at most `maxPayloadBytes` long.
    public static func encode(_ payload: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(headerSize + payload.count)
        append(payload, to: &out)
        return out
    }

    /// The bytes of the frame holding `envelope`.
    public static func size(of envelope: Envelope) -> Int {
        headerSize + envelope.encodedSize
    }

    /// Appends the frame holding `payload` to `out`.
    public static func append(_ payload: [UInt8], to out: inout [UInt8]) {
        append(length: payload.count, to: &out) { $0 += payload }
    }

    /// Appends the frame holding `envelope.encoded`, encoding the envelope in place: the same
    /// bytes as `append(envelope.encoded, to:)`, without an array of its own.
    public static func append(_ envelope: Envelope, to out: inout [UInt8]) {
        append(length: envelope.encodedSize, to: &out) { envelope.append(to: &$0) }
    }

    /// Appends a frame header for a payload of `length` bytes, the payload `write` appends, and
    /// then the payload's checksum into the header.
    private static func append(length: Int, to out: inout [UInt8], _ write: (inout [UInt8]) -> Void) {
        precondition(length <= maxPayloadBytes, "a frame's payload is at most \(maxPayloadBytes) bytes")
        BigEndian.append(magic, to: &out)
        BigEndian.append(UInt32(length), to: &out)
        let checksumAt = out.count
        BigEndian.append(UInt32(0), to: &out)
        write(&out)
        let checksum = out.withUnsafeBufferPointer { CRC32.checksum(UnsafeBufferPointer(rebasing: $0[(checksumAt + 4)...])) }
        for k in 0..<4 { out[checksumAt + k] = UInt8(truncatingIfNeeded: checksum >> (24 - 8 * k)) }
    }

    /// Reads the frame that starts at `offset` (an index of `bytes`).
    ///
    /// - Parameters:
    ///   - final: no more bytes will follow `bytes` (the whole file is there), so a frame that
    ///     runs past the end is `corrupt` (its length field was damaged), not `incomplete`.
    ///   - maxPayload: the largest length accepted; a larger one is `corrupt`.
    public static func read(_ bytes: ArraySlice<UInt8>, at offset: Int, final: Bool = false,
                            maxPayload: Int = maxPayloadBytes) -> ReadResult {
        precondition(offset >= bytes.startIndex && offset <= bytes.endIndex, "the offset is outside the bytes")
        let available = bytes.endIndex - offset
        // Check the magic as far as it is there, so garbage is recognised before a full header.
        let magicBytes = [UInt8(magic >> 24), UInt8(magic >> 16 & 0xFF), UInt8(magic >> 8 & 0xFF), UInt8(magic & 0xFF)]
        for k in 0..<min(4, available) where bytes[offset + k] != magicBytes[k] {
            return corrupt("no frame magic at this offset", in: bytes, after: offset)
        }
        guard available >= headerSize else {
            return final ? corrupt("the bytes end inside a frame header", in: bytes, after: offset) : .incomplete
        }
        let length = Int(BigEndian.uint32(bytes, at: offset + 4))
        guard length <= maxPayload else {
            return corrupt("the frame length \(length) exceeds the limit of \(maxPayload)", in: bytes, after: offset)
        }
        guard available >= headerSize + length else {
            return final ? corrupt("the frame of \(length) bytes runs past the end of the data", in: bytes, after: offset) : .incomplete
        }
        let payload = (offset + headerSize)..<(offset + headerSize + length)
        guard CRC32.checksum(bytes[payload]) == BigEndian.uint32(bytes, at: offset + 8) else {
            return corrupt("the frame's checksum does not match (corrupted bytes)", in: bytes, after: offset)
        }
        return .frame(payload: payload, next: payload.upperBound)
    }

    public static func read(_ bytes: [UInt8], at offset: Int, final: Bool = false, maxPayload: Int = maxPayloadBytes) -> ReadResult {
        read(bytes[...], at: offset, final: final, maxPayload: maxPayload)
    }

    /// The next index after `offset` where a frame may start: the next full occurrence of the
    /// magic, else the start of the last three bytes (they may begin a magic still to arrive),
    /// and never before `offset + 1`.
    public static func resync(_ bytes: ArraySlice<UInt8>, after offset: Int) -> Int {
        let m0 = UInt8(magic >> 24), m1 = UInt8(magic >> 16 & 0xFF), m2 = UInt8(magic >> 8 & 0xFF), m3 = UInt8(magic & 0xFF)
        var i = offset + 1
        while i + 4 <= bytes.endIndex {
            if bytes[i] == m0 && bytes[i + 1] == m1 && bytes[i + 2] == m2 && bytes[i + 3] == m3 { return i }
            i += 1
        }
        // A partial magic may sit at the very end; only a prefix of it can begin there.
        var j = max(offset + 1, bytes.endIndex - 3)
        while j < bytes.endIndex {
            let tail = Array(bytes[j...])
            if tail.elementsEqual([m0, m1, m2, m3].prefix(tail.count)) { return j }
            j += 1
        }
        return max(offset + 1, bytes.endIndex)
    }

    private static func corrupt(_ reason: String, in bytes: ArraySlice<UInt8>, after offset: Int) -> ReadResult {
        .corrupt(reason: reason, resumeAt: min(resync(bytes, after: offset), bytes.endIndex))
    }
}
