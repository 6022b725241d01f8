import FerryModel
import Glibc

/// Reads the frames of one segment or snapshot file from a byte offset, a window at a time, so
/// memory stays bounded however large the file is.
///
/// A file is *complete* when it holds its header's body length; a shorter one is still arriving
/// (a torn tail): the reader returns what is complete and the offset to resume at. A file of
/// full size that is not filled in yet (a sync tool that preallocates it, zero bytes, and
/// writes the data later, in place) is still arriving too: zero bytes where a frame (or the
/// file header) should be are waited for like a torn tail, and read again on the next scan
/// (see `unfilled`). A file header that does not read, in a file changed within the last
/// `settleSeconds`, is waited for too: a tool that writes into the file in place may be half-way
/// through it. Only damaged frames, and headers that stay bad, are reported and skipped.
enum FolderFileReader {
    /// How long a file whose header does not read may still be being written in place.
    static let settleSeconds = 30

    /// How far a scan got.
    enum Outcome: Sendable, Equatable {
        /// The file is not there (any more).
        case gone
        /// The file header is unusable (the reason names the file); nothing in it can be read.
        case badHeader(String)
        /// Something other than a regular file is under the name (the reason says so): not read,
        /// and not a file yet.
        case notAFile(String)
        /// Frames before `offset` are consumed; `finished`: the whole body was.
        case progressed(offset: UInt64, finished: Bool)
    }

    /// What the header must say; nil accepts any kind or seq (a conflict copy).
    struct Expectation {
        var kind: FolderFileHeader.Kind?
        var owner: OwnerID
        var device: NodeID
        var seq: UInt64?
    }

    /// The most bytes read at once: one largest frame fits with room to spare.
    static let windowBytes = 2 * (Frame.maxPayloadBytes + Frame.headerSize)

    /// Scans `path` from `offset` (0: the start), calling `visit` with each envelope in order
    /// until it returns false (stop after that frame) or the readable bytes end.
    static func scan(path: String, label: String, from offset: UInt64, expect: Expectation,
                     visit: (Envelope) -> Bool, unreadable: (String) -> Void) throws(FolderIOError) -> Outcome {
        let opened: Int32?
        do {
            opened = try FolderIO.openForReading(path)
        } catch where error.code == FolderIOError.notARegularFile {
            return .notAFile("\(label): not a regular file (a directory, FIFO, device or socket under a Ferry file's name); remove it")
        }
        guard let fd = opened else { return .gone }
        defer { close(fd) }
        let (size, modified) = try FolderIO.sizeAndModified(fd, path: path)
        let headerBytes = try FolderIO.read(fd, path: path, at: 0, count: FolderFileHeader.encodedSize)
        let header: FolderFileHeader
        do {
            header = try FolderFileHeader.decode(headerBytes[...])
        } catch {
            if case .truncated = error { return .progressed(offset: offset, finished: false) }
            // A header not filled in yet: it ends in zeros, and so does what follows it.
            let after = try FolderIO.read(fd, path: path, at: FolderFileHeader.encodedSize, count: 4)
            if headerBytes.last == 0 && after.allSatisfy({ $0 == 0 }) { return .progressed(offset: offset, finished: false) }
            // Caught half-way through being written in place: read again while it may still change.
            if time(nil) - modified < settleSeconds { return .progressed(offset: offset, finished: false) }
            return .badHeader("\(label): \(error)")
        }
        if let problem = mismatch(header, expect) { return .badHeader("\(label): \(problem)") }
        let end = UInt64(FolderFileHeader.encodedSize) + header.bodyLength
        let available = min(UInt64(size), end)
        let complete = UInt64(size) >= end
        var pos = max(offset, UInt64(FolderFileHeader.encodedSize))
        while pos < available {
            let count = Int(min(available - pos, UInt64(windowBytes)))
            let window = try FolderIO.read(fd, path: path, at: Int(pos), count: count)
            guard window.count == count else { break }  // shrank under us: retry on the next pull
            let final = complete && pos + UInt64(count) == end
            var i = 0
            var refill = false
            while i < window.count && !refill {
                switch Frame.read(window, at: i, final: final) {
                case .frame(let payload, _) where payload.isEmpty:
                    // "FRM1" and zeros (a length and checksum of 0): never written, not filled in yet.
                    return .progressed(offset: pos + UInt64(i), finished: false)
                case .frame(let payload, let next):
                    let at = pos + UInt64(i)
                    i = next
                    do {
                        let envelope = try Envelope.decode(window[payload])
                        if envelope.header.owner != expect.owner {
                            unreadable("\(label) at byte \(at): the envelope belongs to owner \(envelope.header.owner), not \(expect.owner)")
                        } else if !visit(envelope) {
                            return .progressed(offset: pos + UInt64(i), finished: pos + UInt64(i) >= end)
                        }
                    } catch {
                        unreadable("\(label) at byte \(at): \(error)")
                    }
                case .incomplete:
                    // Not at the end of the data yet: read a new window starting at this frame;
                    // at the end of a file still arriving: wait for the rest.
                    refill = true
                    if pos + UInt64(window.count) >= available { return .progressed(offset: pos + UInt64(i), finished: false) }
                case .corrupt(_, _) where unfilled(window[...], at: i):
                    // Zeros where the frame should be: the sync tool has not written it yet.
                    return .progressed(offset: pos + UInt64(i), finished: false)
                case .corrupt(let reason, let resumeAt):
                    // The resync point is at most 3 bytes from the window's end when no magic
                    // follows; a final window's tail is then skipped as part of the damage.
                    unreadable("\(label) at byte \(pos + UInt64(i)): \(reason)")
                    i = final && resumeAt + Frame.headerSize > window.count ? window.count : resumeAt
                }
            }
            pos += UInt64(i)
        }
        return .progressed(offset: pos, finished: complete && pos >= end)
    }

