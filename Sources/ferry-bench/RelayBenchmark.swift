import FerryClient
import FerryJSON
import FerryModel
import FerrySync
import FerryTestSupport
import FerryVarlink
import Foundation
import Glibc

/// `ferry-bench relay`: a real `ferry-relay` (SQLite) with two real ferryd on loopback, and
/// the relay alone under many pushing and idle long-polling clients, each figure beside raw
/// SQLite inserts of the same records measured in the same run.
struct RelayBenchmark {
    let scratch: ScratchDirectory
    var records = 200_000
    var latencySamples = 200
    var pushers = 50
    var idle = 1000
    var ingestEvents = 200_000
    let batch = 1000
    /// The relay's storage: SQLite, or a throwaway PostgreSQL cluster started for the run.
    var postgresql = false

    static let usage = """
        usage: ferry-bench relay [--records N] [--samples N] [--pushers N] [--idle N] [--events N] [--postgresql] [--dir DIR]

          --records N    records put on A and timed to their arrival in B's Watch (default 200000)
          --samples N    single records timed from A's put to B's Watch (default 200)
          --pushers N    clients pushing envelopes straight to the relay (default 50)
          --idle N       idle devices long-polling meanwhile (default 1000)
          --events N     envelopes the pushers push in all (default 200000)
          --postgresql   the relay on PostgreSQL (a throwaway cluster: initdb and postgres from
                         Debian's postgresql package) instead of SQLite
        ferry-relay and ferryd (Durability=normal) are found next to ferry-bench.
        """

    init(arguments: ArraySlice<String>, scratch: ScratchDirectory) throws {
        self.scratch = scratch
        let flags = try BenchFlags(arguments, numbers: ["--records", "--samples", "--pushers", "--idle", "--events"], switches: ["--postgresql"])
        records = flags.numbers["--records"] ?? records
        latencySamples = flags.numbers["--samples"] ?? latencySamples
        pushers = flags.numbers["--pushers"] ?? pushers
        idle = flags.numbers["--idle"] ?? idle
        ingestEvents = flags.numbers["--events"] ?? ingestEvents
        postgresql = flags.switches.contains("--postgresql")
    }

