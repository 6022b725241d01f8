import FerryJSON
import Foundation
import Testing
@testable import FerryVarlink

/// Inline methods answer on the event loop; batched methods get every call of one loop turn,
/// across connections, in one handler call, and each caller its own reply, in call order.
@Suite(.serialized) struct VarlinkFastPathTests {
    static let definition = """
    # Fast-path test methods.
    interface org.ferry.fast

    # Doubles n, on the event loop.
    method Double(n: int) -> (n: int)

    # Adds n to a running total; fails for negative n.
    method Add(n: int) -> (total: int)

    # Always fails.
    method Fail() -> ()

    # Streams n = 0 from its task once Push runs, then what Push sends from the event loop.
    method Follow() -> (n: int)

    # Sends n = 1 to the running Follow from the event loop, once Follow has sent n = 0.
    method Push() -> ()

    error Negative (n: int)
    """

    /// Records the size of every batch the handler saw.
    final class Batches: @unchecked Sendable {
        // @unchecked: every property is touched with `lock` held.
        private let lock = NSLock()
        private var sizes: [Int] = []
        private var total: Int64 = 0
        func run(_ calls: [VarlinkCall]) -> [Result<VarlinkReplyParameters, VarlinkError>] {
            lock.lock(); defer { lock.unlock() }
            sizes.append(calls.count)
            return calls.map { call in
                let n = call.parameters["n"]?.intValue ?? 0
                if n < 0 { return .failure(VarlinkError("org.ferry.fast.Negative", parameters: ["n": .int(n)])) }
                total += n
                return .success(.json(Array(#"{"total":\#(total)}"#.utf8)))
            }
        }
        var seen: [Int] { lock.lock(); defer { lock.unlock() }; return sizes }
    }

    /// The sink of the running Follow call, published once its first reply was handed over.
    final class Follower: @unchecked Sendable {
        // @unchecked: `sink` is touched with `lock` held.
        private let lock = NSLock()
        private var current: VarlinkReplySink?
        private var pushRunning = false
        var sink: VarlinkReplySink? {
            get { lock.lock(); defer { lock.unlock() }; return current }
            set { lock.lock(); current = newValue; lock.unlock() }
        }
        /// Push's handler is running, so the event loop is busy until it returns.
        var pushing: Bool {
            get { lock.lock(); defer { lock.unlock() }; return pushRunning }
            set { lock.lock(); pushRunning = newValue; lock.unlock() }
        }
    }

    func withServer(_ body: (String, Batches) async throws -> Void) async throws {
        let batches = Batches()
        let follower = Follower()
        var service = VarlinkService(vendor: "test", product: "fast", version: "1", url: "https://example.invalid")
        try service.register(Self.definition, methods: [
            "Double": .inline { call throws(VarlinkError) in .values(["n": .int((call.parameters["n"]?.intValue ?? 0) * 2)]) },
            "Add": .batched { calls in batches.run(calls) },
            "Fail": .inline { _ throws(VarlinkError) in throw VarlinkError("org.ferry.fast.Negative", parameters: ["n": -1]) },
            "Follow": VarlinkMethod(requiresMore: true) { _, sink throws(VarlinkError) in
                let deadline = Date().addingTimeInterval(10)
                while !follower.pushing && Date() < deadline { try? await Task.sleep(for: .milliseconds(1)) }
                try? await sink.send(["n": 0])
                follower.sink = sink
                while sink.isPeerConnected && !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
                return ["n": -1]
            },
            "Push": .batched { calls in
                // On the loop thread, which therefore cannot write Follow's first reply (handed
                // over from Follow's task while this runs, so it waits in the loop's job queue).
                follower.pushing = true
                let deadline = Date().addingTimeInterval(10)
                while follower.sink == nil && Date() < deadline { usleep(1000) }
                _ = follower.sink?.sendNow(VarlinkEncodedReply(parameters: ["n": 1]))
                return calls.map { _ in .success(.json(Array("{}".utf8))) }
            },
        ])
        let path = NSTemporaryDirectory() + "varlink-fast-\(UUID().uuidString.prefix(8))/s.sock"
        let server = VarlinkServer(service: service, endpoint: .unixPath(path))
        try await server.start()
        do { try await body("unix:" + path, batches) } catch { await server.stop(); throw error }
        await server.stop()
    }

    @Test func inlineMethodsAnswerInOrderWithPipelining() async throws {
        try await withServer { address, _ in
            let client = try VarlinkClient(address: address)
            defer { client.close() }
            let results = try await withThrowingTaskGroup(of: (Int64, JSONValue).self) { group in
                for n in Int64(0)..<50 { group.addTask { (n, try await client.call("org.ferry.fast.Double", ["n": .int(n)])) } }
                var out: [(Int64, JSONValue)] = []
                for try await r in group { out.append(r) }
                return out
            }
            for (n, reply) in results { #expect(reply["n"] == .int(n * 2)) }
            do {
                _ = try await client.call("org.ferry.fast.Fail")
                Issue.record("Fail succeeded")
            } catch {
                #expect((error as? VarlinkClientError)?.remoteError?.name == "org.ferry.fast.Negative")
            }
            // Parameters are still checked against the interface first.
            do {
                _ = try await client.call("org.ferry.fast.Double", ["n": "two"])
                Issue.record("a string passed as int")
            } catch {
                #expect((error as? VarlinkClientError)?.remoteError == .invalidParameter("n"))
            }
        }
    }

    /// A reply pushed from the event loop (as a commit pushes a change to its watchers) never
    /// overtakes one the same call handed over earlier from its task (the first Watch reply).
    @Test func repliesPushedFromTheLoopKeepTheirOrderBehindEarlierOnes() async throws {
        try await withServer { address, _ in
            let follow = try VarlinkClient(address: address)
            let pusher = try VarlinkClient(address: address)
            defer { follow.close(); pusher.close() }
            var received: [Int64] = []
            let stream = follow.callMore("org.ferry.fast.Follow")
            _ = try await pusher.call("org.ferry.fast.Push")
            for try await reply in stream {
                received.append(reply["n"]?.intValue ?? -2)
                if received.count == 2 { break }
            }
            #expect(received == [0, 1])
        }
    }

    @Test func batchedCallsFromManyConnectionsEachGetTheirReply() async throws {
        try await withServer { address, batches in
            let clients = try (0..<20).map { _ in try VarlinkClient(address: address) }
            defer { clients.forEach { $0.close() } }
            let replies = try await withThrowingTaskGroup(of: JSONValue?.self) { group in
                for (i, client) in clients.enumerated() {
                    group.addTask {
                        do {
                            return try await client.call("org.ferry.fast.Add", ["n": .int(i == 7 ? -1 : 1)])
                        } catch {
                            #expect((error as? VarlinkClientError)?.remoteError?.name == "org.ferry.fast.Negative")
                            return nil
                        }
                    }
                }
                var out: [JSONValue?] = []
                for try await r in group { out.append(r) }
                return out
            }
            // 19 successes with distinct running totals 1...19, one typed failure.
            let totals = replies.compactMap { $0?["total"]?.intValue }.sorted()
            #expect(totals == Array(1...19))
            #expect(replies.filter { $0 == nil }.count == 1)
            #expect(batches.seen.reduce(0, +) == 20)
            // A oneway batched call runs and answers nothing; the connection stays usable.
            try await clients[0].oneway("org.ferry.fast.Add", ["n": 100])
            let after = try await clients[0].call("org.ferry.fast.Add", ["n": 0])
            #expect(after["total"] == 119)
        }
    }
}
