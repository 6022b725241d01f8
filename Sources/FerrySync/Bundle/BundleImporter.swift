import FerryModel
import FerryStore
import Foundation

/// Merges a bundle written by `BundleExporter` into the store with the merge rules, as imported
/// changes (queued for every transport). The whole file is checked first (every frame's
/// checksum and the end frame), so a damaged or truncated bundle changes nothing. Envelopes of
/// an owner this device has no space for are skipped and named in the summary.
public struct BundleImporter: Sendable {
    public struct Summary: Sendable {
        public var applied = 0
        public var duplicates = 0
        public var lost = 0
        /// Envelopes that did not open or validate (a wrong key, tampering).
        public var refused = 0
        /// Owner ids of the bundle that no space here belongs to.
        public var skippedOwners: Set<String> = []
    }

    /// The largest bundle read.
    public static let maxBytes: Int64 = 64 << 30

    private let store: Store
    private let keyring: OwnerKeyring
    private let scratchDirectory: String

    public init(store: Store, keyring: OwnerKeyring, scratchDirectory: String) {
        self.store = store
        self.keyring = keyring
        self.scratchDirectory = scratchDirectory
    }

    public func importBundle(from path: String) throws(BundleError) -> Summary {
        mkdir(scratchDirectory, 0o700)
        var summary = Summary()
        var sealers: [OwnerID: (space: String, sealer: EnvelopeSealer, blobs: BlobSealer, keys: OwnerKeys)?] = [:]
        // Attachments opened in the first pass: blob key -> the plaintext file, or nil for one
        // that opened but cannot be taken (over the size limit, bytes other than its name).
        var opened: [BlobKey: String?] = [:]
        defer { for case let file? in opened.values { unlink(file) } }
        func owner(_ id: OwnerID) throws(BundleError) -> (space: String, sealer: EnvelopeSealer, blobs: BlobSealer, keys: OwnerKeys)? {
            if let known = sealers[id] { return known }
            let space: String?
            do { space = try keyring.space(ownedBy: id) } catch { throw .store("\(error)") }
            var entry: (String, EnvelopeSealer, BlobSealer, OwnerKeys)?
            if let space {
                do {
                    let keys = try keyring.keys(for: space)
                    entry = (space, EnvelopeSealer(keys: keys, device: store.nodeID), BlobSealer(keys: keys), keys)
                } catch { throw .store("\(error)") }
            } else {
                summary.skippedOwners.insert(id.description)
            }
            sealers[id] = entry
            return entry
        }

        // First pass: the whole file is checked before anything changes (every frame, the end
        // frame's counts), and every attachment blob of an owner here is opened: a piece taken
        // out of a blob (its neighbours' checksums are whole, and the counts do not see it)
        // makes the blob fail to authenticate, so the bundle is damaged and changes nothing.
        var openBlob: (key: String, owner: OwnerID, fd: Int32, path: String)?
        defer { if let b = openBlob { close(b.fd); unlink(b.path) } }
        try walk(path) { payload throws(BundleError) in
            guard payload.first == BundleFormat.blobKind else { return }
            guard payload.count >= 1 + 16 + 64 + 1 else { throw .damaged(path: path, reason: "a short blob frame") }
            let blobOwner = ID128(bytes: Array(payload[(payload.startIndex + 1)..<(payload.startIndex + 17)]))
            let key = String(decoding: payload[(payload.startIndex + 17)..<(payload.startIndex + 81)], as: UTF8.self)
            let last = payload[payload.startIndex + 81] & 1 == 1
            if openBlob == nil || openBlob!.key != key || openBlob!.owner != blobOwner {
                if let b = openBlob { close(b.fd); unlink(b.path) }
                let file = scratchDirectory + "/import-\(UInt64.random(in: 0...UInt64.max))"
                let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
                guard fd >= 0 else { throw .io(path: file, operation: "create", errno: errno) }
                openBlob = (key, blobOwner, fd, file)
            }
            let data = payload[(payload.startIndex + 82)...]
            var offset = data.startIndex
            while offset < data.endIndex {
                let n = data.withUnsafeBytes { write(openBlob!.fd, $0.baseAddress! + (offset - data.startIndex), data.endIndex - offset) }
                if n < 0 { if errno == EINTR { continue }; throw .io(path: openBlob!.path, operation: "write", errno: errno) }
                offset += n
            }
            guard last else { return }
            let sealed = openBlob!.path
            close(openBlob!.fd)
            openBlob = nil
            defer { unlink(sealed) }
            // An owner with no space here: its records are skipped, so are its blobs.
            guard let owner = try owner(blobOwner) else { return }
            if let earlier = opened.updateValue(nil, forKey: key), let file = earlier { unlink(file) }
            let plain = scratchDirectory + "/import-plain-\(UInt64.random(in: 0...UInt64.max))"
            do throws(BlobSealError) {
                _ = try owner.blobs.open(file: sealed, to: plain, blobKey: key, maxBytes: Int64(store.configuration.maxAttachmentBytes))
                opened[key] = plain
            } catch {
                switch error {
                case .tooLarge, .contentMismatch: break   // whole and authentic, but not to be taken: refused below
                default: throw .damaged(path: path, reason: "an attachment blob in it does not open (\(error.description))")
                }
            }
        }

        // Second pass: the records, each after the attachments it references.
        var pending: [String: [RecordVersion]] = [:]      // space -> versions to apply
        var pendingCount = 0
        func applyPending() throws(BundleError) {
            for (space, versions) in pending where !versions.isEmpty {
                let results: [ApplyResult]
                do { results = try store.applyRemote(space: space, versions, origin: .imported(source: (path as NSString).lastPathComponent), payloadsAreWellFormed: true) } catch {
                    throw .store("\(error)")
                }
                for r in results {
                    switch r {
                    case .applied: summary.applied += 1
                    case .duplicate: summary.duplicates += 1
                    case .lost: summary.lost += 1
                    case .rejected: summary.refused += 1
                    }
                }
            }
            pending = [:]
            pendingCount = 0
        }
        try walk(path) { payload throws(BundleError) in
            guard payload.first == BundleFormat.envelopeKind else { return }
            let envelope: Envelope
            do { envelope = try Envelope.decode(payload.dropFirst()) } catch {
                summary.refused += 1
                return
            }
            guard let owner = try owner(envelope.header.owner) else { return }
            let version: RecordVersion
            do { version = try owner.sealer.open(envelope, limits: store.configuration.limits) } catch {
                summary.refused += 1
                return
            }
            for sha in version.attachments where store.attachmentPath(sha) == nil {
                guard let entry = opened[owner.keys.blobKey(sha256: sha)] else { continue }
                guard let plain = entry else {
                    summary.refused += 1
                    continue
                }
                do { _ = try store.putAttachment(fromFile: plain, expectedSHA256: sha) } catch { summary.refused += 1 }
            }
            pending[owner.space, default: []].append(version)
            pendingCount += 1
            if pendingCount >= 400 { try applyPending() }
        }
        try applyPending()
        return summary
    }