    func run() async throws {
        raiseOpenFileLimit(to: idle + pushers + 256)
        var config = ResultLine("relay.config")
        config.add("storage", postgresql ? "postgresql" : "sqlite")
        config.add("records", records)
        config.add("pushers", pushers)
        config.add("idle_long_pollers", idle)
        config.add("events", ingestEvents)
        config.emit()

        var cluster: PostgresCluster?
        var storageConfig = ""
        if postgresql {
            let c = try PostgresCluster(durable: true)
            storageConfig = "Storage=postgresql\n[PostgreSQL]\nConnection=\(try c.createDatabase())\n"
            cluster = c
        }
        defer { cluster?.stop() }
        let relay = try RelayProcess(directory: try scratch.subdirectory("relay"), maxConnections: idle + pushers + 256,
                                     storageConfig: storageConfig)
        defer { relay.stop() }
        let syncConfig = "[Sync]\nPollIntervalSeconds=30\n"
        let a = try Ferryd(directory: try scratch.subdirectory("a"), extraConfig: syncConfig)
        defer { a.stop() }
        let b = try Ferryd(directory: try scratch.subdirectory("b"), extraConfig: syncConfig)
        defer { b.stop() }
        let clientA = try FerryClient(socketPath: a.socket)
        let clientB = try FerryClient(socketPath: b.socket)
        let (_, phrase) = try await clientA.ownerPhrase()
        _ = try await clientB.restoreOwner(phrase: phrase)
        guard let owner = try await clientA.spaces().first(where: { $0.name == "private" })?.owner else { throw BenchError("A has no owner id") }
        let token = try relay.createOwner(owner)
        _ = try await clientA.addTransport(name: "relay", kind: "relay", location: relay.url, token: token)
        let (code, _) = try await clientA.relayPairingCode()
        _ = try await clientB.addTransport(name: "relay", kind: "relay", location: relay.url, code: code)

        let watcher = try Arrivals(socket: b.socket)
        let writer = try BlockingConnection(path: a.socket)
        let payload = IPCBenchmark.payload
        let payloadText = JSONWriter.string(.object(payload))

        // (a) One record at a time, A's put to B's Watch, through the relay's long-poll.
        var latencies: [Double] = []
        for i in 0..<latencySamples {
            let id = "L\(i)"
            let request = VarlinkCallMessage(method: "io.ferry.Store.Put",
                                             parameters: ["entity": "lat", "id": .string(id), "payload": .object(payload)]).encoded()
            let t0 = Monotonic.nanos()
            _ = try writer.roundTrip(request)
            guard let t1 = await watcher.arrival(of: id, timeout: .seconds(10)) else { throw BenchError("record \(id) did not reach B within 10 s") }
            latencies.append(Double(t1 - t0) / 1e6)
            try await Task.sleep(for: .milliseconds(10))
        }
        var latency = ResultLine("relay.latency")
        latency.add("samples", latencies.count)
        latency.add("p50_ms", latencies.percentile(0.5), digits: 2)
        latency.add("p99_ms", latencies.percentile(0.99), digits: 2)
        latency.emit()

        // (b) N records through PutMany on A until all are in B's Watch.
        let run = TwoDeviceRun(writer: writer, watcher: watcher, batch: batch, payload: payload)
        let requests = run.requests(prefix: "B", batches: max(1, records / batch))
        let total = requests.count * batch
        let before = watcher.bulkCount
        let cpuBefore = (a: a.cpuSeconds(), b: b.cpuSeconds(), relay: relay.cpuSeconds(), bench: ProcessCPU.seconds() ?? 0)
        let t0 = Monotonic.nanos()
        try run.write(requests)
        try await run.waitForArrivals(total, after: before, timeout: .seconds(900))
        let endToEnd = Double(total) / (Double(Monotonic.nanos() - t0) / 1e9)
        let cpuAfter = (a: a.cpuSeconds(), b: b.cpuSeconds(), relay: relay.cpuSeconds(), bench: ProcessCPU.seconds() ?? 0)
        // Where the CPU went, per record: steadier than the rate on a machine whose speed drifts.
        var cpu = ResultLine("relay.cpu")
        cpu.add("a_us_per_record", (cpuAfter.a - cpuBefore.a) * 1e6 / Double(total), digits: 1)
        cpu.add("b_us_per_record", (cpuAfter.b - cpuBefore.b) * 1e6 / Double(total), digits: 1)
        cpu.add("relay_us_per_record", (cpuAfter.relay - cpuBefore.relay) * 1e6 / Double(total), digits: 1)
        cpu.add("bench_us_per_record", (cpuAfter.bench - cpuBefore.bench) * 1e6 / Double(total), digits: 1)
        cpu.emit()
        let raw = try BaselineDatabase.insertRate(directory: try scratch.subdirectory("raw"), records: total, batch: batch, payload: payloadText)
        // Each side alone, for where the time goes: A pushes with B paused, then B pulls.
        let stages = try await run.staged(a: clientA, b: clientB, batches: max(1, records / batch / 4))
        var staged = ResultLine("relay.staged")
        staged.add("records", stages.records)
        staged.add("a_put_per_s", stages.rate(stages.started, stages.written))
        staged.add("a_push_after_puts_per_s", stages.rate(stages.written, stages.pushed))
        staged.add("b_pull_and_apply_per_s", stages.rate(stages.resumed, stages.applied))
        staged.emit()

        var throughput = ResultLine("relay.throughput")
        throughput.add("records", total)
        throughput.add("a_to_b_watch_per_s", Int(endToEnd.rounded()))
        throughput.add("raw_sqlite_insert_per_s", Int(raw.rounded()))
        throughput.add("ratio_vs_raw", endToEnd / raw, digits: 2)
        throughput.add("a_peak_rss_mb", Double(a.peakResidentBytes() ?? 0) / 1_048_576, digits: 1)
        throughput.add("b_peak_rss_mb", Double(b.peakResidentBytes() ?? 0) / 1_048_576, digits: 1)
        throughput.emit()
        watcher.stop()

        // (c) The relay alone: pushers on owners of their own, idle devices long-polling another.
        let ingest = try await ingestRate(relay: relay)
        var line = ResultLine("relay.ingest")
        line.add("pushers", pushers)
        line.add("idle_long_pollers", idle)
        line.add("events", ingest.events)
        line.add("events_per_s", Int(ingest.rate.rounded()))
        line.add("ratio_vs_raw", ingest.rate / raw, digits: 2)
        line.add("relay_peak_rss_mb", Double(relay.peakResidentBytes() ?? 0) / 1_048_576, digits: 1)
        line.add("relay_cpu_us_per_event", ingest.cpuMicrosPerEvent, digits: 1)
        line.emit()

        let aRSS = Double(a.peakResidentBytes() ?? 0) / 1_048_576, bRSS = Double(b.peakResidentBytes() ?? 0) / 1_048_576
        var summary = ResultLine("relay.summary")
        summary.add("latency_p50_ms", latencies.percentile(0.5), digits: 2)
        summary.add("target_latency_p50_ms", "<20")
        summary.add("latency_p99_ms", latencies.percentile(0.99), digits: 2)
        summary.add("target_latency_p99_ms", "<100")
        summary.add("a_to_b_vs_raw", endToEnd / raw, digits: 2)
        summary.add("target_a_to_b_vs_raw", ">=0.3")
        summary.add("ferryd_peak_rss_mb", max(aRSS, bRSS), digits: 1)
        summary.add("target_ferryd_peak_rss_mb", "<150")
        summary.add("ingest_vs_raw", ingest.rate / raw, digits: 2)
        summary.add("target_ingest_vs_raw", ">=0.5")
        let pass = latencies.percentile(0.5) < 20 && latencies.percentile(0.99) < 100 && endToEnd / raw >= 0.3
            && max(aRSS, bRSS) < 150 && ingest.rate / raw >= 0.5
        summary.add("result", pass ? "pass" : "fail")
        summary.emit()
    }

