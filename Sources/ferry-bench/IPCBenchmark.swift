import FerryJSON
import FerrySQLite
import FerryStore
import FerryVarlink
import Foundation
import Glibc

/// `ferry-bench ipc`: a real ferryd on a Unix socket, measured against a raw baseline taken in
/// the same run: a Unix-socket ping-pong of the same message sizes plus one SQLite commit of one
/// row (WAL, synchronous=NORMAL), which is the least a daemon that durably stores a write can do.
struct IPCBenchmark {
    let scratch: ScratchDirectory
    var puts = 4000
    var putManyRecords = 100_000
    var putManyBatch = 1000
    var watchers = 100
    var watchedPuts = 200

    static let usage = """
        usage: ferry-bench ipc [--puts N] [--records N] [--watchers N] [--dir DIR]

          --puts N       single puts per concurrency level (default 4000)
          --records N    records written through PutMany, and into the store alone (default 100000)
          --watchers N   Watch subscribers for the fan-out figure (default 100)
        ferryd runs with Durability=normal; it is found next to ferry-bench.
        """

    init(arguments: ArraySlice<String>, scratch: ScratchDirectory) throws {
        self.scratch = scratch
        let flags = try BenchFlags(arguments, numbers: ["--puts", "--records", "--watchers"])
        puts = flags.numbers["--puts"] ?? puts
        putManyRecords = flags.numbers["--records"] ?? putManyRecords
        watchers = flags.numbers["--watchers"] ?? watchers
    }

    static let payload: [String: JSONValue] = [
        "title": "Buy oat milk and coffee beans", "done": false, "priority": 3,
        "tags": ["shopping", "weekly"], "notes": .string(String(repeating: "n", count: 60)),
    ]