    /// Calls `body` with every frame payload but the end frame, in order; checks the header,
    /// every frame, that the end frame comes last, and that the bundle holds as many records
    /// (envelope frames) and attachments (last pieces of blobs) as the end frame says, so a
    /// frame taken out (its neighbours' checksums are whole) is found too. Reads in bounded
    /// pieces.
    private func walk(_ path: String, _ body: (ArraySlice<UInt8>) throws(BundleError) -> Void) throws(BundleError) {
        // Not blocking in open (a FIFO would hold this thread until someone writes to it); only a
        // regular file is read.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .io(path: path, operation: "open", errno: errno) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .io(path: path, operation: "stat", errno: errno) }
        guard st.st_mode & S_IFMT == S_IFREG else { throw .notABundle(path: path, reason: "it is not a regular file") }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var buffer: [UInt8] = []
        var eof = false
        func fill(_ wanted: Int) throws(BundleError) {
            var chunk = [UInt8](repeating: 0, count: max(wanted, 1 << 20))
            while buffer.count < wanted && !eof {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                if n < 0 { if errno == EINTR { continue }; throw .io(path: path, operation: "read", errno: errno) }
                if n == 0 { eof = true } else { buffer += chunk[..<n] }
            }
        }
        try fill(BundleFormat.headerSize)
        guard buffer.count >= BundleFormat.headerSize, Array(buffer[0..<8]) == BundleFormat.magic else {
            throw .notABundle(path: path, reason: "it does not start with FERRYBND")
        }
        guard buffer[8] == BundleFormat.version else {
            throw .notABundle(path: path, reason: "format version \(buffer[8]); this ferryd reads version \(BundleFormat.version)")
        }
        var start = BundleFormat.headerSize
        var ended = false
        var records: UInt64 = 0, attachments: UInt64 = 0
        while true {
            if start >= 1 << 20 { buffer.removeFirst(start); start = 0 }
            try fill(start + Frame.headerSize)
            if start == buffer.count && eof { break }
            if ended { throw .damaged(path: path, reason: "data after the end frame") }
            var result = Frame.read(buffer[...], at: start, final: eof)
            if case .incomplete = result, buffer.count >= start + 8 {
                let length = Int(buffer[start + 4]) << 24 | Int(buffer[start + 5]) << 16 | Int(buffer[start + 6]) << 8 | Int(buffer[start + 7])
                try fill(start + Frame.headerSize + length)
                result = Frame.read(buffer[...], at: start, final: eof)
            }
            switch result {
            case .frame(let payload, let next):
                let bytes = buffer[payload]
                switch bytes.first {
                case BundleFormat.endKind:
                    guard bytes.count == 17 else { throw .damaged(path: path, reason: "its end frame is \(bytes.count) bytes, not 17") }
                    let said = (BigEndian.uint64(bytes, at: bytes.startIndex + 1), BigEndian.uint64(bytes, at: bytes.startIndex + 9))
                    guard said == (records, attachments) else {
                        throw .damaged(path: path, reason: "it holds \(records) record(s) and \(attachments) attachment(s), but its end says "
                            + "\(said.0) and \(said.1): frames were taken out or added")
                    }
                    ended = true
                case BundleFormat.envelopeKind:
                    records += 1
                    try body(bytes)
                case BundleFormat.blobKind:
                    if bytes.count > 81, bytes[bytes.startIndex + 81] & 1 == 1 { attachments += 1 }
                    try body(bytes)
                default:
                    try body(bytes)
                }
                start = next
            case .incomplete:
                throw .damaged(path: path, reason: "it ends inside a frame (truncated)")
            case .corrupt(let reason, _):
                throw .damaged(path: path, reason: reason)
            }
        }
        guard ended else { throw .damaged(path: path, reason: "it has no end frame (truncated)") }
    }
}
