import FerryClient
import FerryJSON
import FerryTestSupport
import Foundation
import Testing

/// Two ferryd on two separate directories, and the test as the file-sync tool: it carries a's
/// files to b's directory by hand, the awkward ways real tools do (late, out of order, half
/// written, as conflict copies, with compacted segments deleted), and b must end up with
/// exactly a's data.
@Suite(.serialized) struct HandCarriedFolderTests {
    /// a's own directory inside its folder, and the matching one in b's folder.
    struct Route {
        let from: String
        let to: String

        var names: [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: from)) ?? []).filter { !$0.hasPrefix(".") && $0 != "blobs" }.sorted()
        }

        /// Copies a file as a tool that writes a temporary file and renames it does.
        func carry(_ name: String, as target: String? = nil) throws {
            try FileManager.default.createDirectory(atPath: to, withIntermediateDirectories: true)
            let data = try Data(contentsOf: URL(fileURLWithPath: from + "/" + name))
            try data.write(to: URL(fileURLWithPath: to + "/" + (target ?? name)), options: .atomic)
        }

        /// Writes the first `count` bytes of a file in place, as a tool that writes directly.
        func carryPrefix(_ name: String, _ count: Int) throws {
            try FileManager.default.createDirectory(atPath: to, withIntermediateDirectories: true)
            let data = try Data(contentsOf: URL(fileURLWithPath: from + "/" + name))
            FileManager.default.createFile(atPath: to + "/" + name, contents: data.prefix(count))
        }

        func mirrorDeletions() throws {
            let source = Set(names)
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: to)) ?? []) where name.hasPrefix("seg-") || name.hasPrefix("snap-") {
                if !source.contains(name) && !name.contains("conflict") { try FileManager.default.removeItem(atPath: to + "/" + name) }
            }
        }
    }

    /// Waits until a's outbox is empty (everything written to its folder).
    static func flushed(_ a: SyncDevice) async throws -> Bool {
        try await eventually(.seconds(20)) { try await a.client().outbox(limit: 1).isEmpty }
    }

    @Test func bConvergesWhateverOrderAndShapeTheFilesArriveIn() async throws {
        let dirA = TempDir("carry-a"), dirB = TempDir("carry-b")
        let a = try SyncDevice("a"), b = try SyncDevice("b")
        try a.start(); try b.start()
        try await b.joinOwner(of: a)
        try await a.addFolder(dirA.path)
        try await b.addFolder(dirB.path)
        let status = try await a.client().status()
        let owner = try #require(status.spaces.first { $0.name == "private" }?.owner)
        let route = Route(from: dirA.path + "/ferry-v1/\(owner)/\(status.node)", to: dirB.path + "/ferry-v1/\(owner)/\(status.node)")

        // Ten segments, one record each.
        for i in 0..<10 {
            _ = try await a.client().put(entity: "note", id: "r\(i)", payload: ["i": .int(Int64(i))])
            #expect(try await Self.flushed(a))
        }
        let first = route.names.filter { $0.hasPrefix("seg-") }
        #expect(first.count == 10)
        // Out of order: the last five first; the first five arrive late.
        for name in first.suffix(5).reversed() { try route.carry(name) }
        #expect(try await eventually(.seconds(60)) { try await b.records().count == 5 })
        #expect(try await b.records()["r0"] == nil)
        for name in first.prefix(5) { try route.carry(name) }
        #expect(try await eventually(.seconds(60)) { try await b.records().count == 10 })

        // Half written: a segment of 300 records arrives in two pieces.
        var items: [PutItem] = []
        for i in 0..<300 { items.append(PutItem(entity: "note", id: "t\(i)", payload: ["pad": .string(String(repeating: "p", count: 100))])) }
        _ = try await a.client().putMany(items)
        #expect(try await Self.flushed(a))
        let torn = try #require(route.names.filter { $0.hasPrefix("seg-") && !first.contains($0) }.first)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: route.from + "/" + torn)[.size] as? Int)
        try route.carryPrefix(torn, size / 2)
        try await Task.sleep(for: .seconds(1))
        let partial = try await b.records().count
        #expect(partial < 310, "b cannot have records of the part still missing")
        try route.carry(torn)
        for name in route.names where name.hasPrefix("seg-") { try route.carry(name) }
        #expect(try await eventually(.seconds(60)) { try await b.records().count == 310 })

        // A conflict copy made by the tool (a copy of another segment under a conflict name).
        try route.carry(first[3], as: first[7] + ".sync-conflict-20261129-120000-ABCDEFG")
        try route.carry(first[2], as: "seg-0000000000000099 (1).fseg")

        // Compaction on a: many edits, a snapshot replaces the segments, which a deletes. Only
        // the snapshot is carried; the segments it superseded never reach b, and are deleted
        // there as the tool mirrors a's deletions.
        for round in 0..<12 {
            var edits: [PutItem] = []
            for i in 0..<300 { edits.append(PutItem(entity: "note", id: "t\(i)", payload: ["round": .int(Int64(round)), "pad": .string(String(repeating: "q", count: 200))])) }
            _ = try await a.client().putMany(edits)
            // Each round reaches the folder before the next (a lagging push would send only
            // the latest versions, and there would be no history to compact).
            #expect(try await Self.flushed(a))
        }
        _ = try await a.client().delete(entity: "note", id: "r4")
        #expect(try await Self.flushed(a))
        #expect(try await eventually(.seconds(60)) { route.names.contains { $0.hasPrefix("snap-") } })
        for name in route.names where name.hasPrefix("snap-") { try route.carry(name) }
        try route.mirrorDeletions()
        for name in route.names where name.hasPrefix("seg-") { try route.carry(name) }
        #expect(try await eventually(.seconds(60)) { try await b.records() == a.records() })
        let final = try await b.records()
        #expect(final["r4"]?.deleted == true)
        #expect(final["t7"]?.payload?.contains("\"round\":11") == true)
        #expect(try await b.transport()?.refused == 0)
    }
}