    /// Envelopes per second the relay stores with `pushers` clients pushing batches of 400 to
    /// owners of their own while `idle` connections long-poll an owner nobody writes to.
    private func ingestRate(relay: RelayProcess) async throws -> (events: Int, rate: Double, cpuMicrosPerEvent: Double) {
        let idleOwner = ID128(high: 0x1d1e, low: 1)
        let idleToken = try relay.createOwner(idleOwner.description)
        var idlers: [HTTPConnection] = []
        for _ in 0..<idle {
            let c = try HTTPConnection(port: relay.port)
            try c.send("GET", "/v1/owners/\(idleOwner)/events?wait=30", token: idleToken)
            idlers.append(c)
        }
        defer { withExtendedLifetime(idlers) {} }
        var owners: [(ID128, String)] = []
        for i in 0..<pushers {
            let o = ID128(high: 0xbe7c, low: UInt64(i + 1))
            owners.append((o, try relay.createOwner(o.description)))
        }
        let perPusher = max(1, ingestEvents / pushers / 400) * 400
        // Every batch made up front: the figure is the relay's, not the client's encoding.
        let rounds = perPusher / 400
        let bodies: [[[UInt8]]] = owners.map { owner, _ in (0..<rounds).map { Self.batch(owner: owner, round: $0) } }
        let failures = FailureBox()
        let port = relay.port
        let cpuBefore = relay.cpuSeconds()
        let t0 = Monotonic.nanos()
        let threads = owners.enumerated().map { index, entry in
            Thread {
                do {
                    let c = try HTTPConnection(port: port)
                    for body in bodies[index] {
                        let reply = try c.request("POST", "/v1/owners/\(entry.0)/events", token: entry.1, body: body)
                        if reply.status != 200 { failures.add("push answered \(reply.status): \(String(decoding: reply.body.prefix(200), as: UTF8.self))"); return }
                    }
                } catch {
                    failures.add("\(error)")
                }
            }
        }
        for t in threads { t.start() }
        while threads.contains(where: { !$0.isFinished }) { try await Task.sleep(for: .milliseconds(5)) }
        let seconds = Double(Monotonic.nanos() - t0) / 1e9
        let cpu = relay.cpuSeconds() - cpuBefore
        if let first = failures.first { throw BenchError("ingest: \(first)") }
        let events = perPusher * pushers
        return (events, Double(events) / seconds, cpu * 1e6 / Double(events))
    }

