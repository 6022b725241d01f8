import FerryClient
import FerryJSON
import FerryTestSupport
import Foundation
import Testing

/// Two ferryd daemons, each on its own directory, and two real Syncthing instances on loopback
/// keeping those directories in sync: the folder transport's design against a real sync tool
/// (files arrive late, through Syncthing's own temporary files and renames, in its order).
@Suite("SyncthingSync", .serialized, .enabled(if: SyncthingPair.executable != nil, "syncthing is not installed (make test-deps installs it)"))
struct SyncthingSyncTests {
    @Test("two ferryd converge through two Syncthing instances: creates, edits, deletes, attachments")
    func twoDaemonsConvergeThroughSyncthing() async throws {
        let temp = TempDir("syncthing-ferry")
        defer { withExtendedLifetime(temp) {} }
        let folderA = temp.path + "/folder-a", folderB = temp.path + "/folder-b"
        let pair = try await SyncthingPair.start(root: temp.path, folderA: folderA, folderB: folderB)
        defer { pair.stop() }
        try await pair.waitInSync(timeout: .seconds(30))

        let a = try SyncDevice("a"), b = try SyncDevice("b")
        try a.start(); try b.start()
        try await b.joinOwner(of: a)
        try await a.addFolder(folderA)
        try await b.addFolder(folderB)

        for i in 0..<100 { _ = try await a.client().put(entity: "note", id: "n\(i)", payload: ["i": .int(Int64(i)), "by": "a"]) }
        for i in 0..<20 { _ = try await b.client().put(entity: "note", id: "m\(i)", payload: ["i": .int(Int64(i)), "by": "b"]) }
        let attachment = try await a.client().putAttachment(data: Array(repeating: 0x5A, count: 200_000))
        _ = try await a.client().put(entity: "doc", id: "d1", payload: ["name": "scan"], attachments: [attachment.sha256])
        #expect(try await eventually(.seconds(90)) {
            let rb = try await b.records(), ra = try await a.records()
            return rb.count == 120 && ra.count == 120
        })
        #expect(try await eventually(.seconds(60)) { try await b.records("doc")["d1"] != nil })
        let fetched = try await b.client().getAttachment(sha256: attachment.sha256)
        #expect(fetched.size == 200_000)

        for i in 0..<10 { _ = try await b.client().put(entity: "note", id: "n\(i)", payload: ["i": .int(Int64(i)), "by": "b-edit"]) }
        for i in 10..<20 { _ = try await a.client().delete(entity: "note", id: "n\(i)") }
        #expect(try await eventually(.seconds(90)) {
            let ra = try await a.records(), rb = try await b.records()
            return ra == rb && ra.values.filter(\.deleted).count == 10 && ra["n3"]?.payload?.contains("b-edit") == true
        })
        // What Syncthing carried holds no plaintext.
        #expect(!folderContains(folderB, "b-edit"))
        #expect(!folderContains(folderA, "\"by\""))
        let ta = try await a.transport(), tb = try await b.transport()
        #expect(ta?.refused == 0 && tb?.refused == 0)
    }
}