    /// The shortest run of zero bytes inside a frame taken as a region not filled in yet: a
    /// frame's payload is a sealed envelope, whose bytes look random, so a run this long does not
    /// occur in one.
    static let unfilledRun = 32

    /// Whether the frame that `Frame.read` found damaged at `offset` of `bytes` is a region a
    /// sync tool has not filled in yet (zeros), to be waited for instead of skipped. Pure. True
    /// when the rest of the frame magic, after as much of it as is right, is zero (to the end
    /// of `bytes` if sooner); or, for a frame with its whole header, when its length is 0, or
    /// its bytes hold `unfilledRun` zeros in a row, or it ends in a zero byte and the (up to 4)
    /// bytes after it are zero too. Any other damage (bytes that are not zero, a length over
    /// the limit) is not. So a hole of at least `2 * unfilledRun` zero bytes anywhere (a sync
    /// tool fills files in blocks of kilobytes) is always waited for.
    static func unfilled(_ bytes: ArraySlice<UInt8>, at offset: Int) -> Bool {
        let end = bytes.endIndex
        guard offset < end else { return false }
        let magic = [UInt8(Frame.magic >> 24), UInt8(Frame.magic >> 16 & 0xFF), UInt8(Frame.magic >> 8 & 0xFF), UInt8(Frame.magic & 0xFF)]
        var right = 0
        while right < 4 && offset + right < end && bytes[offset + right] == magic[right] { right += 1 }
        let headerEnd = min(offset + Frame.headerSize, end)
        if right < 4 {
            return bytes[(offset + right)..<min(offset + 4, end)].allSatisfy { $0 == 0 }
        }
        guard headerEnd == offset + Frame.headerSize else { return false }
        let length = Int(BigEndian.uint32(bytes, at: offset + 4))
        if length == 0 { return true }  // never written: a payload is an envelope
        guard length <= Frame.maxPayloadBytes, offset + Frame.headerSize + length <= end else { return false }
        let frameEnd = offset + Frame.headerSize + length
        var run = 0
        for k in offset..<frameEnd {
            run = bytes[k] == 0 ? run + 1 : 0
            if run >= unfilledRun { return true }
        }
        return frameEnd > offset + Frame.headerSize && bytes[frameEnd - 1] == 0
            && bytes[frameEnd..<min(frameEnd + 4, end)].allSatisfy { $0 == 0 }
    }

    private static func mismatch(_ h: FolderFileHeader, _ e: Expectation) -> String? {
        if let kind = e.kind, h.kind != kind { return "the file header says \(h.kind), the name says \(kind)" }
        if h.owner != e.owner { return "the file belongs to owner \(h.owner), not \(e.owner)" }
        if h.device != e.device { return "the file was written by device \(h.device), not \(e.device) whose directory holds it" }
        if let seq = e.seq, h.seq != seq { return "the file header says seq \(h.seq), the name says \(seq)" }
        return nil
    }
}