    static func batch(owner: ID128, round: Int) -> [UInt8] {
        var out = Array(#"{"events":["#.utf8)
        for k in 0..<400 {
            if k > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            out += Array(Data(envelope(owner: owner, k: k, round: round).encoded).base64EncodedString().utf8)
            out.append(UInt8(ascii: "\""))
        }
        return out + Array("]}".utf8)
    }

    /// A well-formed envelope with a made-up sealed body of a typical size (the relay never
    /// opens bodies).
    static func envelope(owner: ID128, k: Int, round: Int) -> Envelope {
        let stream = ID128(high: UInt64(k), low: 0x5eed)
        let stamp = Stamp(millis: 1_800_000_000_000 + Int64(round), counter: UInt16(k % 65_000), node: NodeID(7))
        let header = EnvelopeHeader(owner: owner, device: NodeID(7), event: ID128(high: UInt64(round), low: UInt64(k)),
                                    stamp: stamp, deleted: false, stream: stream)
        return Envelope(header: header, body: [UInt8](repeating: UInt8(truncatingIfNeeded: k), count: 24 + 200 + 16))
    }
}

final class FailureBox: @unchecked Sendable {
    // @unchecked: `messages` is only touched with `lock` held.
    private let lock = NSLock()
    private var messages: [String] = []
    func add(_ m: String) { lock.lock(); messages.append(m); lock.unlock() }
    var first: String? { lock.lock(); defer { lock.unlock() }; return messages.first }
}

func raiseOpenFileLimit(to wanted: Int) {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(wanted) else { return }
    limit.rlim_cur = min(rlim_t(wanted), limit.rlim_max)
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

/// A `ferry-relay serve` process for the benchmark, found next to ferry-bench.
final class RelayProcess {
    let port: Int
    let directory: String
    let executable: String
    private let process = Process()
    var url: String { "http://127.0.0.1:\(port)" }
    var configPath: String { directory + "/ferry-relay.conf" }

    init(directory: String, maxConnections: Int, storageConfig: String = "") throws {
        self.directory = directory
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        executable = URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("ferry-relay").path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw BenchError("ferry-relay not found at \(executable): build it in the same configuration (swift build -c release)")
        }
        port = try Self.freePort()
        try """
            [Relay]
            Listen=127.0.0.1:\(port)
            StateDirectory=\(directory)/state
            MaxConnections=\(maxConnections)
            LogLevel=warning
            \(storageConfig)
            """.write(toFile: directory + "/ferry-relay.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve", "--config", directory + "/ferry-relay.conf"]
        var env = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "JOURNAL_STREAM", "WATCHDOG_USEC"] { env.removeValue(forKey: key) }
        process.environment = env
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let c = try? HTTPConnection(port: port), let r = try? c.request("GET", "/healthz", token: nil), r.status == 200 { return }
            usleep(20_000)
        }
        throw BenchError("ferry-relay did not answer within 30 s")
    }

    /// `ferry-relay admin create-owner`; returns the token.
    func createOwner(_ owner: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = ["admin", "--config", configPath, "create-owner", "--owner", owner, "--device", "bench"]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix("token: ") {
            return String(line.dropFirst(7))
        }
        throw BenchError("ferry-relay admin create-owner printed no token")
    }

    func peakResidentBytes() -> Int? { ProcessMemory.peakResidentBytes(of: process.processIdentifier) }

    /// CPU seconds the relay used so far.
    func cpuSeconds() -> Double { ProcessCPU.seconds(of: process.processIdentifier) ?? 0 }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
    }

    static func freePort() throws -> Int {
        let port = LoopbackPort.free()
        guard port > 0 else { throw BenchError("no free loopback port") }
        return port
    }
}
