import FerryModel
import FerryStore
import Foundation

/// Writes a sealed bundle of every space of the store: each record's current version
/// (tombstones too) sealed under its space's owner keys, with the attachments they reference,
/// sealed too. The file is written under a temporary name, synced, then renamed into place.
public struct BundleExporter: Sendable {
    public struct Summary: Sendable {
        public var spaces = 0
        public var records = 0
        public var attachments = 0
        /// Attachments records of the bundle reference that are not in it: their bytes were
        /// not on this device (not arrived yet, or found gone or damaged here and set aside).
        public var attachmentsLeftOut = 0
        public var bytes: Int64 = 0
    }

    private let store: Store
    private let keyring: OwnerKeyring

    public init(store: Store, keyring: OwnerKeyring) {
        self.store = store
        self.keyring = keyring
    }

    public func export(to path: String) throws(BundleError) -> Summary {
        // A name of its own, created new: never a file (or link) someone put there, so the
        // bundle cannot be written through it into another file; concurrent exports to one
        // path do not share it.
        let temporary = path + ".ferry-partial-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .io(path: temporary, operation: "create", errno: errno) }
        var summary = Summary()
        do throws(BundleError) {
            var out = BundleFormat.header
            for space in store.spaces() {
                let keys: OwnerKeys
                do { keys = try keyring.keys(for: space.name) } catch { throw .store("\(error)") }
                let sealer = EnvelopeSealer(keys: keys, device: store.nodeID)
                let blobs = BlobSealer(keys: keys)
                var written = Set<String>(), leftOut = Set<String>()
                var since: Int64 = 0
                summary.spaces += 1
                while true {
                    let page: Store.ChangePage
                    do { page = try store.changes(since: since, spaces: [space.name], limit: 500) } catch { throw .store("\(error)") }
                    for record in page.records {
                        for sha in record.attachments where !written.contains(sha) && !leftOut.contains(sha) {
                            guard let source = store.attachmentPath(sha),
                                  try writeBlob(sha: sha, from: source, keys: keys, sealer: blobs, fd: fd, path: temporary, out: &out) else {
                                leftOut.insert(sha)
                                summary.attachmentsLeftOut += 1
                                continue
                            }
                            written.insert(sha)
                            summary.attachments += 1
                        }
                        var payload: [UInt8] = [BundleFormat.envelopeKind]
                        sealer.seal(record.version).append(to: &payload)
                        Frame.append(payload, to: &out)
                        summary.records += 1
                        if out.count >= 1 << 20 { try flush(&out, fd: fd, path: temporary) }
                    }
                    if page.through <= since { break }
                    since = page.through
                }
            }
            var end: [UInt8] = [BundleFormat.endKind]
            BigEndian.append(UInt64(summary.records), to: &end)
            BigEndian.append(UInt64(summary.attachments), to: &end)
            Frame.append(end, to: &out)
            try flush(&out, fd: fd, path: temporary)
            guard fsync(fd) == 0 else { throw .io(path: temporary, operation: "sync", errno: errno) }
            var info = stat()
            if fstat(fd, &info) == 0 { summary.bytes = Int64(info.st_size) }
            close(fd)
            guard rename(temporary, path) == 0 else { throw .io(path: path, operation: "rename into place", errno: errno) }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        return summary
    }

    /// Seals attachment `sha` (its bytes at `source`) into the bundle's blob frames. Returns
    /// false, writing nothing, when this device's copy no longer hashes to `sha` (changed or cut
    /// short outside ferryd): it is set aside (`Store.setAttachmentAside`) and left out.
    private func writeBlob(sha: String, from source: String, keys: OwnerKeys, sealer: BlobSealer, fd: Int32, path: String,
                           out: inout [UInt8]) throws(BundleError) -> Bool {
        let sealed = path + ".blob-\(UInt64.random(in: 0...UInt64.max))"
        defer { unlink(sealed) }
        do throws(BlobSealError) {
            try sealer.seal(file: source, to: sealed, expectedSHA256: sha)
        } catch {
            guard case .contentMismatch = error else { throw .store("sealing attachment \(sha.prefix(12)): \(error)") }
            do { try store.setAttachmentAside(sha) } catch { throw .store("\(error)") }
            return false
        }
        let input = open(sealed, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw .io(path: sealed, operation: "open", errno: errno) }
        defer { close(input) }
        let key = Array(keys.blobKey(sha256: sha).utf8)
        var buffer = [UInt8](repeating: 0, count: BundleFormat.blobPieceBytes)
        var piece = [UInt8](repeating: 0, count: 0)
        // Read one piece ahead, so the last one is marked.
        func readPiece() throws(BundleError) -> [UInt8] {
            var filled = 0
            while filled < buffer.count {
                let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress! + filled, $0.count - filled) }
                if n < 0 { if errno == EINTR { continue }; throw .io(path: sealed, operation: "read", errno: errno) }
                if n == 0 { break }
                filled += n
            }
            return Array(buffer[..<filled])
        }
        piece = try readPiece()
        while true {
            let next = piece.count == BundleFormat.blobPieceBytes ? try readPiece() : []
            var payload: [UInt8] = [BundleFormat.blobKind]
            keys.owner.append(to: &payload)
            payload += key
            payload.append(next.isEmpty ? 1 : 0)
            payload += piece
            Frame.append(payload, to: &out)
            try flush(&out, fd: fd, path: path)
            if next.isEmpty { break }
            piece = next
        }
        return true
    }

    private func flush(_ out: inout [UInt8], fd: Int32, path: String) throws(BundleError) {
        var offset = 0
        while offset < out.count {
            let n = out.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 { if errno == EINTR { continue }; throw .io(path: path, operation: "write", errno: errno) }
            offset += n
        }
        out.removeAll(keepingCapacity: true)
    }
}