    func run() async throws {
        var config = ResultLine("ipc.config")
        config.add("durability", "normal")
        config.add("puts", puts)
        config.add("records", putManyRecords)
        config.add("watchers", watchers)
        config.emit()

        // The raw baseline: same request and reply sizes, one commit of one row per round trip.
        let request = VarlinkCallMessage(method: "io.ferry.Store.Put",
                                         parameters: ["entity": "note", "payload": .object(Self.payload)]).encoded()
        let replySize = 420
        let baseline = try RawPingPong(directory: try scratch.subdirectory("raw"), requestSize: request.count, replySize: replySize)
        _ = try baseline.measure(rounds: 200)   // warm up
        // For comparison only (the target is against `baseline`): the same server in a process
        // of its own, paying the wake-ups between processes that a round trip to ferryd pays.
        let apart = try RawPingPong(directory: try scratch.subdirectory("raw-process"), requestSize: request.count,
                                    replySize: replySize, separateProcess: true)
        _ = try apart.measure(rounds: 200)
        let daemon = try Ferryd(directory: try scratch.subdirectory("ferryd"))
        defer { daemon.stop() }

        // The latency ratio: rounds of the raw baseline and of single puts, interleaved so
        // that both see the same machine (this one's speed drifts), pooled. One client thread
        // and one connection each make every round trip, as an app's thread would.
        let connection = try BlockingConnection(path: daemon.socket)
        _ = try connection.roundTrip(request)   // warm up
        guard let rounds = try interleavedRounds(baselines: [baseline, apart], connection: connection, request: request, clientCPU: nil) else {
            throw BenchError("the single-put rounds did not run")
        }
        let rawPooled = rounds.raw[0], apartPooled = rounds.raw[1], putPooled = rounds.put
        var ratioLine = ResultLine("ipc.put_latency")
        ratioLine.add("baseline", "unix_socket_round_trip+sqlite_commit_of_one_row")
        ratioLine.add("rounds", 5)
        ratioLine.add("raw_p50_us", rawPooled.percentile(0.5), digits: 1)
        ratioLine.add("put_p50_us", putPooled.percentile(0.5), digits: 1)
        ratioLine.add("put_p99_us", putPooled.percentile(0.99), digits: 1)
        let p50Ratio = putPooled.percentile(0.5) / rawPooled.percentile(0.5)
        ratioLine.add("p50_ratio_vs_raw", p50Ratio, digits: 2)
        ratioLine.add("raw_separate_process_p50_us", apartPooled.percentile(0.5), digits: 1)
        ratioLine.add("p50_ratio_vs_raw_separate_process", putPooled.percentile(0.5) / apartPooled.percentile(0.5), digits: 2)
        ratioLine.emit()

        // The same comparison with placement fixed, for the record (the target is the line
        // above): ferryd and the raw server's process on one CPU, the client on that CPU and
        // then on another. Left alone, the baseline's client and server tend to share a CPU and
        // ferryd and its client not to, and the round trips they pay differ by the wake-ups of
        // halted CPUs.
        if let placed = try placedLatencies(daemon: daemon, raw: apart, request: request) { placed.emit() }

        // Single puts: p50/p99 and throughput with 1, 4 and 16 clients (one connection each).
        var onePerSecond = 0.0
        var sixteenPerSecond = 0.0
        for clients in [1, 4, 16] {
            let cpuBefore = daemon.cpuSeconds()
            let (latencies, seconds) = try await singlePuts(daemon: daemon, clients: clients, total: puts)
            let cpu = daemon.cpuSeconds() - cpuBefore
            let rate = Double(latencies.count) / seconds
            var line = ResultLine("ipc.put")
            line.add("clients", clients)
            line.add("puts", latencies.count)
            line.add("puts_per_s", Int(rate.rounded()))
            line.add("p50_us", latencies.percentile(0.5), digits: 1)
            line.add("p99_us", latencies.percentile(0.99), digits: 1)
            // The daemon's own CPU per put (the rest of a round trip is waiting and waking).
            line.add("ferryd_cpu_us_per_put", cpu * 1e6 / Double(max(1, latencies.count)), digits: 1)
            if clients == 1 {
                onePerSecond = rate
            } else {
                line.add("rate_vs_1_client", rate / onePerSecond, digits: 2)
            }
            if clients == 16 { sixteenPerSecond = rate }
            line.emit()
        }

        // PutMany through the daemon vs the store alone, same batches, same durability, batch by
        // batch in turn so that both see the same machine (its speed drifts over a run).
        let daemonCPUBefore = daemon.cpuSeconds()
        let (viaDaemon, alone, aloneCPU) = try putManyAgainstStoreAlone(daemon: daemon, directory: try scratch.subdirectory("alone"))
        let daemonCPU = daemon.cpuSeconds() - daemonCPUBefore
        let manyRecords = Double(max(1, putManyRecords / putManyBatch) * putManyBatch)
        var many = ResultLine("ipc.put_many")
        many.add("records", putManyRecords)
        many.add("batch", putManyBatch)
        many.add("records_per_s", Int(viaDaemon.rounded()))
        many.add("store_alone_per_s", Int(alone.rounded()))
        many.add("ratio_vs_store", viaDaemon / alone, digits: 2)
        // CPU per record on each side (steadier than rates): ferryd's whole process, and this
        // process while it runs the store alone (its writer and checkpointer threads included).
        many.add("ferryd_cpu_us_per_record", daemonCPU * 1e6 / manyRecords, digits: 2)
        many.add("store_alone_cpu_us_per_record", aloneCPU * 1e6 / manyRecords, digits: 2)
        many.emit()

        // Watch fan-out: every put reaches every watcher; latency from the put's send to arrival.
        let delivery = try await watchFanOut(daemon: daemon)
        var watch = ResultLine("ipc.watch")
        watch.add("watchers", watchers)
        watch.add("puts", watchedPuts)
        watch.add("deliveries", delivery.count)
        watch.add("p50_ms", delivery.percentile(0.5) / 1000, digits: 2)
        watch.add("p99_ms", delivery.percentile(0.99) / 1000, digits: 2)
        watch.emit()

        var rss = ResultLine("ipc.rss")
        rss.add("ferryd_peak_mb", Double(daemon.peakResidentBytes() ?? 0) / 1_048_576, digits: 1)
        rss.emit()

        let scaling = sixteenPerSecond / onePerSecond
        let manyRatio = viaDaemon / alone
        let watchP99 = delivery.percentile(0.99) / 1000
        var summary = ResultLine("ipc.summary")
        summary.add("put_p50_vs_raw", p50Ratio, digits: 2)
        summary.add("target_put_p50_vs_raw", "<=3")
        summary.add("clients16_vs_1", scaling, digits: 2)
        summary.add("target_clients16_vs_1", ">=2")
        summary.add("put_many_vs_store", manyRatio, digits: 2)
        summary.add("target_put_many_vs_store", ">=0.7")
        summary.add("watch_p99_ms", watchP99, digits: 2)
        summary.add("target_watch_p99_ms", "<5")
        let pass = p50Ratio <= 3 && scaling >= 2 && manyRatio >= 0.7 && watchP99 < 5
        summary.add("result", pass ? "pass" : "fail")
        summary.emit()
    }

