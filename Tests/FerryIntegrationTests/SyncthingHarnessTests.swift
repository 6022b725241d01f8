import FerryTestSupport
import Foundation
import Testing

/// The Syncthing pair that sync integration tests run two ferryd daemons over: two real
/// Syncthing instances on loopback keep two directories in sync, both ways, and stop cleanly.
@Suite("SyncthingHarness", .enabled(if: SyncthingPair.executable != nil, "syncthing is not installed (make test-deps installs it)"))
struct SyncthingHarnessTests {
    @Test("a file written on either side appears, identical, on the other; stop ends both processes")
    func propagatesBothWays() async throws {
        let temp = TempDir("syncthing")
        defer { withExtendedLifetime(temp) {} }  // removed only after the pair has stopped
        let root = temp.path
        let folderA = root + "/folder-a", folderB = root + "/folder-b"

        let launched = ContinuousClock.now
        let pair = try await SyncthingPair.start(root: root, folderA: folderA, folderB: folderB)
        defer { pair.stop() }
        print("syncthing \(pair.version): pair connected \(pair.connectTime) after launch (start() took \(ContinuousClock.now - launched))")
        try await pair.waitInSync(timeout: .seconds(30))

        var generator = SplitMix64(seed: 0x5EED_F00D)
        // A → B, through the explicit rescan.
        let bytesA = Data((0..<100_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let started = ContinuousClock.now
        try bytesA.write(to: URL(fileURLWithPath: folderA + "/from-a.bin"))
        try await pair.rescan()
        try await pair.waitInSync(timeout: .seconds(30))
        let aToB = ContinuousClock.now - started
        #expect(FileManager.default.contents(atPath: folderB + "/from-a.bin") == bytesA)
        print("syncthing A→B (rescan + waitInSync): \(aToB)")

        // B → A, leaving it to the watcher: poll for the file, no rescan.
        let bytesB = Data((0..<5_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let startedB = ContinuousClock.now
        try bytesB.write(to: URL(fileURLWithPath: folderB + "/from-b.bin"))
        let deadline = ContinuousClock.now + .seconds(30)
        while FileManager.default.contents(atPath: folderA + "/from-b.bin") != bytesB && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let bToA = ContinuousClock.now - startedB
        #expect(FileManager.default.contents(atPath: folderA + "/from-b.bin") == bytesB, "B→A not propagated within 30 s")
        print("syncthing B→A (watcher, polling the file): \(bToA)")
        try await pair.waitInSync(timeout: .seconds(30))

        // Only the two files (and Syncthing's marker) on each side.
        for folder in [folderA, folderB] {
            let names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
            #expect(names == [".stfolder", "from-a.bin", "from-b.bin"], "\(folder): \(names)")
        }

        // Nothing but loopback: every socket is on 127.0.0.1, and talks to 127.0.0.1 or nobody.
        let sockets = pair.inetSockets()
        #expect(!sockets.isEmpty)
        for socket in sockets {
            let f = socket.split(separator: " ")
            #expect(f[0] == "tcp" && f[1].hasPrefix("0100007F:") && (f[3].hasPrefix("0100007F:") || f[3] == "00000000:0000"),
                    "syncthing socket off loopback: \(socket)")
        }
        #expect(try await pair.a.rest("GET", "/rest/system/discovery")?.objectValue?.isEmpty == true)

        // One process per instance (no monitor with a child), which stop() ends.
        #expect(syncthingProcesses(under: root).count == 2, "\(syncthingProcesses(under: root))")
        pair.stop()
        #expect(!pair.a.isRunning && !pair.b.isRunning)
        // No process at all is left with a home under root (a monitor's orphaned child would be).
        let left = syncthingProcesses(under: root)
        #expect(left.isEmpty, "syncthing processes still running: \(left)")
    }
}

/// Processes whose command line mentions `root`, as "pid cmdline".
func syncthingProcesses(under root: String) -> [String] {
    let pids = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).filter { Int($0) != nil }
    return pids.compactMap { pid in
        guard let raw = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return nil }
        let cmdline = String(decoding: raw.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
        return cmdline.contains(root) && cmdline.contains("syncthing") ? "\(pid) \(cmdline)" : nil
    }
}
