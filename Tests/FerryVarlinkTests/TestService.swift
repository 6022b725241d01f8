import FerryJSON
import Foundation
import Glibc
import Testing

@testable import FerryVarlink

/// The interface the server tests call.
enum TestInterface {
    static let name = "org.ferry.test"

    static let definition = """
        # Methods for exercising FerryVarlink's server.
        interface org.ferry.test

        type Item (name: string, count: int)

        # Echoes its input back.
        method Echo(text: string, number: ?int) -> (text: string, number: ?int)

        method Add(a: int, b: int) -> (sum: int)

        # Replies after a delay, to show replies keep call order.
        method Sleep(milliseconds: int, tag: string) -> (tag: string)

        # Streams `count` replies (requires "more").
        method Count(count: int) -> (index: int)

        # Streams `chunk`-sized replies until the peer is too slow, then fails with
        # ResumeFrom (requires "more").
        method Flood(chunk: int) -> (index: int, data: string)

        # Sends one reply, then waits for events until the client goes away.
        method Watch() -> (event: string)

        # Records a value (meant to be called oneway).
        method Record(value: string) -> ()

        method Recorded() -> (values: []string)

        # Fails with org.ferry.test.Custom.
        method Fail(detail: string) -> ()

        method Unimplemented() -> ()

        method Deep(value: object) -> ()

        # Objects numbered 0 to count - 1, the first also on its own.
        method Objects(count: int) -> (first: ?object, all: []object)

        # `bytes` bytes of text, answered on the server's loop (no task).
        method Padding(bytes: int) -> (data: string)

        method Shapes(
          items: []Item,
          tags: [string]string,
          set: [string](),
          mode: (fast, slow),
          extra: ?(flag: bool),
          ratio: float
        ) -> (ok: bool)

        error ResumeFrom (cursor: int)
        error Custom (detail: string)
        """

    /// A service with `org.ferry.test` whose handlers report to `recorder`.
    static func service(recorder: Recorder) throws -> VarlinkService {
        var service = VarlinkService(
            vendor: "Ferry", product: "FerryVarlinkTests", version: "0.1", url: "https://example.invalid/ferry")
        try service.register(definition, methods: methods(recorder: recorder))
        return service
    }