    // MARK: Phases

    /// Single puts from `clients` threads, each with its own connection and a plain blocking
    /// socket (what most apps do; no client library overhead in the figure).
    private func singlePuts(daemon: Ferryd, clients: Int, total: Int) async throws -> ([Double], Double) {
        let perClient = max(1, total / clients)
        let request = VarlinkCallMessage(method: "io.ferry.Store.Put",
                                         parameters: ["entity": "note", "payload": .object(Self.payload)]).encoded()
        let connections = try (0..<clients).map { _ in try BlockingConnection(path: daemon.socket) }
        for c in connections { _ = try c.roundTrip(request) }   // warm up
        let results = LatencyBox()
        let group = DispatchGroup()
        let start = Monotonic.nanos()
        for c in connections {
            group.enter()
            Thread.detachNewThread {
                var out: [Double] = []
                out.reserveCapacity(perClient)
                for _ in 0..<perClient {
                    let t0 = Monotonic.nanos()
                    guard let reply = try? c.roundTrip(request), reply.contains(UInt8(ascii: "r")) else { break }
                    out.append(Double(Monotonic.nanos() - t0) / 1000)
                }
                results.add(out)
                group.leave()
            }
        }
        group.wait()
        let seconds = Double(Monotonic.nanos() - start) / 1e9
        let all = results.all
        if all.count < perClient * clients { throw BenchError("single puts failed part-way (\(all.count) of \(perClient * clients))") }
        return (all, seconds)
    }

    /// Raw round trips (`raw`, a server process of its own) and single puts, five rounds of 400
    /// each, interleaved, with both servers pinned to the first CPU this process may use and the
    /// client to the first, then to the second. Nil with fewer than two CPUs or when pinning is
    /// refused. Every thread's CPUs are given back after.
    private func placedLatencies(daemon: Ferryd, raw: RawPingPong, request: [UInt8]) throws -> ResultLine? {
        let cpus = CPUAffinity.available
        guard cpus.count >= 2, let rawServer = raw.serverProcessID else { return nil }
        let connection = try BlockingConnection(path: daemon.socket)
        defer {
            CPUAffinity.pinProcess(daemon.processID, to: cpus)
            CPUAffinity.pin(rawServer, to: cpus)
        }
        var line = ResultLine("ipc.put_latency_placed")
        line.add("server_cpu", cpus[0])
        for (name, clientCPU) in [("same_cpu", cpus[0]), ("other_cpu", cpus[1])] {
            guard CPUAffinity.pinProcess(daemon.processID, to: [cpus[0]]), CPUAffinity.pin(rawServer, to: [cpus[0]]) else { return nil }
            guard let samples = try interleavedRounds(baselines: [raw], connection: connection, request: request, clientCPU: clientCPU) else { return nil }
            let rawP50 = samples.raw[0].percentile(0.5), putP50 = samples.put.percentile(0.5)
            line.add("\(name)_raw_p50_us", rawP50, digits: 1)
            line.add("\(name)_put_p50_us", putP50, digits: 1)
            line.add("\(name)_ratio", putP50 / rawP50, digits: 2)
        }
        return line
    }

