import FerryClient
import FerryJSON
import FerryStore
import FerryVarlink
import Foundation
import Glibc

/// `ferry-bench folder`: two real ferryd syncing through one shared directory (what a file-sync
/// tool provides once it delivered the files), measured against raw SQLite inserts of the same
/// records in the same run.
struct FolderBenchmark {
    let scratch: ScratchDirectory
    var records = 100_000
    var latencySamples = 200
    var batch = 1000
    /// Also measure each side alone: A's writes and pushes with B paused, then B's pulls.
    var staged = false

    static let usage = """
        usage: ferry-bench folder [--records N] [--samples N] [--dir DIR]

          --records N    records put on A and timed to their arrival in B's Watch (default 100000)
          --samples N    single records timed from A's put to B's Watch (default 200)
          --staged       then also time each side alone: A's puts and pushes with B paused,
                         then B's pulls and applies
        Both ferryd run with Durability=normal; they are found next to ferry-bench.
        """

    init(arguments: ArraySlice<String>, scratch: ScratchDirectory) throws {
        self.scratch = scratch
        let flags = try BenchFlags(arguments, numbers: ["--records", "--samples"], switches: ["--staged"])
        records = flags.numbers["--records"] ?? records
        latencySamples = flags.numbers["--samples"] ?? latencySamples
        staged = flags.switches.contains("--staged")
    }

    func run() async throws {
        var config = ResultLine("folder.config")
        config.add("durability", "normal")
        config.add("records", records)
        config.add("samples", latencySamples)
        config.emit()

        let folder = try scratch.subdirectory("shared")
        let syncConfig = "[Sync]\nPollIntervalSeconds=30\n"
        let a = try Ferryd(directory: try scratch.subdirectory("a"), extraConfig: syncConfig)
        defer { a.stop() }
        let b = try Ferryd(directory: try scratch.subdirectory("b"), extraConfig: syncConfig)
        defer { b.stop() }
        let clientA = try FerryClient(socketPath: a.socket)
        let clientB = try FerryClient(socketPath: b.socket)
        let (_, phrase) = try await clientA.ownerPhrase()
        _ = try await clientB.restoreOwner(phrase: phrase)
        _ = try await clientA.addTransport(name: "shared", kind: "folder", location: folder)
        _ = try await clientB.addTransport(name: "shared", kind: "folder", location: folder)

        let watcher = try Arrivals(socket: b.socket)
        let writer = try BlockingConnection(path: a.socket)
        var liveBytes: Int64 = 0
        let payload = IPCBenchmark.payload
        let payloadBytes = JSONWriter.string(.object(payload)).utf8.count

        // One record at a time, A's put to B's Watch, with inotify.
        var latencies: [Double] = []
        for i in 0..<latencySamples {
            let id = "L\(i)"
            let request = VarlinkCallMessage(method: "io.ferry.Store.Put",
                                             parameters: ["entity": "lat", "id": .string(id), "payload": .object(payload)]).encoded()
            let t0 = Monotonic.nanos()
            _ = try writer.roundTrip(request)
            guard let t1 = await watcher.arrival(of: id, timeout: .seconds(10)) else {
                throw BenchError("record \(id) did not reach B within 10 s")
            }
            latencies.append(Double(t1 - t0) / 1e6)
            liveBytes += Int64(3 + id.utf8.count + 46 + payloadBytes)
            try await Task.sleep(for: .milliseconds(10))
        }
        var latency = ResultLine("folder.latency")
        latency.add("samples", latencies.count)
        latency.add("p50_ms", latencies.percentile(0.5), digits: 2)
        latency.add("p99_ms", latencies.percentile(0.99), digits: 2)
        latency.emit()

        // Throughput: N records through PutMany on A until all are in B's Watch.
        let run = TwoDeviceRun(writer: writer, watcher: watcher, batch: batch, payload: payload)
        let requests = run.requests(prefix: "B", batches: max(1, records / batch))
        let total = requests.count * batch
        let before = watcher.bulkCount
        let cpuBefore = (a: a.cpuSeconds(), b: b.cpuSeconds(), bench: ProcessCPU.seconds() ?? 0)
        let t0 = Monotonic.nanos()
        try run.write(requests)
        let written = Monotonic.nanos()
        try await run.waitForArrivals(total, after: before, timeout: .seconds(600))
        let arrived = Monotonic.nanos()
        let cpuAfter = (a: a.cpuSeconds(), b: b.cpuSeconds(), bench: ProcessCPU.seconds() ?? 0)
        liveBytes += Int64(total * (4 + 12 + 46 + payloadBytes))
        let endToEnd = Double(total) / (Double(arrived - t0) / 1e9)

        // The raw yardstick: the same rows inserted into a bare SQLite table, same batches.
        let raw = try rawInsertRate(total: total, payload: JSONWriter.string(.object(payload)))
        var throughput = ResultLine("folder.throughput")
        throughput.add("records", total)
        throughput.add("put_on_a_per_s", Int((Double(total) / (Double(written - t0) / 1e9)).rounded()))
        throughput.add("a_to_b_watch_per_s", Int(endToEnd.rounded()))
        throughput.add("raw_sqlite_insert_per_s", Int(raw.rounded()))
        throughput.add("ratio_vs_raw", endToEnd / raw, digits: 2)
        throughput.emit()

        // Where the CPU went in that phase, per record: steadier than the rate on a machine
        // whose speed drifts, and what an optimization should lower.
        var cpu = ResultLine("folder.cpu")
        cpu.add("a_us_per_record", (cpuAfter.a - cpuBefore.a) * 1e6 / Double(total), digits: 1)
        cpu.add("b_us_per_record", (cpuAfter.b - cpuBefore.b) * 1e6 / Double(total), digits: 1)
        cpu.add("bench_us_per_record", (cpuAfter.bench - cpuBefore.bench) * 1e6 / Double(total), digits: 1)
        cpu.emit()

        if staged {
            let stages = try await run.staged(a: clientA, b: clientB, batches: max(1, records / batch))
            var line = ResultLine("folder.staged")
            line.add("records", stages.records)
            line.add("a_put_per_s", stages.rate(stages.started, stages.written))
            line.add("a_put_and_push_per_s", stages.rate(stages.started, stages.pushed))
            line.add("b_pull_and_apply_per_s", stages.rate(stages.resumed, stages.applied))
            line.emit()
            liveBytes += Int64(total * (4 + 12 + 46 + payloadBytes))
        }

        // Compaction: give A's compaction (which follows pushes) a moment, then weigh the folder.
        try await Task.sleep(for: .seconds(2))
        let folderBytes = ScratchDirectory.treeBytes(folder)
        var size = ResultLine("folder.size")
        size.add("folder_bytes", Int(folderBytes))
        size.add("live_bytes", Int(liveBytes))
        size.add("live_definition", "entity+id+stamp+payload_of_live_records")
        size.add("ratio_vs_live", Double(folderBytes) / Double(liveBytes), digits: 2)
        size.add("files", ScratchDirectory.fileCount(folder))
        size.emit()

        var rss = ResultLine("folder.rss")
        rss.add("a_peak_mb", Double(a.peakResidentBytes() ?? 0) / 1_048_576, digits: 1)
        rss.add("b_peak_mb", Double(b.peakResidentBytes() ?? 0) / 1_048_576, digits: 1)
        rss.emit()

        let ratio = endToEnd / raw
        var summary = ResultLine("folder.summary")
        summary.add("a_to_b_vs_raw", ratio, digits: 2)
        summary.add("target_a_to_b_vs_raw", ">=0.3")
        summary.add("latency_p50_ms", latencies.percentile(0.5), digits: 2)
        summary.add("target_latency_p50_ms", "<100")
        summary.add("folder_vs_live", Double(folderBytes) / Double(liveBytes), digits: 2)
        summary.add("target_folder_vs_live", "<2")
        let pass = ratio >= 0.3 && latencies.percentile(0.5) < 100 && Double(folderBytes) < 2 * Double(liveBytes)
        summary.add("result", pass ? "pass" : "fail")
        summary.emit()
        watcher.stop()
    }

