import FerryClient
import FerryJSON
import FerryVarlink
import Foundation

/// The phases the sync benchmarks share: A (with `writer` on its socket) writes `bulk`
/// records through PutMany, B's Watch (`watcher`) counts them in.
struct TwoDeviceRun {
    let writer: BlockingConnection
    let watcher: Arrivals
    let batch: Int
    let payload: [String: JSONValue]

    /// PutMany requests of `batches` × `batch` records with ids `<prefix>NNNNNN-NNNN`, encoded
    /// before any clock starts.
    func requests(prefix: String, batches: Int) -> [[UInt8]] {
        (0..<batches).map { bi in
            VarlinkCallMessage(method: "io.ferry.Store.PutMany", parameters: ["records": .array((0..<batch).map { i in
                ["entity": "bulk", "id": .string(String(format: "\(prefix)%06d-%04d", bi, i)), "payload": .object(payload)]
            })]).encoded()
        }
    }

    /// Sends `requests` on A, failing on an error reply.
    func write(_ requests: [[UInt8]]) throws {
        for request in requests {
            let reply = try writer.roundTrip(request)
            if reply.starts(with: Array(#"{"error""#.utf8)) { throw BenchError("PutMany failed: \(String(decoding: reply.prefix(300), as: UTF8.self))") }
        }
    }

    /// Waits until B's Watch counted `total` more `bulk` records than `before`.
    func waitForArrivals(_ total: Int, after before: Int, timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while watcher.bulkCount - before < total {
            if ContinuousClock.now > deadline { throw BenchError("only \(watcher.bulkCount - before) of \(total) records reached B in \(timeout)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// When each stage of a staged run ended (Monotonic nanoseconds).
    struct Stages {
        var records: Int
        var started, written, pushed, resumed, applied: UInt64
        func rate(_ from: UInt64, _ to: UInt64) -> Int { Int(Double(records) / (Double(to - from) / 1e9)) }
    }

    /// Each side alone, for where the time goes: B paused while A writes `batches` batches and
    /// pushes them (its outbox empties), then B resumed until its Watch has them all.
    func staged(a: FerryClient, b: FerryClient, batches: Int) async throws -> Stages {
        try await b.setSyncPaused(true)
        let requests = requests(prefix: "S", batches: batches)
        let before = watcher.bulkCount
        let started = Monotonic.nanos()
        try write(requests)
        let written = Monotonic.nanos()
        while try await !a.outbox(limit: 1).isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        let pushed = Monotonic.nanos()
        try await b.setSyncPaused(false)
        let resumed = Monotonic.nanos()
        try await waitForArrivals(requests.count * batch, after: before, timeout: .seconds(900))
        return Stages(records: requests.count * batch, started: started, written: written, pushed: pushed,
                      resumed: resumed, applied: Monotonic.nanos())
    }
}