    /// Five rounds: 400 round trips to each baseline in turn, then 400 single puts on
    /// `connection`, all made by one new thread (pinned to `clientCPU` when given), so that
    /// the two sides of a ratio differ only in their servers. Latencies in microseconds, per
    /// baseline and for the puts; nil when the thread may not be pinned.
    private func interleavedRounds(baselines: [RawPingPong], connection: BlockingConnection, request: [UInt8],
                                   clientCPU: Int?) throws -> (raw: [[Double]], put: [Double])? {
        let result = HandOff<Result<(raw: [[Double]], put: [Double])?, Error>>()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            result.value = Result {
                if let clientCPU, !CPUAffinity.pin(0, to: [clientCPU]) { return nil }
                var rawSamples = [[Double]](repeating: [], count: baselines.count), putSamples: [Double] = []
                for _ in 0..<5 {
                    for (i, baseline) in baselines.enumerated() { rawSamples[i] += try baseline.measure(rounds: 400) }
                    for _ in 0..<400 {
                        let t0 = Monotonic.nanos()
                        let reply = try connection.roundTrip(request)
                        guard reply.contains(UInt8(ascii: "r")) else { throw BenchError("a single put failed: \(String(decoding: reply, as: UTF8.self))") }
                        putSamples.append(Double(Monotonic.nanos() - t0) / 1000)
                    }
                }
                return (rawSamples, putSamples)
            }
        }
        done.wait()
        guard let outcome = result.value else { throw BenchError("the client thread gave no result") }
        return try outcome.get()
    }

    private func batchItems(_ b: Int) -> [JSONValue] {
        (0..<putManyBatch).map { i in
            ["entity": "item", "id": .string(String(format: "B%06d-%04d", b, i)), "payload": .object(Self.payload)]
        }
    }

    /// PutMany over a plain blocking connection, and the same batches put into a store of the
    /// daemon's configuration directly, alternating. Each batch's request is encoded before its
    /// clock starts on both sides. Returns records/s of each, and the CPU seconds this process
    /// used while the store alone wrote.
    private func putManyAgainstStoreAlone(daemon: Ferryd, directory: String) throws -> (daemon: Double, alone: Double, aloneCPU: Double) {
        let connection = try BlockingConnection(path: daemon.socket)
        var config = StoreConfiguration(directory: directory)
        config.durability = .normal
        let store = try Store(configuration: config)
        let text = JSONWriter.string(.object(Self.payload))
        let batches = max(1, putManyRecords / putManyBatch)
        var daemonNanos: UInt64 = 0
        var aloneNanos: UInt64 = 0
        var aloneCPU = 0.0
        for b in 0..<batches {
            let request = VarlinkCallMessage(method: "io.ferry.Store.PutMany", parameters: ["records": .array(batchItems(b))]).encoded()
            var t0 = Monotonic.nanos()
            let reply = try connection.roundTrip(request)
            daemonNanos += Monotonic.nanos() - t0
            if reply.starts(with: Array(#"{"error""#.utf8)) {
                throw BenchError("PutMany failed: \(String(decoding: reply.prefix(300), as: UTF8.self))")
            }
            let requests = (0..<putManyBatch).map { i in
                PutRequest(entity: "item", id: String(format: "B%06d-%04d", b, i), payload: text)
            }
            let cpu0 = ProcessCPU.preciseSeconds()
            t0 = Monotonic.nanos()
            _ = try store.putMany(requests)
            aloneNanos += Monotonic.nanos() - t0
            aloneCPU += ProcessCPU.preciseSeconds() - cpu0
        }
        let records = Double(batches * putManyBatch)
        return (records / (Double(daemonNanos) / 1e9), records / (Double(aloneNanos) / 1e9), aloneCPU)
    }

    /// Watchers on plain sockets, read by one thread with poll(2): the figure is the daemon's
    /// delivery time, from just before a put is sent to the moment a watcher's socket has the
    /// change, not the cost of a client library.
    private func watchFanOut(daemon: Ferryd) async throws -> [Double] {
        let sent = SentTimes()
        var fds: [Int32] = []
        let call = Array(#"{"method":"io.ferry.Store.Watch","more":true,"parameters":{"entities":["watched"]}}"#.utf8) + [0]
        for _ in 0..<watchers {
            let fd = try BlockingConnection.connect(path: daemon.socket)
            _ = call.withUnsafeBytes { write(fd, $0.baseAddress!, call.count) }
            fds.append(fd)
        }
        defer { for fd in fds { close(fd) } }
        let expected = watchedPuts
        let latencies = LatencyBox()
        let ready = Counter()
        let receiver = Thread { [fds] in
            var polls = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            var partial = [[UInt8]](repeating: [], count: fds.count)
            var received = [Int](repeating: 0, count: fds.count)
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var out: [Double] = []
            let marker = Array(#""id":"W"#.utf8)
            while received.contains(where: { $0 < expected }) {
                guard poll(&polls, nfds_t(polls.count), 10_000) > 0 else { break }
                for i in polls.indices where polls[i].revents != 0 {
                    let n = buffer.withUnsafeMutableBytes { read(polls[i].fd, $0.baseAddress!, $0.count) }
                    // Read time, per read: a later put's change may already be in this read.
                    let now = Monotonic.nanos()
                    if n <= 0 { received[i] = expected; continue }
                    for byte in buffer[0..<n] {
                        if byte != 0 { partial[i].append(byte); continue }
                        let message = partial[i]
                        partial[i].removeAll(keepingCapacity: true)
                        guard let at = ByteSearch.firstRange(of: marker, in: message) else { ready.increment(); continue }
                        var number = 0
                        var k = at.upperBound
                        while k < message.count, message[k] >= 48, message[k] <= 57 { number = number * 10 + Int(message[k] - 48); k += 1 }
                        if let t0 = sent.time(of: "W\(number)") { out.append(now > t0 ? Double(now - t0) / 1000 : 0) }
                        received[i] += 1
                    }
                }
            }
            latencies.add(out)
        }
        receiver.start()
        let deadline = Date().addingTimeInterval(30)
        while ready.value < watchers && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        let writer = try BlockingConnection(path: daemon.socket)
        for i in 0..<expected {
            let request = VarlinkCallMessage(method: "io.ferry.Store.Put",
                                             parameters: ["entity": "watched", "id": .string("W\(i)"), "payload": .object(Self.payload)]).encoded()
            sent.record("W\(i)", Monotonic.nanos())
            _ = try writer.roundTrip(request)
            try await Task.sleep(for: .milliseconds(2))
        }
        while latencies.all.isEmpty && !receiver.isFinished && Date() < deadline.addingTimeInterval(30) {
            try await Task.sleep(for: .milliseconds(20))
        }
        return latencies.all
    }
}

/// When each watched put was sent.
final class SentTimes: @unchecked Sendable {
    // @unchecked: `times` is only touched with `lock` held.
    private let lock = NSLock()
    private var times: [String: UInt64] = [:]
    func record(_ id: String, _ t: UInt64) { lock.lock(); times[id] = t; lock.unlock() }
    func time(of id: String) -> UInt64? { lock.lock(); defer { lock.unlock() }; return times[id] }
}

final class Counter: @unchecked Sendable {
    // @unchecked: `count` is only touched with `lock` held.
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

extension Array where Element == Double {
    /// The value below which `q` of the samples fall (nearest rank).
    func percentile(_ q: Double) -> Double {
        guard !isEmpty else { return 0 }
        let sorted = self.sorted()
        let rank = Swift.min(sorted.count - 1, Swift.max(0, Int((q * Double(sorted.count)).rounded(.up)) - 1))
        return sorted[rank]
    }
}

/// A ferryd process for the benchmark (Durability=normal), found next to ferry-bench.
final class Ferryd {
    let socket: String
    private let process = Process()

    init(directory: String, extraConfig: String = "") throws {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let ferryd = URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("ferryd").path
        guard FileManager.default.isExecutableFile(atPath: ferryd) else {
            throw BenchError("ferryd not found at \(ferryd): build it in the same configuration (swift build -c release)")
        }
        let config = directory + "/ferryd.conf"
        try ("[Store]\nDurability=normal\n[Daemon]\nLogLevel=warning\n" + extraConfig).write(toFile: config, atomically: true, encoding: .utf8)
        socket = directory + "/run/ferryd.sock"
        process.executableURL = URL(fileURLWithPath: ferryd)
        process.arguments = ["--config", config, "--state-dir", directory + "/state", "--socket", socket]
        var env = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "JOURNAL_STREAM", "WATCHDOG_USEC"] { env.removeValue(forKey: key) }
        process.environment = env
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let c = try? VarlinkClient(address: "unix:" + socket) { c.close(); return }
            usleep(20_000)
        }
        throw BenchError("ferryd did not start within 30 s")
    }

    var processID: pid_t { process.processIdentifier }

    func peakResidentBytes() -> Int? { ProcessMemory.peakResidentBytes(of: process.processIdentifier) }

    /// CPU seconds the daemon used so far.
    func cpuSeconds() -> Double { ProcessCPU.seconds(of: process.processIdentifier) ?? 0 }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
    }
}

