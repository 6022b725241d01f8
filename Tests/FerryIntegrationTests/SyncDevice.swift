import FerryClient
import FerryJSON
import FerryTestSupport
import Foundation

/// One device for the sync tests: a real ferryd (`DaemonHarness`) and a client of it.
final class SyncDevice: @unchecked Sendable {
    // @unchecked: the harness is driven by the one test that owns the device.
    let name: String
    let harness: DaemonHarness

    init(_ name: String, pollSeconds: Int = 2, attachmentWaitSeconds: Int = 20, relayTimeoutSeconds: Int = 60,
         blobRetentionSeconds: Int? = nil) throws {
        self.name = name
        harness = try DaemonHarness(
            config: "[Store]\nDurability=normal\n[Sync]\nPollIntervalSeconds=\(pollSeconds)\nAttachmentWaitSeconds=\(attachmentWaitSeconds)\n"
                + "RelayTimeoutSeconds=\(relayTimeoutSeconds)\n" + (blobRetentionSeconds.map { "BlobRetentionSeconds=\($0)\n" } ?? ""),
            name: "sync-" + name)
    }

    func start(launcher: [String] = [], environment: [String: String] = [:]) throws {
        try harness.start(environment: environment, launcher: launcher)
    }
    func client() throws -> FerryClient { try FerryClient(socketPath: harness.socketPath) }

    /// Every record of `entity` (tombstones too) by id: (hlc, deleted, payload text).
    func records(_ entity: String = "note", space: String? = nil) async throws -> [String: Snapshot] {
        let client = try client()
        var out: [String: Snapshot] = [:]
        var after: String?
        repeat {
            let page = try await client.list(space: space, entity: entity, after: after, limit: 1000, includeDeleted: true)
            for r in page.records {
                out[r.id] = Snapshot(hlc: r.hlc, deleted: r.deleted, payload: r.payload.map { JSONWriter.string(.object($0)) })
            }
            after = page.next
        } while after != nil
        return out
    }

    struct Snapshot: Equatable, CustomStringConvertible {
        var hlc: String
        var deleted: Bool
        var payload: String?
        var description: String { "\(deleted ? "deleted" : payload ?? "-")@\(hlc)" }
    }

    /// Makes this device's private space (or `space`) the owner `from` has.
    func joinOwner(of from: SyncDevice, space: String? = nil) async throws {
        let (_, phrase) = try await from.client().ownerPhrase(space: space)
        _ = try await client().restoreOwner(space: space, phrase: phrase)
    }

    /// Whether the attachment `sha256` is readable here and holds exactly `bytes`.
    func hasAttachment(_ sha256: String, bytes: [UInt8]) async -> Bool {
        guard let fetched = try? await client().getAttachment(sha256: sha256) else { return false }
        switch fetched.content {
        case .inline(let got): return got == bytes
        case .file(let path): return FileManager.default.contents(atPath: path) == Data(bytes)
        }
    }

    func addFolder(_ path: String, name: String = "folder", space: String? = nil) async throws {
        _ = try await client().addTransport(space: space, name: name, kind: "folder", location: path)
    }

    /// Copies this device's state directory (its store) to `path`, as a backup does; ferryd
    /// must be stopped, so the SQLite files are consistent.
    func backUpState(to path: String) throws {
        precondition(!harness.isRunning, "back up a stopped device")
        try FileManager.default.copyItem(atPath: harness.stateDirectory, toPath: path)
    }

    /// Replaces this device's state directory by the copy at `path`, as restoring that backup
    /// on the same machine does (the node id stays); ferryd must be stopped.
    func restoreState(from path: String) throws {
        precondition(!harness.isRunning, "restore onto a stopped device")
        try FileManager.default.removeItem(atPath: harness.stateDirectory)
        try FileManager.default.copyItem(atPath: path, toPath: harness.stateDirectory)
    }

    /// The last lines of this device's log, named, for a failed test's report.
    var logTail: String {
        let lines = harness.log.split(separator: "\n").suffix(40)
        return "--- \(name)'s log (last \(lines.count) lines):\n" + lines.joined(separator: "\n")
    }

    func transport(_ name: String = "folder", space: String? = nil) async throws -> TransportStatus? {
        try await client().transports(space: space).first { $0.name == name }
    }
}

/// Every regular file under `root`, recursively.
func filesBelow(_ root: String) -> [String] {
    guard let e = FileManager.default.enumerator(atPath: root) else { return [] }
    var out: [String] = []
    while let rel = e.nextObject() as? String {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: root + "/" + rel, isDirectory: &isDir), !isDir.boolValue { out.append(root + "/" + rel) }
    }
    return out.sorted()
}

/// Whether any file under `root` contains `needle`'s bytes.
func folderContains(_ root: String, _ needle: String) -> Bool {
    let n = Data(needle.utf8)
    return filesBelow(root).contains { (try? Data(contentsOf: URL(fileURLWithPath: $0)))?.range(of: n) != nil }
}
