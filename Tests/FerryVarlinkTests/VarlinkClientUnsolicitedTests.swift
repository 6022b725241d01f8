import Foundation
import Glibc
import Testing
@testable import FerryVarlink

/// A reply that comes before any call: a server over its connection limit sends an error and
/// closes (ferryd's TooManyConnections), which the client's calls then fail with; any other
/// reply without a call breaks the protocol.
@Suite struct VarlinkClientUnsolicitedTests {
    /// A Unix socket server that sends `bytes` to its one client on accepting it, then closes.
    static func server(sending bytes: [UInt8]) throws -> (address: String, directory: TemporaryDirectory) {
        let directory = TemporaryDirectory()
        let path = directory.path + "/s.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (i, b) in path.utf8.enumerated() { buffer[i] = b }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0 && listen(fd, 4) == 0)
        Thread {
            let client = accept(fd, nil, nil)
            _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            usleep(200_000)
            close(client)
            close(fd)
        }.start()
        return ("unix:" + path, directory)
    }

    @Test func anErrorBeforeAnyCallFailsTheCallsWithIt() async throws {
        let error = VarlinkReplyMessage(VarlinkError("org.example.TooMany", parameters: ["limit": 5])).encoded()
        let (address, directory) = try Self.server(sending: error)
        defer { directory.remove() }
        let client = try VarlinkClient(address: address)
        try await Task.sleep(for: .milliseconds(100))   // the error is there before the call
        do {
            _ = try await client.call(VarlinkCallMessage(method: "org.example.Ping", parameters: [:]))
            Issue.record("the call succeeded")
        } catch {
            guard case .remote(let remote) = error else { Issue.record("\(error)"); return }
            #expect(remote.name == "org.example.TooMany" && remote.parameters["limit"] == 5)
        }
    }

    /// The same when the server has closed already and the call's write fails (EPIPE): the
    /// error it sent first is read and fails the call, not a bare "connection closed".
    @Test func anErrorSentBeforeTheServerClosedFailsTheCallWithIt() async throws {
        let error = VarlinkReplyMessage(VarlinkError("org.example.TooMany", parameters: ["limit": 5])).encoded()
        let (address, directory) = try Self.server(sending: error)
        defer { directory.remove() }
        let client = try VarlinkClient(address: address)
        try await Task.sleep(for: .milliseconds(600))   // the server has closed by now
        do {
            _ = try await client.call(VarlinkCallMessage(method: "org.example.Ping", parameters: [:]))
            Issue.record("the call succeeded")
        } catch {
            guard case .remote(let remote) = error else { Issue.record("\(error)"); return }
            #expect(remote.name == "org.example.TooMany")
        }
    }

    @Test func anyOtherReplyBeforeAnyCallBreaksTheProtocol() async throws {
        let reply = VarlinkReplyMessage(parameters: ["x": 1]).encoded()
        let (address, directory) = try Self.server(sending: reply)
        defer { directory.remove() }
        let client = try VarlinkClient(address: address)
        try await Task.sleep(for: .milliseconds(100))
        do {
            _ = try await client.call(VarlinkCallMessage(method: "org.example.Ping", parameters: [:]))
            Issue.record("the call succeeded")
        } catch {
            guard case .protocolViolation = error else { Issue.record("\(error)"); return }
        }
    }
}