/// The raw baseline: a server on a Unix socket that, per request, reads the request, commits
/// one row to SQLite (WAL, synchronous=NORMAL) and writes a reply of the given size. The server is
/// a thread of this process, or (`separateProcess`) a process of its own, as ferryd is: then a
/// round trip pays the wake-ups between processes that ferryd's does.
final class RawPingPong: @unchecked Sendable {
    // @unchecked: the server (thread or process) owns the database and `serverFD`; the client
    // side only uses `clientFD`.
    private let requestSize: Int
    private let replySize: Int
    private let clientFD: Int32
    private var child: Process?

    init(directory: String, requestSize: Int, replySize: Int, separateProcess: Bool = false) throws {
        self.requestSize = requestSize
        self.replySize = replySize
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { throw BenchError("socketpair failed") }
        clientFD = fds[0]
        let serverFD = fds[1]
        let path = directory + "/raw.db"
        if separateProcess {
            let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
            let process = Process()
            process.executableURL = URL(fileURLWithPath: exe)
            process.arguments = [RawPingPong.serveCommand, path, String(requestSize), String(replySize)]
            process.standardInput = FileHandle(fileDescriptor: serverFD, closeOnDealloc: false)
            try process.run()
            close(serverFD)
            child = process
        } else {
            let db = try RawPingPong.open(path)
            let thread = Thread { RawPingPong.serve(fd: serverFD, db: db, requestSize: requestSize, replySize: replySize) }
            thread.start()
        }
    }

