import FerryModel
import FerryTestSupport
import Foundation
@testable import FerrySync

/// Shared pieces of the folder transport tests: envelopes with random bodies, scratch folders,
/// and a hand-driven "sync tool" that copies files between two folders.
enum FolderFixture {
    static let owner = ID128(high: 0x1111_2222_3333_4444, low: 0x5555_6666_7777_8888)
    static let writer = NodeID(0x0000_0000_0000_00a1)
    static let reader = NodeID(0x0000_0000_0000_00b2)

    /// An envelope of `owner` sealed by `device` for `stream` at `millis`, with a random body.
    static func envelope(stream: UInt64, millis: Int64, device: NodeID = writer, owner: OwnerID = owner,
                         deleted: Bool = false, bodyBytes: Int = 64, rng: inout SplitMix64) -> Envelope {
        let stamp = Stamp(millis: 1_800_000_000_000 + millis, counter: 0, node: device)
        let header = EnvelopeHeader(owner: owner, device: device, event: ID128(high: stream, low: UInt64(millis)),
                                    stamp: stamp, deleted: deleted, stream: ID128(high: 0, low: stream))
        return Envelope(header: header, body: (0..<bodyBytes).map { _ in UInt8.random(in: 0...255, using: &rng) })
    }

    static func options(maxSegments: Int = 64, poll: Duration = .seconds(5)) -> FolderTransport.Options {
        FolderTransport.Options(pollInterval: poll, maxSegments: maxSegments, wallClock: { 1_800_000_000_000 })
    }

    /// The device directory of `device` below folder `root`.
    static func deviceDirectory(_ root: String, _ device: NodeID = writer) -> String {
        root + "/ferry-v1/" + owner.description + "/" + device.description
    }
}

/// A scratch directory removed when the value is released.
final class ScratchFolder: @unchecked Sendable {  // immutable after init
    let path: String

    init() {
        let base = FileManager.default.temporaryDirectory.path + "/ferry-folder-\(UUID().uuidString.prefix(8))"
        try! FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        path = base
    }

    deinit {
        chmod(path, 0o755)
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Plays the sync tool between folder `from` and folder `to`, by hand.
enum SyncTool {
    /// Makes `to`'s copy of every device directory of `from` equal to it (copying new and
    /// changed files, deleting removed ones), except `skip`'s directory. Hidden files are not
    /// synced, as sync tools ignore temporary files.
    static func mirror(from: String, to: String, skip: NodeID = FolderFixture.reader) throws {
        let fm = FileManager.default
        let ownerFrom = from + "/ferry-v1/" + FolderFixture.owner.description
        let ownerTo = to + "/ferry-v1/" + FolderFixture.owner.description
        for dev in (try? fm.contentsOfDirectory(atPath: ownerFrom)) ?? [] where dev != skip.description {
            try fm.createDirectory(atPath: ownerTo + "/" + dev + "/blobs", withIntermediateDirectories: true)
            for sub in ["", "/blobs"] {
                let a = ownerFrom + "/" + dev + sub, b = ownerTo + "/" + dev + sub
                guard fm.fileExists(atPath: a) else { continue }
                let names = Set(try fm.contentsOfDirectory(atPath: a).filter { !$0.hasPrefix(".") && $0 != "blobs" })
                for name in names {
                    let data = try Data(contentsOf: URL(fileURLWithPath: a + "/" + name))
                    if (try? Data(contentsOf: URL(fileURLWithPath: b + "/" + name))) != data {
                        try data.write(to: URL(fileURLWithPath: b + "/" + name))
                    }
                }
                for name in try fm.contentsOfDirectory(atPath: b) where !names.contains(name) && name != "blobs" {
                    try fm.removeItem(atPath: b + "/" + name)
                }
            }
        }
    }

    /// Copies one file of the writer's directory from `from` to `to`, only its first `prefix`
    /// bytes when given (a file the tool is still writing), under `as` when given.
    static func copy(_ name: String, from: String, to: String, prefix: Int? = nil, as newName: String? = nil) throws {
        let src = FolderFixture.deviceDirectory(from) + "/" + name
        let dstDir = FolderFixture.deviceDirectory(to)
        try FileManager.default.createDirectory(atPath: dstDir, withIntermediateDirectories: true)
        var data = try Data(contentsOf: URL(fileURLWithPath: src))
        if let prefix { data = data.prefix(prefix) }
        try data.write(to: URL(fileURLWithPath: dstDir + "/" + (newName ?? name)))
    }

    /// The names in the writer's directory of `root`.
    static func files(_ root: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: FolderFixture.deviceDirectory(root))) ?? []).sorted()
    }

    /// The total size of the files below `root/ferry-v1`.
    static func bytes(_ root: String) -> Int {
        let fm = FileManager.default
        var total = 0
        let base = root + "/ferry-v1"
        for rel in (fm.subpaths(atPath: base) ?? []) {
            if let size = (try? fm.attributesOfItem(atPath: base + "/" + rel))?[.size] as? Int,
               (try? fm.attributesOfItem(atPath: base + "/" + rel))?[.type] as? FileAttributeType == .typeRegular {
                total += size
            }
        }
        return total
    }
}

extension FolderTransport {
    /// Pulls pages until one is empty, from `cursor`; every envelope and unreadable report seen.
    func drain(from cursor: String?, limit: Int = 1000) async throws -> (envelopes: [Envelope], unreadable: [String], cursor: String) {
        var cursor = cursor
        var all: [Envelope] = [], bad: [String] = []
        for _ in 0..<10_000 {
            let page = try await pull(after: cursor, limit: limit, wait: .zero)
            all += page.envelopes
            bad += page.unreadable
            cursor = page.cursor
            if page.envelopes.isEmpty && page.unreadable.isEmpty { break }
        }
        return (all, bad, cursor ?? "")
    }
}