    private func rawInsertRate(total: Int, payload: String) throws -> Double {
        try BaselineDatabase.insertRate(directory: try scratch.subdirectory("raw"), records: total, batch: batch, payload: payload)
    }
}

/// A Watch subscription on a plain socket, read by its own thread: when each record id first
/// arrived, and how many `bulk` records arrived.
final class Arrivals: @unchecked Sendable {
    // @unchecked: `times` and `bulk` are only touched with `lock` held; `fd` is the thread's.
    private let lock = NSLock()
    private var times: [String: UInt64] = [:]
    private var bulk = 0
    private let fd: Int32
    private let thread: Thread

    init(socket: String) throws {
        let fd = try BlockingConnection.connect(path: socket)
        self.fd = fd
        let call = Array(#"{"method":"io.ferry.Store.Watch","more":true,"parameters":{}}"#.utf8) + [0]
        _ = call.withUnsafeBytes { write(fd, $0.baseAddress!, call.count) }
        let box = ArrivalsSink()
        thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var partial: [UInt8] = []
            let marker = Array(#""id":""#.utf8)
            let bulkMarker = Array(#""entity":"bulk""#.utf8)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                if n <= 0 { return }
                let now = Monotonic.nanos()
                var from = 0
                while from < n {
                    guard let nul = buffer[from..<n].firstIndex(of: 0) else {
                        partial.append(contentsOf: buffer[from..<n])
                        break
                    }
                    partial.append(contentsOf: buffer[from..<nul])
                    from = nul + 1
                    if ByteSearch.firstRange(of: bulkMarker, in: partial) != nil {
                        box.owner?.addBulk()
                    } else if let at = ByteSearch.firstRange(of: marker, in: partial) {
                        var end = at.upperBound
                        while end < partial.count, partial[end] != 34 { end += 1 }
                        box.owner?.arrived(String(decoding: partial[at.upperBound..<end], as: UTF8.self), at: now)
                    }
                    partial.removeAll(keepingCapacity: true)
                }
            }
        }
        box.owner = self
        thread.start()
    }

    fileprivate func addBulk() { lock.lock(); bulk += 1; lock.unlock() }
    fileprivate func arrived(_ id: String, at t: UInt64) {
        lock.lock()
        if times[id] == nil { times[id] = t }
        lock.unlock()
    }

    private func time(of id: String) -> UInt64? { lock.lock(); defer { lock.unlock() }; return times[id] }

    var bulkCount: Int { lock.lock(); defer { lock.unlock() }; return bulk }

    /// When `id` arrived, waiting up to `timeout` for it.
    func arrival(of id: String, timeout: Duration) async -> UInt64? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let t = time(of: id) { return t }
            try? await Task.sleep(for: .microseconds(200))
        }
        return nil
    }

    func stop() { shutdown(fd, Int32(SHUT_RDWR)) }
}

/// Lets the reader thread reach its `Arrivals` once it exists.
private final class ArrivalsSink: @unchecked Sendable {
    // @unchecked: set once before the thread starts.
    weak var owner: Arrivals?
}
