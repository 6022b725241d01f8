import FerryCrypto
import FerryModel

/// Seals attachment files into blobs a host can store without learning their content, and opens
/// them again, streaming in 64 KiB chunks (memory stays bounded whatever the file size).
///
/// Sealed form: `"FERRYBLB" | version u8 (1) | secretstream header (24) | chunks`. Every chunk but
/// the last holds exactly 64 KiB of plaintext (65,553 bytes sealed); the last holds 0 to 64 KiB
/// and carries the FINAL tag, so a truncated blob never opens. Chunks have the 9-byte prefix as
/// associated data; the final chunk has the prefix followed by the blob key (64 ASCII hex
/// digits), which binds the whole stream to the attachment's SHA-256: a blob stored under
/// another key of the same owner does not open. Keys: the owner's blob-seal subkey.
public struct BlobSealer: Sendable {
    static let magic = Array("FERRYBLB".utf8)
    /// The format version this build writes and reads.
    public static let formatVersion: UInt8 = 1
    /// Plaintext bytes per chunk.
    public static let chunkBytes = 64 << 10
    static let prefix = magic + [formatVersion]
    static let headerBytes = prefix.count + SecretStream.headerBytes

    let keys: OwnerKeys

    /// A sealer for `keys`' owner.
    public init(keys: OwnerKeys) {
        self.keys = keys
    }

    /// Reads the plaintext attachment file at `source` and writes the sealed blob to
    /// `destination` (replacing it), through a temporary file renamed into place, so
    /// `destination` is either absent, its old self, or the complete sealed blob. With
    /// `expectedSHA256` (the attachment's name), a file whose bytes do not hash to it (changed
    /// or cut short outside ferryd) is not sealed: `.contentMismatch`, and nothing is left at
    /// `destination` by this call.
    /// - Throws: `BlobSealError.io` naming the failing call and file; `.contentMismatch`.
    public func seal(file source: String, to destination: String, expectedSHA256: String? = nil) throws(BlobSealError) {
        let input = try BlobFile.openForReading(source)
        let output = try BlobFile.createTemporary(near: destination)
        do throws(BlobSealError) {
            let pusher = SecretStream.Pusher(key: keys.blobSealKey)
            try output.writeAll(Self.prefix + pusher.header)
            var hasher = SHA256()
            var pending = [UInt8](repeating: 0, count: Self.chunkBytes)
            var next = [UInt8](repeating: 0, count: Self.chunkBytes)
            var pendingCount = try input.readFully(into: &pending)
            while true {
                // Read ahead: a chunk is final when nothing follows it.
                let nextCount = pendingCount == Self.chunkBytes ? try input.readFully(into: &next) : 0
                let chunk = pending.withUnsafeBytes { UnsafeRawBufferPointer(rebasing: $0[0..<pendingCount]) }
                hasher.update(chunk)
                if nextCount == 0 {
                    let sha = Hex.encode(hasher.finalize())
                    if let expectedSHA256, sha != expectedSHA256 {
                        throw .contentMismatch(path: source, expected: expectedSHA256, actual: sha)
                    }
                    try output.writeAll(pusher.push(chunk, associatedData: finalAssociatedData(sha256: sha), final: true))
                    break
                }
                try output.writeAll(pusher.push(chunk, associatedData: Self.prefix, final: false))
                swap(&pending, &next)
                pendingCount = nextCount
            }
            try output.commit(to: destination)
        } catch {
            output.discard()
            throw error
        }
    }

    /// Opens the sealed blob at `source` and writes its plaintext to `destination` (replacing
    /// it), through a temporary file renamed into place only when everything checks out: every
    /// chunk authenticates, the final chunk is there and binds the blob to `expectedSHA256`,
    /// nothing follows it, the plaintext is at most `maxBytes` and its SHA-256 is
    /// `expectedSHA256`. On any failure no file is left at `destination` by this call.
    /// - Throws: `BlobSealError`: `.invalidSHA256`, `.io`, `.notASealedBlob`,
    ///   `.unsupportedVersion`, `.truncated`, `.authenticationFailed`, `.trailingData`,
    ///   `.tooLarge`, `.contentMismatch`.
    public func open(file source: String, to destination: String, expectedSHA256: String, maxBytes: Int64) throws(BlobSealError) {
        guard Names.isSHA256Hex(expectedSHA256) else { throw .invalidSHA256(expectedSHA256) }
        let actual = try open(file: source, to: destination, finalKey: keys.blobKey(sha256: expectedSHA256), maxBytes: maxBytes) { actual in
            actual == expectedSHA256
        }
        guard actual == expectedSHA256 else { throw .contentMismatch(path: source, expected: expectedSHA256, actual: actual) }
    }

