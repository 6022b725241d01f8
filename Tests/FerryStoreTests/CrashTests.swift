import FerryTestSupport
import Foundation
import Testing
@testable import FerryModel
@testable import FerryStore
import FerrySQLite

/// Writes acknowledged to a client survive `kill -9`, and the store stays consistent.
@Suite struct CrashTests {
    @Test(.timeLimit(.minutes(5)))
    func acknowledgedWritesSurviveSIGKILL() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["FERRY_SEED"] ?? "") ?? UInt64.random(in: 0...UInt64(UInt32.max))
        var random = SplitMix64(seed: seed)
        let writer = try BuiltExecutable.path("ferry-crash-writer")
        let dir = TempDir("crash")
        var acked: [String: Set<Int>] = ["put": [], "team": [], "delete": []]
        var next = 0
        for round in 0..<20 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: writer)
            process.arguments = [dir.path, String(next)]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            let reader = LineReader(out.fileHandleForReading)
            #expect(reader.waitFor("ready", timeout: 30), "seed \(seed) round \(round): writer did not start")
            // Let it write for a random while, then kill it mid-flight.
            usleep(UInt32.random(in: 20_000...250_000, using: &random))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal, "seed \(seed) round \(round): writer exited by itself")
            for line in reader.drain() {
                let parts = line.split(separator: " ")
                guard parts.count == 3, parts[0] == "ack", let n = Int(parts[2]) else { continue }
                acked[String(parts[1]), default: []].insert(n)
                next = max(next, n + 1)
            }
            next += 10   // the killed process may have written past its last ack line

            let store = try Store(configuration: StoreConfiguration(directory: dir.path))
            for n in acked["put"]! where !acked["delete"]!.contains(n) {
                let record = try store.get(entity: "item", id: "w-\(n)")
                // The writer deletes w-(m-10) after writing w-m when m % 7 == 0; a delete that
                // committed just before the kill has no ack line yet, so such records may be tombstones.
                let mayBeDeleted = (n + 10) % 7 == 0
                let intact = record?.deleted == false && record?.payload?.hasPrefix(#"{"n":\#(n)"#) == true
                #expect(record != nil && (intact || (mayBeDeleted && record?.deleted == true)),
                        "seed \(seed) round \(round): acknowledged put w-\(n) lost: \(String(describing: record))")
            }
            for n in acked["delete"]! {
                #expect(try store.get(entity: "item", id: "w-\(n)")?.deleted == true, "seed \(seed) round \(round): delete of w-\(n) lost")
            }
            for n in acked["team"]! {
                #expect(try store.get(space: "team", entity: "item", id: "w-\(n)") != nil, "seed \(seed) round \(round): team w-\(n) lost")
            }
            try checkConsistency(dir.path, context: "seed \(seed) round \(round)")
        }
        #expect(acked["put"]!.count > 100, "the writer wrote too little to test anything (seed \(seed))")
    }

    /// integrity_check is ok; the change log (which transports are sent from) agrees with the records.
    func checkConsistency(_ path: String, context: String) throws {
        let db = try Database(path: path + "/ferry.db")
        #expect(try db.scalarText("PRAGMA integrity_check") == "ok", "\(context)")
        let records = try db.scalarInt("SELECT count(*) FROM records") ?? -1
        // The change log is also what transports are sent from: one row per record, none for
        // a record that is not there.
        #expect(try db.scalarInt("SELECT count(*) FROM changes") == records, "\(context): change log rows vs records")
        // Every record's latest change is in the change log, and the log is no further ahead.
        #expect(try db.scalarInt("SELECT count(*) FROM records r JOIN changes c ON c.seq = r.seq AND c.rid = r.rid") == records,
                "\(context): change log vs records")
        #expect(try db.scalarInt("SELECT max(seq) FROM changes") == db.scalarInt("SELECT max(seq) FROM records"), "\(context): change log ahead")
        #expect(try db.scalarInt("SELECT count(*) FROM changes c LEFT JOIN records r ON r.rid = c.rid WHERE r.rid IS NULL") == 0,
                "\(context): change rows without records")
    }
}

/// Collects a child's output lines on a background thread.
final class LineReader: @unchecked Sendable {
    // @unchecked: `lines` and `buffer` are only touched with `lock` held.
    private let lock = NSCondition()
    private var lines: [String] = []
    private var buffer = Data()
    private var closed = false

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                lock.lock()
                if chunk.isEmpty { closed = true; lock.broadcast(); lock.unlock(); return }
                buffer.append(chunk)
                while let nl = buffer.firstIndex(of: 10) {
                    lines.append(String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...nl)
                }
                lock.broadcast()
                lock.unlock()
            }
        }
    }

    func waitFor(_ line: String, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock(); defer { lock.unlock() }
        while !lines.contains(line) {
            if closed || !lock.wait(until: deadline) { return false }
        }
        return true
    }

    /// Every line, once the writer closed its end.
    func drain() -> [String] {
        lock.lock(); defer { lock.unlock() }
        while !closed { lock.wait(until: Date().addingTimeInterval(5)); break }
        return lines
    }
}