    /// The server's process, when it has one of its own.
    var serverProcessID: pid_t? { child?.processIdentifier }

    deinit {
        close(clientFD)
        child?.waitUntilExit()
    }

    /// The hidden ferry-bench command a separate server process runs: `raw-serve DB REQUEST REPLY`,
    /// serving the socket it has as standard input.
    static let serveCommand = "raw-serve"

    /// Serves standard input for `raw-serve` until the client closes it.
    static func serveStandardInput(_ arguments: ArraySlice<String>) throws -> Never {
        let a = Array(arguments)
        guard a.count == 3, let request = Int(a[1]), let reply = Int(a[2]) else { throw BenchError("usage: raw-serve DB REQUEST REPLY") }
        serve(fd: 0, db: try open(a[0]), requestSize: request, replySize: reply)
        exit(0)
    }

    private static func open(_ path: String) throws -> Database {
        let db = try Database(path: path)
        try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        return db
    }

    private static func serve(fd: Int32, db: Database, requestSize: Int, replySize: Int) {
        var buffer = [UInt8](repeating: 0, count: requestSize)
        let reply = [UInt8](repeating: 0x61, count: replySize)
        let body = String(repeating: "x", count: 200)
        while true {
            var got = 0
            while got < requestSize {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, requestSize - got) }
                if n <= 0 { return }
                got += n
            }
            do {
                try db.execute("BEGIN")
                let s = try db.cached("INSERT INTO t (body) VALUES (?)")
                s.bind(1, body)
                try s.run()
                try db.execute("COMMIT")
            } catch { return }
            _ = reply.withUnsafeBytes { write(fd, $0.baseAddress!, replySize) }
        }
    }

    /// Round-trip latencies in microseconds.
    func measure(rounds: Int) throws -> [Double] {
        let request = [UInt8](repeating: 0x62, count: requestSize)
        var buffer = [UInt8](repeating: 0, count: replySize)
        var out: [Double] = []
        for _ in 0..<(rounds + 100) {
            let t0 = Monotonic.nanos()
            _ = request.withUnsafeBytes { write(clientFD, $0.baseAddress!, requestSize) }
            var got = 0
            while got < replySize {
                let n = buffer.withUnsafeMutableBytes { read(clientFD, $0.baseAddress! + got, replySize - got) }
                if n <= 0 { throw BenchError("raw baseline connection failed") }
                got += n
            }
            out.append(Double(Monotonic.nanos() - t0) / 1000)
        }
        return Array(out.dropFirst(100))
    }
}

/// A value one thread sets before signalling a semaphore and another reads after waiting on it.
final class HandOff<Value>: @unchecked Sendable {
    // @unchecked: the semaphore orders the one write before the read.
    var value: Value?
}

/// Collects latencies from several threads.
final class LatencyBox: @unchecked Sendable {
    // @unchecked: `values` is only touched with `lock` held.
    private let lock = NSLock()
    private var values: [Double] = []
    func add(_ more: [Double]) { lock.lock(); values += more; lock.unlock() }
    var all: [Double] { lock.lock(); defer { lock.unlock() }; return values }
}

/// A blocking Varlink connection: write a call, read until the NUL that ends its reply.
final class BlockingConnection: @unchecked Sendable {
    // @unchecked: each instance is used by one thread at a time.
    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)

    /// A connected Unix stream socket.
    static func connect(path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() where i < raw.count - 1 { raw[i] = b }
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if rc != 0 { close(fd); throw BenchError("connect \(path) failed") }
        return fd
    }

    init(path: String) throws {
        fd = try BlockingConnection.connect(path: path)
    }

    deinit { close(fd) }

    func roundTrip(_ request: [UInt8]) throws -> [UInt8] {
        var sent = 0
        while sent < request.count {
            let n = request.withUnsafeBytes { write(fd, $0.baseAddress! + sent, request.count - sent) }
            if n <= 0 { throw BenchError("write failed") }
            sent += n
        }
        var reply: [UInt8] = []
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n <= 0 { throw BenchError("read failed") }
            reply.append(contentsOf: buffer[0..<n])
            if buffer[n - 1] == 0 { return reply }
        }
    }
}
