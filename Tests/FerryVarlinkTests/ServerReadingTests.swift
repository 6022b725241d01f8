import FerryJSON
import Foundation
import Glibc
import Synchronization
import Testing

@testable import FerryVarlink

/// How the server takes requests out of its sockets: a client blocked reading its reply is
/// woken once, by the reply, and bursts of any size arrive whole, once, in order.
@Suite struct ServerReadingTests {
    static let definition = """
        interface org.ferry.reading

        method Block(milliseconds: int) -> ()
        method Echo(n: int, pad: string, delay: ?int) -> (n: int)
        method Add(n: int, pad: string, delay: ?int) -> (n: int)
        """

    /// Set while Block's handler holds the event loop.
    final class Blocking: Sendable {
        let inside = Atomic<Bool>(false)
    }

    func withServer(_ body: (String, Blocking) async throws -> Void) async throws {
        let blocking = Blocking()
        var service = VarlinkService(vendor: "test", product: "reading", version: "1", url: "https://example.invalid")
        try service.register(Self.definition, methods: [
            "Block": .inline { call throws(VarlinkError) in
                blocking.inside.store(true, ordering: .releasing)
                usleep(UInt32(call.parameters["milliseconds"]?.intValue ?? 0) * 1000)
                return .values([:])
            },
            // `delay`: milliseconds the handler takes, on the loop thread.
            "Echo": .inline { call throws(VarlinkError) in
                usleep(UInt32(call.parameters["delay"]?.intValue ?? 0) * 1000)
                return .values(["n": call.parameters["n"] ?? 0])
            },
            "Add": .batched { calls in
                calls.map { call in
                    usleep(UInt32(call.parameters["delay"]?.intValue ?? 0) * 1000)
                    return .success(.values(["n": call.parameters["n"] ?? 0]))
                }
            },
        ])
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/s.sock"
        let server = VarlinkServer(service: service, endpoint: .unixPath(path))
        try await server.start()
        do { try await body(path, blocking) } catch { await server.stop(); throw error }
        await server.stop()
    }

    /// A blocking Unix-socket client, as simple clients are. (@unchecked: one thread at a time
    /// uses it; a test hands it to another thread and waits.)
    final class BlockingClient: @unchecked Sendable {
        let fd: Int32
        init(path: String) throws {
            fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard fd >= 0, rc == 0 else { throw SystemCallError(call: "connect \(path)", errno: errno) }
        }
        deinit { Glibc.close(fd) }

        func send(_ text: String) -> Bool {
            let bytes = Array(text.utf8) + [0]
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }

        /// Reads until `count` NUL-terminated messages arrived; returns them.
        func receive(_ count: Int) -> [String] {
            var messages: [String] = []
            var current: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while messages.count < count {
                let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                for byte in buffer[0..<n] {
                    if byte == 0 { messages.append(String(decoding: current, as: UTF8.self)); current = [] } else { current.append(byte) }
                }
            }
            return messages
        }
    }

    /// This thread's voluntary context switches: each time it slept, for example in `read`.
    static func voluntarySwitches() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8) else { return -1 }
        for line in status.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
            return Int(line.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? -1
        }
        return -1
    }

    /// While the loop is busy, a client sends a call and sleeps reading its reply. When the loop
    /// takes the request out of the socket, that must not wake the client (Linux wakes a
    /// reader of a Unix socket when its peer frees room in it): the reply wakes it, once. The
    /// call takes 50 ms, so that a client woken for nothing would have time to sleep again.
    @Test(arguments: ["Echo", "Add"])
    func aClientWaitingForItsReplyIsWokenOnceByTheReply(method: String) async throws {
        try await withServer { path, blocking in
            let busy = try BlockingClient(path: path)
            let client = try BlockingClient(path: path)
            // A first call, so that the connection is accepted and settled.
            #expect(client.send(#"{"method":"org.ferry.reading.\#(method)","parameters":{"n":0,"pad":""}}"#))
            #expect(client.receive(1).count == 1)
            #expect(busy.send(#"{"method":"org.ferry.reading.Block","parameters":{"milliseconds":300}}"#))
            let deadline = Date().addingTimeInterval(10)
            while !blocking.inside.load(ordering: .acquiring) && Date() < deadline { usleep(1000) }
            let result = Mutex<(switches: Int, replies: [String])>((-1, []))
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                let before = Self.voluntarySwitches()
                _ = client.send(#"{"method":"org.ferry.reading.\#(method)","parameters":{"n":7,"pad":"","delay":50}}"#)
                let replies = client.receive(1)
                let after = Self.voluntarySwitches()
                result.withLock { $0 = (after - before, replies) }
                done.signal()
            }
            thread.start()
            done.wait()
            let (switches, replies) = result.withLock { $0 }
            #expect(replies == [#"{"parameters":{"n":7}}"#])
            #expect(switches == 1, "the client slept \(switches) times waiting for one reply")
            #expect(busy.receive(1).count == 1)
        }
    }

    /// Bursts far larger than one read (the server reads 64 KiB at a time), written at once:
    /// every call is answered once, in order.
    @Test(arguments: ["Echo", "Add"])
    func burstsOfAnySizeAreAnsweredOnceInOrder(method: String) async throws {
        try await withServer { path, _ in
            let client = try BlockingClient(path: path)
            for (calls, pad) in [(1, 0), (700, 90), (3000, 10), (40, 20_000)] {
                let padding = String(repeating: "p", count: pad)
                let fd = client.fd
                let writer = Thread {
                    var burst = ""
                    for n in 0..<calls { burst += #"{"method":"org.ferry.reading.\#(method)","parameters":{"n":\#(n),"pad":"\#(padding)"}}"# + "\0" }
                    let bytes = Array(burst.utf8)
                    var offset = 0
                    while offset < bytes.count {
                        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
                        if n <= 0 { return }
                        offset += n
                    }
                }
                writer.start()
                let replies = client.receive(calls)
                let expected = (0..<calls).map { #"{"parameters":{"n":\#($0)}}"# }
                let wrong = replies.indices.first { $0 >= expected.count || replies[$0] != expected[$0] }
                #expect(replies.count == calls && wrong == nil,
                        "\(calls) calls of \(pad) bytes: \(replies.count) replies, first wrong: \(wrong.map { replies[$0] } ?? "none")")
            }
        }
    }
}
