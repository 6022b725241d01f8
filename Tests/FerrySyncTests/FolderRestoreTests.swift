import FerryModel
import FerryTestSupport
import Foundation
import Testing
@testable import FerrySync

/// A device whose store is restored from an older backup on the same machine keeps its node id
/// and its directory of the folder, which holds files a copy of it wrote after the backup. The
/// store (played by a keeper holding the backup's text, and the backup's cursor) never saw
/// them: the transport reads them back once like another device's files, never uses their seqs
/// again, and a normal restart reads none of its own files.
@Suite struct FolderRestoreTests {
    let a = ScratchFolder()
    var rng = SplitMix64(seed: 11)

    func writer(_ keeper: FolderTransport.StateKeeper, maxSegments: Int = 64) -> FolderTransport {
        FolderTransport(name: "folder", path: a.path, owner: FolderFixture.owner, device: FolderFixture.writer,
                        options: FolderFixture.options(maxSegments: maxSegments), keeper: keeper)
    }

    /// A keeper holding `text` under `key`, as a store restored from a backup holds it.
    static func keeper(restoring text: String?, key: String) -> FolderTransport.StateKeeper {
        let keeper = FolderTransport.StateKeeper.inMemory()
        if let text { try? keeper.save(key, text) }
        return keeper
    }

    /// `count` batches of two envelopes of the writer, streams from `start`.
    mutating func batches(_ count: Int, from start: Int64) -> [[Envelope]] {
        (0..<count).map { i in
            (0..<2).map { j in
                let n = start + Int64(i * 2 + j)
                return FolderFixture.envelope(stream: UInt64(n) + 1, millis: n, rng: &rng)
            }
        }
    }

    func seqs() -> [UInt64] {
        SyncTool.files(a.path).compactMap { name in
            switch FolderFileName(name) {
            case .segment(let seq), .snapshot(let seq): seq
            default: nil
            }
        }
    }

