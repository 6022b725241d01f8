import FerryJSON
import Foundation
import Glibc
import Testing

@testable import FerryVarlink

/// A fresh directory under /tmp, removed when the test's closure returns.
struct TemporaryDirectory {
    let path: String

    init() {
        var template = Array("/tmp/ferry-varlink-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(created != nil, "mkdtemp failed: \(errno)")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A Unix socket speaking raw bytes, for tests that must send what a proper client never
/// would. Non-blocking underneath and polled with `Task.sleep`, so a test waiting for a
/// reply never blocks a thread of the cooperative pool that the server's handlers need.
final class RawConnection {
    let fd: Int32
    private let timeout: Duration
    private var framer = VarlinkFramer(maxMessageSize: 64 << 20)

    init(path: String, timeout: Duration = .seconds(10)) throws {
        self.timeout = timeout
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemCallError(call: "socket", errno: errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw SystemCallError(call: "connect \(path)", errno: code)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit {
        Glibc.close(fd)
    }

    /// Writes all of `bytes`; returns false when the server closed the connection.
    @discardableResult
    func send(_ bytes: [UInt8]) async -> Bool {
        var offset = 0
        let deadline = ContinuousClock.now + timeout
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                guard errno == EAGAIN || errno == EWOULDBLOCK, ContinuousClock.now < deadline else { return false }
                try? await Task.sleep(for: .milliseconds(1))
                continue
            }
            offset += written
        }
        return true
    }

    @discardableResult
    func send(_ text: String) async -> Bool {
        await send(Array(text.utf8))
    }

    func sendCall(_ message: VarlinkCallMessage) async {
        await send(message.encoded())
    }

    enum ReadResult: Equatable {
        case message([UInt8])
        case endOfFile
        case timedOut
        /// The connection was reset (ECONNRESET), not ended.
        case reset
    }

    /// The next NUL-terminated message, end of file, or a timeout.
    func read() async -> ReadResult {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = ContinuousClock.now + timeout
        while true {
            if let message = try? framer.nextMessage() { return .message(message) }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { return .endOfFile }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == ECONNRESET { return .reset }
                guard errno == EAGAIN || errno == EWOULDBLOCK else { return .endOfFile }
                if ContinuousClock.now >= deadline { return .timedOut }
                try? await Task.sleep(for: .milliseconds(2))
                continue
            }
            framer.append(buffer[0..<count])
        }
    }

    /// The next message decoded as a reply; fails the test on anything else.
    func readReply(sourceLocation: SourceLocation = #_sourceLocation) async -> VarlinkReplyMessage? {
        switch await read() {
        case let .message(bytes):
            do {
                return try VarlinkReplyMessage.decode(bytes)
            } catch {
                Issue.record("undecodable reply: \(error)", sourceLocation: sourceLocation)
                return nil
            }
        case let other:
            Issue.record("expected a reply, got \(other)", sourceLocation: sourceLocation)
            return nil
        }
    }
}

/// Collects things handlers and loggers report, for tests to wait on.
actor Recorder {
    private(set) var entries: [String] = []

    func record(_ entry: String) {
        entries.append(entry)
    }

    /// Waits (up to `timeout`) until an entry satisfies `predicate`.
    func waitFor(
        timeout: Duration = .seconds(10), _ predicate: @Sendable (String) -> Bool
    ) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let hit = entries.first(where: predicate) { return hit }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return entries.first(where: predicate)
    }
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(timeout: Duration = .seconds(10), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}

extension VarlinkClientError {
    /// The remote error's name, or nil for other failures.
    var remoteName: String? { remoteError?.name }
}
