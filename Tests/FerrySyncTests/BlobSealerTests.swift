import FerryCrypto
import FerryTestSupport
import Foundation
import Testing
@testable import FerrySync

@Suite struct BlobSealerTests {
    static let sealer = BlobSealer(keys: Fixtures.keys)

    static func write(_ bytes: [UInt8], to path: String) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
    }

    static func read(_ path: String) -> [UInt8] {
        [UInt8](FileManager.default.contents(atPath: path) ?? Data())
    }

    static func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        var out = [UInt8]()
        out.reserveCapacity(count + 8)
        while out.count < count { withUnsafeBytes(of: rng.next()) { out.append(contentsOf: $0) } }
        return Array(out.prefix(count))
    }

    /// Seals `plain` in `dir` and returns the sealed file's path and the plaintext's SHA-256.
    static func sealed(_ plain: [UInt8], in dir: SyncTempDir, sealer: BlobSealer = sealer) throws -> (path: String, sha: String) {
        write(plain, to: dir.path + "/plain")
        try sealer.seal(file: dir.path + "/plain", to: dir.path + "/sealed")
        return (dir.path + "/sealed", SHA256.hex(plain))
    }

    @Test(arguments: [0, 1, 1000, 65_535, 65_536, 65_537, 131_072, 3_000_000])
    func roundTrips(size: Int) throws {
        let dir = SyncTempDir("blob")
        let plain = Self.randomBytes(size, seed: UInt64(size))
        let (sealedPath, sha) = try Self.sealed(plain, in: dir)
        let chunks = max(1, (size + BlobSealer.chunkBytes - 1) / BlobSealer.chunkBytes)
        #expect(Self.read(sealedPath).count == 33 + size + chunks * 17)
        #expect(Self.read(sealedPath).starts(with: Array("FERRYBLB".utf8) + [1]))
        try Self.sealer.open(file: sealedPath, to: dir.path + "/out", expectedSHA256: sha, maxBytes: Int64(size))
        #expect(Self.read(dir.path + "/out") == plain)
        #expect(dir.names == ["out", "plain", "sealed"])
    }

    @Test func truncatedBlobsFailAndLeaveNoFile() throws {
        let dir = SyncTempDir("truncated")
        let plain = Self.randomBytes(3 * BlobSealer.chunkBytes + 100, seed: 1)
        let (sealedPath, sha) = try Self.sealed(plain, in: dir)
        let sealed = Self.read(sealedPath)
        let boundary = 33 + 2 * (BlobSealer.chunkBytes + 17)
        for cut in [0, 5, 8, 9, 20, 33, 34, 33 + BlobSealer.chunkBytes + 17, boundary, boundary + 1, sealed.count - 1] {
            Self.write(Array(sealed.prefix(cut)), to: dir.path + "/cut")
            #expect(throws: BlobSealError.self, "cut at \(cut)") {
                try Self.sealer.open(file: dir.path + "/cut", to: dir.path + "/out", expectedSHA256: sha, maxBytes: 1 << 30)
            }
            #expect(!FileManager.default.fileExists(atPath: dir.path + "/out"))
        }
        Self.write(Array(sealed.prefix(boundary)), to: dir.path + "/cut")
        #expect(throws: BlobSealError.truncated(path: dir.path + "/cut")) {
            try Self.sealer.open(file: dir.path + "/cut", to: dir.path + "/out", expectedSHA256: sha, maxBytes: 1 << 30)
        }
        Self.write(sealed + [0], to: dir.path + "/long")
        #expect(throws: BlobSealError.self) {
            try Self.sealer.open(file: dir.path + "/long", to: dir.path + "/out", expectedSHA256: sha, maxBytes: 1 << 30)
        }
        #expect(dir.names == ["cut", "long", "plain", "sealed"])
    }

    @Test func aBlobUnderAnotherKeyDoesNotOpen() throws {
        let dir = SyncTempDir("swap")
        let (pathA, _) = try Self.sealed(Array("attachment A".utf8), in: dir)
        try FileManager.default.moveItem(atPath: pathA, toPath: dir.path + "/a")
        let (_, shaB) = try Self.sealed(Array("attachment B".utf8), in: dir)
        // A host serves blob A where blob B was asked for.
        #expect(throws: BlobSealError.authenticationFailed(path: dir.path + "/a")) {
            try Self.sealer.open(file: dir.path + "/a", to: dir.path + "/out", expectedSHA256: shaB, maxBytes: 1 << 20)
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out"))
    }

    /// Known by its key alone (as an export bundle names it), a blob opens to the attachment
    /// the key names and gives its SHA-256; under another key it does not open.
    @Test func aBlobOpensByItsKey() throws {
        let dir = SyncTempDir("bykey")
        let (pathA, shaA) = try Self.sealed(Array("attachment A".utf8), in: dir)
        try FileManager.default.moveItem(atPath: pathA, toPath: dir.path + "/a")
        let (_, shaB) = try Self.sealed(Array("attachment B".utf8), in: dir)
        #expect(try Self.sealer.open(file: dir.path + "/a", to: dir.path + "/out", blobKey: Fixtures.keys.blobKey(sha256: shaA), maxBytes: 100) == shaA)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path + "/out")) == Data("attachment A".utf8))
        try FileManager.default.removeItem(atPath: dir.path + "/out")
        #expect(throws: BlobSealError.authenticationFailed(path: dir.path + "/a")) {
            try Self.sealer.open(file: dir.path + "/a", to: dir.path + "/out", blobKey: Fixtures.keys.blobKey(sha256: shaB), maxBytes: 100)
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out"))
    }

    @Test func anotherOwnerCannotOpen() throws {
        let dir = SyncTempDir("owner")
        let (path, sha) = try Self.sealed(Array("secret".utf8), in: dir)
        #expect(throws: BlobSealError.authenticationFailed(path: path)) {
            try BlobSealer(keys: OwnerKeys.generate()).open(file: path, to: dir.path + "/out", expectedSHA256: sha, maxBytes: 100)
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out"))
    }

    @Test func tamperingAndLimitsFail() throws {
        let dir = SyncTempDir("tamper")
        let plain = Self.randomBytes(70_000, seed: 9)
        let (path, sha) = try Self.sealed(plain, in: dir)
        let sealed = Self.read(path)
        for i in [0, 8, 9, 20, 32, 33, 40, 33 + 65_553, sealed.count - 1] {
            var tampered = sealed
            tampered[i] ^= 0x10
            Self.write(tampered, to: dir.path + "/t")
            #expect(throws: BlobSealError.self, "byte \(i)") {
                try Self.sealer.open(file: dir.path + "/t", to: dir.path + "/out", expectedSHA256: sha, maxBytes: 1 << 20)
            }
        }
        #expect(throws: BlobSealError.tooLarge(path: path, limit: 69_999)) {
            try Self.sealer.open(file: path, to: dir.path + "/out", expectedSHA256: sha, maxBytes: 69_999)
        }
        #expect(throws: BlobSealError.invalidSHA256("xyz")) {
            try Self.sealer.open(file: path, to: dir.path + "/out", expectedSHA256: "xyz", maxBytes: 1 << 20)
        }
        Self.write(Array("not a blob at all, just text".utf8), to: dir.path + "/text")
        #expect(throws: BlobSealError.notASealedBlob(path: dir.path + "/text")) {
            try Self.sealer.open(file: dir.path + "/text", to: dir.path + "/out", expectedSHA256: sha, maxBytes: 1 << 20)
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out"))
        #expect(!dir.names.contains { $0.contains(".tmp-") })
    }

    @Test func fileErrorsNameTheFileAndTheReason() {
        let dir = SyncTempDir("errors")
        let missing = dir.path + "/missing"
        do {
            try Self.sealer.seal(file: missing, to: dir.path + "/sealed")
            Issue.record("sealing a missing file succeeded")
        } catch {
            #expect(error == .io(call: "open", path: missing, errno: ENOENT))
            #expect(error.description.contains(missing))
            #expect(error.description.contains("No such file or directory"))
        }
        Self.write([1, 2, 3], to: dir.path + "/plain")
        #expect(throws: BlobSealError.self) { try Self.sealer.seal(file: dir.path + "/plain", to: dir.path + "/no/such/dir/sealed") }
        #expect(dir.names == ["plain"])
    }
}