    static func methods(recorder: Recorder) -> [String: VarlinkMethod] {
        [
            "Echo": VarlinkMethod { call, _ in
                var reply: [String: JSONValue] = ["text": call.parameters["text"] ?? ""]
                if let number = call["number"] { reply["number"] = number }
                return reply
            },
            "Add": VarlinkMethod { call, _ in
                ["sum": .int((call["a"]?.intValue ?? 0) + (call["b"]?.intValue ?? 0))]
            },
            "Sleep": VarlinkMethod { call, _ in
                try? await Task.sleep(for: .milliseconds(call["milliseconds"]?.intValue ?? 0))
                return ["tag": call["tag"] ?? ""]
            },
            "Count": VarlinkMethod(requiresMore: true) { call, sink throws(VarlinkError) in
                let count = call["count"]?.intValue ?? 0
                guard count > 0 else { throw .invalidParameter("count") }
                for index in 0..<(count - 1) {
                    do throws(VarlinkSinkError) {
                        try await sink.send(["index": .int(index)])
                    } catch {
                        return [:]
                    }
                }
                return ["index": .int(count - 1)]
            },
            "Flood": VarlinkMethod(requiresMore: true) { call, sink throws(VarlinkError) in
                let chunk = String(repeating: "x", count: Int(call["chunk"]?.intValue ?? 1024))
                var index: Int64 = 0
                while true {
                    do throws(VarlinkSinkError) {
                        try await sink.send(["index": .int(index), "data": .string(chunk)])
                        index += 1
                    } catch .peerTooSlow {
                        await recorder.record("flood too slow at \(index)")
                        throw VarlinkError("org.ferry.test.ResumeFrom", parameters: ["cursor": .int(index)])
                    } catch {
                        await recorder.record("flood stopped: \(error)")
                        return [:]
                    }
                }
            },
            "Watch": VarlinkMethod(requiresMore: true) { _, sink in
                do throws(VarlinkSinkError) {
                    try await sink.send(["event": "hello"])
                } catch {
                    await recorder.record("watch send failed: \(error)")
                    return [:]
                }
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(20))
                }
                await recorder.record("watch cancelled, connected=\(sink.isPeerConnected)")
                do throws(VarlinkSinkError) {
                    try await sink.send(["event": "late"])
                } catch {
                    await recorder.record("watch late send: \(error)")
                }
                return [:]
            },
            "Record": VarlinkMethod { call, _ in
                await recorder.record("record \(call["value"]?.stringValue ?? "")")
                return [:]
            },
            "Recorded": VarlinkMethod { _, _ in
                let values = await recorder.entries.filter { $0.hasPrefix("record ") }.map {
                    JSONValue.string(String($0.dropFirst("record ".count)))
                }
                return ["values": .array(values)]
            },
            "Fail": VarlinkMethod { call, _ throws(VarlinkError) in
                throw VarlinkError("org.ferry.test.Custom", parameters: ["detail": call["detail"] ?? ""])
            },
            "Deep": VarlinkMethod { _, _ in [:] },
            "Padding": .inline { call throws(VarlinkError) in
                .values(["data": .string(String(repeating: "p", count: Int(call.parameters["bytes"]?.intValue ?? 0)))])
            },
            "Objects": VarlinkMethod { call, _ in
                let count = Int(call.parameters["count"]?.intValue ?? 0)
                let all: [JSONValue] = (0..<count).map { ["i": .int(Int64($0)), "s": .string("{\"i\": \($0)}, [x]")] }
                var reply: [String: JSONValue] = ["all": .array(all)]
                if let first = all.first { reply["first"] = first }
                return reply
            },
            "Shapes": VarlinkMethod { _, _ in ["ok": true] },
        ]
    }
}

/// A running server on a fresh socket path, for one test.
struct TestServer {
    let server: VarlinkServer
    let path: String
    let directory: TemporaryDirectory
    let recorder: Recorder

    var address: String { "unix:\(path)" }

    /// Starts a server with the test interface; the caller must `stop()` it.
    static func start(
        configuration: VarlinkServerConfiguration = VarlinkServerConfiguration(),
        peerPolicy: @escaping VarlinkPeerPolicy = { _ in true }
    ) async throws -> TestServer {
        let directory = TemporaryDirectory()
        let recorder = Recorder()
        let path = directory.path + "/run/test.sock"
        let server = VarlinkServer(
            service: try TestInterface.service(recorder: recorder), endpoint: .unixPath(path),
            configuration: configuration, peerPolicy: peerPolicy,
            logger: { event in Task { await recorder.record("log: \(event)") } })
        try await server.start()
        return TestServer(server: server, path: path, directory: directory, recorder: recorder)
    }

    func client() throws -> VarlinkClient {
        try VarlinkClient(address: address)
    }

    func raw(timeout: Duration = .seconds(10)) throws -> RawConnection {
        try RawConnection(path: path, timeout: timeout)
    }

    func stop(gracePeriod: Duration = .seconds(2)) async {
        await server.stop(gracePeriod: gracePeriod)
        directory.remove()
    }
}

/// Runs `body` against a fresh server and always stops it.
func withTestServer(
    configuration: VarlinkServerConfiguration = VarlinkServerConfiguration(),
    peerPolicy: @escaping VarlinkPeerPolicy = { _ in true },
    _ body: (TestServer) async throws -> Void
) async throws {
    let server = try await TestServer.start(configuration: configuration, peerPolicy: peerPolicy)
    do {
        try await body(server)
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
}

extension VarlinkCallMessage {
    static func test(
        _ method: String, _ parameters: [String: JSONValue] = [:], oneway: Bool = false, more: Bool = false
    ) -> VarlinkCallMessage {
        VarlinkCallMessage(
            method: "\(TestInterface.name).\(method)", parameters: parameters, oneway: oneway, more: more)
    }
}
