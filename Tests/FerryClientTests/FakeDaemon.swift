import FerryJSON
import Foundation
import Glibc
import Synchronization

/// A scripted Varlink service on a real Unix socket, standing in for ferryd where a test is
/// about the client's side of the wire: what it sends, and how it reads what comes back
/// (including replies a correct ferryd would never send). Real sockets and real framing;
/// only the answers are canned.
final class FakeDaemon: Sendable {
    /// One reply message.
    enum Reply: Sendable {
        /// A reply with these parameters; `continues` for all but the last of a `more` stream.
        case ok([String: JSONValue], continues: Bool = false)
        /// An error reply.
        case error(String, [String: JSONValue] = [:])
        /// Raw bytes (a NUL is appended).
        case raw(String)
        /// Close the connection instead of answering.
        case close
    }

    /// A call as it arrived.
    struct Call: Sendable {
        let method: String
        let parameters: [String: JSONValue]
        let more: Bool
    }

    let path: String
    private let directory: String
    private let listener: Int32
    private let received = Mutex<[Call]>([])
    private let handler: @Sendable (Call) -> [Reply]

    /// Starts listening on a fresh socket in a temporary directory.
    init(handler: @escaping @Sendable (Call) -> [Reply]) throws {
        var template = Array("/tmp/ferry-client-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        directory = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        path = directory + "/ferryd.sock"
        self.handler = handler
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(listener, 16) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// Every call received so far, in order.
    var calls: [Call] { received.withLock { $0 } }

    /// Stops listening and removes the socket's directory.
    func stop() {
        // Only shut the listener down: the accept thread closes it. Closing it here would let
        // its number be reused (by another test's socket) while that thread still accepts on it.
        shutdown(listener, Int32(SHUT_RDWR))
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func acceptLoop() {
        defer { close(listener) }
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            let thread = Thread { [self] in serve(fd) }
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            while let end = buffer.firstIndex(of: 0) {
                let message = Array(buffer[..<end])
                buffer.removeSubrange(...end)
                guard let call = decode(message) else { return }
                received.withLock { $0.append(call) }
                for reply in handler(call) {
                    guard send(reply, to: fd) else { return }
                }
            }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return }
            buffer.append(contentsOf: chunk[0..<count])
        }
    }

    private func decode(_ message: [UInt8]) -> Call? {
        guard let object = (try? JSONParser.parse(message))?.objectValue,
              let method = object["method"]?.stringValue else { return nil }
        return Call(method: method, parameters: object["parameters"]?.objectValue ?? [:],
                    more: object["more"]?.boolValue ?? false)
    }

    /// Writes one reply; false when the connection should end.
    private func send(_ reply: Reply, to fd: Int32) -> Bool {
        var bytes: [UInt8]
        switch reply {
        case .ok(let parameters, let continues):
            var object: [String: JSONValue] = ["parameters": .object(parameters)]
            if continues { object["continues"] = true }
            bytes = JSONWriter.serialize(.object(object))
        case .error(let name, let parameters):
            bytes = JSONWriter.serialize(.object(["error": .string(name), "parameters": .object(parameters)]))
        case .raw(let text):
            bytes = Array(text.utf8)
        case .close:
            return false
        }
        bytes.append(0)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }
}

/// Sample wire values.
enum Samples {
    static let hlc = "2025-01-31T17:04:05.123Z-0000-00112233445566aa"

    static func record(id: String = "A1", entity: String = "note", deleted: Bool = false,
                       payload: [String: JSONValue]? = ["title": "milk"], seq: Int64 = 7) -> JSONValue {
        var object: [String: JSONValue] = [
            "space": "private", "entity": .string(entity), "id": .string(id), "hlc": .string(hlc),
            "deleted": .bool(deleted), "attachments": [], "seq": .int(seq),
        ]
        if let payload, !deleted { object["payload"] = .object(payload) }
        return .object(object)
    }

    static let space: JSONValue = ["name": "private", "kind": "private", "createdAt": 1_738_343_045_123]

    static let status: [String: JSONValue] = [
        "node": "00112233445566aa", "version": "0.1.0", "state": "idle", "records": 3, "tombstones": 1,
        "outbox": 2, "outboxWithoutTransport": 0, "outboxErrors": 1, "lastSeq": 42, "attachments": 1, "attachmentBytes": 2048, "attachmentsMissing": 0,
        "spaces": [space],
        "transports": [[
            "space": "private", "name": "nas", "kind": "folder", "push": "p", "pending": 2,
            "lastError": "disk full", "lastErrorAt": 1_738_343_045_000, "problem": "push: disk full",
        ]],
        "lastSuccessAt": 1_738_343_000_000, "startedAt": 1_738_340_000_000,
    ]
}