    @Test mutating func aRestoredWriterReadsBackWhatItsCopyWroteOnceAndNeverUsesThoseSeqs() async throws {
        let keeper = FolderTransport.StateKeeper.inMemory()
        let t = writer(keeper)
        let before = batches(3, from: 0)
        for batch in before { #expect(try await t.push(batch) == [.accepted, .accepted]) }
        // A normal pull reads nothing of its own.
        let backupCursor = try await t.drain(from: nil)
        #expect(backupCursor.envelopes.isEmpty)
        // The backup: what the store remembers, and its cursor.
        let backup = try keeper.load(t.stateKey)
        let after = batches(3, from: 100)
        for batch in after { #expect(try await t.push(batch) == [.accepted, .accepted]) }
        #expect(try await t.drain(from: backupCursor.cursor).envelopes.isEmpty, "the copy that wrote them has them")

        // Restored: the files above what the backup remembers are read back, in order, once.
        let restoredKeeper = Self.keeper(restoring: backup, key: t.stateKey)
        let restored = writer(restoredKeeper)
        let back = try await restored.drain(from: backupCursor.cursor)
        #expect(back.envelopes == after.flatMap { $0 })
        #expect(back.unreadable.isEmpty)
        #expect(try await restored.drain(from: back.cursor).envelopes.isEmpty)
        let state = try FolderWriterState(parsing: try restoredKeeper.load(t.stateKey))
        #expect(state.high == 6 && state.reread == .init(after: 3, through: 6), "\(state.text)")

        // It writes above every seq its copy used, and does not read its new files back.
        #expect(try await restored.push(batches(1, from: 200)[0]) == [.accepted, .accepted])
        #expect(seqs() == [1, 2, 3, 4, 5, 6, 7])
        #expect(try await restored.drain(from: back.cursor).envelopes.isEmpty)
        // Pushing what it got back again is a duplicate: those files are its own.
        #expect(try await restored.push(after[0]) == [.duplicate, .duplicate])

        // A normal restart after reading them back reads nothing of its own.
        let restarted = writer(restoredKeeper)
        #expect(try await restarted.drain(from: back.cursor).envelopes.isEmpty)
        // Started over (no cursor), it reads them back again: harmless, the merge skips them.
        #expect(try await restarted.drain(from: nil).envelopes == after.flatMap { $0 })
    }

    /// The copy compacted after the backup: the segments the store never saw are gone, and
    /// their snapshot holds the newest of everything, which is read back instead.
    @Test mutating func whatACompactionRemovedIsReadBackFromTheSnapshot() async throws {
        let keeper = FolderTransport.StateKeeper.inMemory()
        let t = writer(keeper, maxSegments: 4)
        for batch in batches(2, from: 0) { _ = try await t.push(batch) }
        let backupCursor = try await t.drain(from: nil)
        let backup = try keeper.load(t.stateKey)
        let after = batches(4, from: 100)
        for batch in after { _ = try await t.push(batch) }
        #expect(SyncTool.files(a.path).contains { $0.hasPrefix("snap-") }, "the copy compacted: \(SyncTool.files(a.path))")
        #expect(!seqs().contains(3), "segment 3 was compacted away: \(seqs())")

        let restored = writer(Self.keeper(restoring: backup, key: t.stateKey), maxSegments: 4)
        let back = try await restored.drain(from: backupCursor.cursor)
        let events = Set(back.envelopes.map(\.header.event))
        #expect(after.flatMap { $0 }.allSatisfy { events.contains($0.header.event) })
        #expect(try await restored.drain(from: back.cursor).envelopes.isEmpty)
    }

    /// A store that never saved what it remembers (a first start, or a backup from before its
    /// first write into the folder) reads back every file of its directory once.
    @Test mutating func aStoreThatRemembersNothingReadsBackEveryOwnFile() async throws {
        let first = writer(.inMemory())
        let all = batches(2, from: 0)
        for batch in all { _ = try await first.push(batch) }
        let keeper = FolderTransport.StateKeeper.inMemory()
        let fresh = writer(keeper)
        let back = try await fresh.drain(from: nil)
        #expect(back.envelopes == all.flatMap { $0 })
        #expect(try await writer(keeper).drain(from: back.cursor).envelopes.isEmpty)
    }

    @Test func theWriterStateKeepsTheFilesToReadBack() throws {
        var state = FolderWriterState(high: 12, base: 9, snapshot: 9, epoch: 3)
        state.adopt(diskHigh: 12)
        #expect(state.reread == nil, "nothing above what it remembers")
        state.adopt(diskHigh: 15)
        #expect(state.high == 15 && state.reread == .init(after: 12, through: 15))
        state.adopt(diskHigh: 20)
        #expect(state.high == 20 && state.reread == .init(after: 12, through: 20), "it grows, from where it began")
        #expect(state.text == "{\"b\":9,\"e\":3,\"h\":20,\"ra\":12,\"rt\":20,\"s\":9,\"v\":1}")
        #expect(try FolderWriterState(parsing: state.text) == state)
        let text = Array(state.text.utf8)
        for cut in 1..<text.count {
            #expect(throws: FolderCursorError.self) { try FolderWriterState(parsing: String(decoding: text[..<cut], as: UTF8.self)) }
        }
        for bad in ["{\"b\":9,\"e\":3,\"h\":20,\"ra\":12,\"s\":9,\"v\":1}", "{\"b\":9,\"e\":3,\"h\":20,\"ra\":12,\"rt\":21,\"s\":9,\"v\":1}",
                    "{\"b\":9,\"e\":3,\"h\":20,\"ra\":12,\"rt\":12,\"s\":9,\"v\":1}", "{\"b\":9,\"e\":3,\"h\":20,\"rt\":20,\"s\":9,\"v\":1}"] {
            #expect(throws: FolderCursorError.self) { try FolderWriterState(parsing: bad) }
        }
    }
}
