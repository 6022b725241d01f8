import FerryModel
import FerryTestSupport
import Foundation
import Glibc
import Testing
@testable import FerrySync

/// What wakes a waiting pull, and what tells the writer that files it wrote may be gone.
@Suite struct FolderWatcherTests {
    let root = ScratchFolder()

    func makeDirectory(_ name: String) throws -> String {
        let path = root.path + "/" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func write(_ path: String) throws {
        try Data("x".utf8).write(to: URL(fileURLWithPath: path))
    }

    /// Written the way the transport writes a segment: a hidden temporary file, linked under
    /// its name, then unlinked.
    func writeLikeThePush(_ dir: String, _ name: String) throws {
        try write(dir + "/.tmp-1-2-3")
        #expect(link(dir + "/.tmp-1-2-3", dir + "/" + name) == 0)
        #expect(unlink(dir + "/.tmp-1-2-3") == 0)
    }

    @Test func theDevicesOwnWritesWakeNobodyButWhatAPullReadsOrALossDoes() throws {
        let own = try makeDirectory("own"), other = try makeDirectory("other")
        let watcher = FolderWatcher(ownDirectory: own)
        defer { watcher.close() }
        watcher.watch(own)
        watcher.watch(other)
        // Reading the token drains the queued events, so each step below is seen at once.
        let start = try #require(watcher.ownFilesToken())
        let g0 = watcher.generation

        try writeLikeThePush(own, FolderFileName.segmentName(1))
        try writeLikeThePush(own, FolderFileName.snapshotName(1))
        #expect(watcher.ownFilesToken() == start)
        #expect(watcher.generation == g0, "the device's own segment and snapshot woke its pull")

        // A conflict copy in the own directory is read by a pull: it wakes, and is no loss.
        try write(own + "/" + FolderFileName.segmentName(1) + ".sync-conflict-20260101-120000-ABCDEFG")
        #expect(watcher.ownFilesToken() == start)
        let g1 = watcher.generation
        #expect(g1 > g0)

        // Anything in another device's directory wakes, temporary files included.
        try write(other + "/.syncthing.x.tmp")
        _ = watcher.ownFilesToken()
        let g2 = watcher.generation
        #expect(g2 > g1)

        // A segment of the device's own deleted, or moved away: a possible loss, and a wake.
        #expect(unlink(own + "/" + FolderFileName.segmentName(1)) == 0)
        let afterDelete = try #require(watcher.ownFilesToken())
        #expect(afterDelete != start)
        #expect(watcher.generation > g2)
        #expect(rename(own + "/" + FolderFileName.snapshotName(1), other + "/moved") == 0)
        let afterMove = try #require(watcher.ownFilesToken())
        #expect(afterMove != afterDelete)

        // The own directory removed: a loss, and no token until it is watched again.
        try FileManager.default.removeItem(atPath: own)
        #expect(watcher.ownFilesToken() == nil)
    }

    @Test func noTokenWithoutTheOwnDirectoryWatched() throws {
        let own = try makeDirectory("own")
        let watcher = FolderWatcher(ownDirectory: own)
        defer { watcher.close() }
        #expect(watcher.ownFilesToken() == nil)
        watcher.watch(own)
        #expect(watcher.ownFilesToken() != nil)
        #expect(FolderWatcher().ownFilesToken() == nil)
    }

    /// The writer lists its directory again only after an event that may have removed a file;
    /// a deletion right before a push is still found by that push.
    @Test func aSegmentDeletedBetweenTwoPushesOfOneTransportIsFoundByTheSecond() async throws {
        var rng = SplitMix64(seed: 11)
        let t = FolderTransport(name: "folder", path: root.path, owner: FolderFixture.owner, device: FolderFixture.writer,
                                options: FolderFixture.options())
        defer { Task { await t.close() } }
        for i in 0..<3 {
            _ = try await t.push([FolderFixture.envelope(stream: UInt64(i) + 1, millis: Int64(i), rng: &rng)])
        }
        let dir = FolderFixture.deviceDirectory(root.path)
        #expect(unlink(dir + "/" + FolderFileName.segmentName(2)) == 0)
        await #expect(throws: TransportFailure.self) {
            _ = try await t.push([FolderFixture.envelope(stream: 9, millis: 9, rng: &rng)])
        }
        // Once found, the loss was dealt with: the transport started its directory over.
        let outcomes = try await t.push([FolderFixture.envelope(stream: 10, millis: 10, rng: &rng)])
        #expect(outcomes == [.accepted])
        #expect(await t.status().details["last-lost-files"]?.contains(FolderFileName.segmentName(2)) == true)
    }
}