    /// Opens a sealed blob known by its key alone (as an export bundle names it), as
    /// `open(file:to:expectedSHA256:maxBytes:)` does, and returns the plaintext's SHA-256, which
    /// is the one `blobKey` names: the final chunk binds the blob to that key, and the key is
    /// a keyed hash of the SHA-256.
    /// - Throws: as the other `open`, with `.contentMismatch` when the plaintext is not the
    ///   attachment the key names (bytes the sealing device had wrong).
    public func open(file source: String, to destination: String, blobKey: BlobKey, maxBytes: Int64) throws(BlobSealError) -> String {
        let actual = try open(file: source, to: destination, finalKey: blobKey, maxBytes: maxBytes) { actual in
            keys.blobKey(sha256: actual) == blobKey
        }
        guard keys.blobKey(sha256: actual) == blobKey else {
            throw .contentMismatch(path: source, expected: "the attachment its key \(blobKey.prefix(12))… names", actual: actual)
        }
        return actual
    }

    /// Opens `source` with `finalKey` bound to its final chunk; `matches` decides from the
    /// plaintext's SHA-256 whether it is put in place. Returns that SHA-256.
    private func open(file source: String, to destination: String, finalKey: BlobKey, maxBytes: Int64,
                      matches: (String) -> Bool) throws(BlobSealError) -> String {
        let input = try BlobFile.openForReading(source)
        var header = [UInt8](repeating: 0, count: Self.headerBytes)
        let headerCount = try input.readFully(into: &header)
        guard headerCount >= Self.magic.count, header.starts(with: Self.magic) else { throw .notASealedBlob(path: source) }
        guard headerCount > Self.magic.count else { throw .truncated(path: source) }
        guard header[Self.magic.count] == Self.formatVersion else {
            throw .unsupportedVersion(path: source, version: header[Self.magic.count])
        }
        guard headerCount == Self.headerBytes else { throw .truncated(path: source) }
        let puller: SecretStream.Puller
        do {
            puller = try SecretStream.Puller(key: keys.blobSealKey, header: Array(header[Self.prefix.count...]))
        } catch {
            throw .authenticationFailed(path: source)
        }
        let finalData = Self.prefix + Array(finalKey.utf8)

        let output = try BlobFile.createTemporary(near: destination)
        do throws(BlobSealError) {
            var hasher = SHA256()
            var size: Int64 = 0
            let sealedChunk = Self.chunkBytes + SecretStream.overhead
            var pending = [UInt8](repeating: 0, count: sealedChunk)
            var next = [UInt8](repeating: 0, count: sealedChunk)
            var pendingCount = try input.readFully(into: &pending)
            guard pendingCount > 0 else { throw .truncated(path: source) }
            while true {
                let nextCount = pendingCount == sealedChunk ? try input.readFully(into: &next) : 0
                let lastInFile = nextCount == 0
                let result: Result<(message: [UInt8], final: Bool), BlobSealError> = pending.withUnsafeBytes { buffer in
                    let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<pendingCount])
                    do throws(CryptoError) {
                        return .success(try puller.pull(chunk, associatedData: lastInFile ? finalData : Self.prefix))
                    } catch {
                        // A blob cut at a chunk boundary ends with a non-final chunk: say so.
                        if lastInFile, let plain = try? puller.pull(chunk, associatedData: Self.prefix), !plain.final {
                            return .failure(.truncated(path: source))
                        }
                        return .failure(.authenticationFailed(path: source))
                    }
                }
                let (message, final) = try result.get()
                if final != lastInFile { throw final ? .trailingData(path: source) : .truncated(path: source) }
                size += Int64(message.count)
                guard size <= maxBytes else { throw .tooLarge(path: source, limit: maxBytes) }
                hasher.update(message)
                try output.writeAll(message)
                if final { break }
                swap(&pending, &next)
                pendingCount = nextCount
            }
            let actual = Hex.encode(hasher.finalize())
            if matches(actual) { try output.commit(to: destination) } else { output.discard() }
            return actual
        } catch {
            output.discard()
            throw error
        }
    }

    private func finalAssociatedData(sha256: String) -> [UInt8] {
        Self.prefix + Array(keys.blobKey(sha256: sha256).utf8)
    }
}
