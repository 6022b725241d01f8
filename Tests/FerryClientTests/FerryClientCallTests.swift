import FerryAPI
import FerryJSON
import Foundation
import Glibc
import Testing

import FerryClient

/// The client against a scripted service on a real socket: the calls it sends, how it
/// reads replies, and how every kind of failure surfaces as a `FerryClientError`.
@Suite struct FerryClientCallTests {
    /// Runs `body` with a client connected to a fake daemon answering with `handler`.
    private func withDaemon(_ handler: @escaping @Sendable (FakeDaemon.Call) -> [FakeDaemon.Reply],
                            _ body: (FerryClient, FakeDaemon) async throws -> Void) async throws {
        let daemon = try FakeDaemon(handler: handler)
        defer { daemon.stop() }
        let client = try FerryClient(socketPath: daemon.path)
        defer { client.close() }
        try await body(client, daemon)
    }

    @Test func putSendsOnlyWhatIsGiven() async throws {
        try await withDaemon({ _ in [.ok(["record": Samples.record()])] }) { (client, daemon) async throws in
            let record = try await client.put(entity: "note", payload: ["title": "milk"])
            #expect(record.id == "A1" && record.payload == ["title": "milk"])
            _ = try await client.put(space: "team", entity: "note", id: "X", payload: [:], attachments: ["ab"])
            let calls = daemon.calls
            #expect(calls.map(\.method) == ["io.ferry.Store.Put", "io.ferry.Store.Put"])
            #expect(calls[0].parameters == ["entity": "note", "payload": ["title": "milk"]])
            #expect(calls[1].parameters == ["space": "team", "entity": "note", "id": "X", "payload": [:], "attachments": ["ab"]])
        }
    }

    @Test func getOfUnknownRecordIsNil() async throws {
        try await withDaemon({ call in
            call.parameters["id"] == "A1" ? [.ok(["record": Samples.record()])] : [.ok([:])]
        }) { (client, _) async throws in
            #expect(try await client.get(entity: "note", id: "A1")?.id == "A1")
            #expect(try await client.get(entity: "note", id: "nope") == nil)
        }
    }

    @Test func listParameters() async throws {
        try await withDaemon({ _ in [.ok(["records": [Samples.record()], "next": "A1"])] }) { (client, daemon) async throws in
            let page = try await client.list(space: "s", entity: "note", after: "A0", limit: 5, includeDeleted: true,
                                             where: ["done": false], order: .stamp)
            #expect(page.next == "A1")
            _ = try await client.list(entity: "note")
            #expect(daemon.calls[0].parameters == [
                "space": "s", "entity": "note", "after": "A0", "limit": 5, "includeDeleted": true,
                "where": ["done": false], "order": "stamp",
            ])
            #expect(daemon.calls[1].parameters == ["entity": "note"])
        }
    }

    @Test func engineMethods() async throws {
        try await withDaemon({ call in
            switch call.method {
            case "io.ferry.Engine.Status": return [.ok(Samples.status)]
            case "io.ferry.Engine.Spaces": return [.ok(["spaces": [Samples.space]])]
            case "io.ferry.Engine.CreateSpace":
                return [.ok(["space": ["name": call.parameters["name"]!, "kind": "shared", "createdAt": 1]])]
            case "io.ferry.Engine.SyncNow": return [.ok([:])]
            case "io.ferry.Engine.Outbox": return [.ok(["entries": []])]
            default: return [.error("org.varlink.service.MethodNotFound", ["method": .string(call.method)])]
            }
        }) { (client, daemon) async throws in
            #expect(try await client.status().lastSeq == 42)
            #expect(try await client.spaces().map(\.name) == ["private"])
            #expect(try await client.createSpace(name: "team").kind == "shared")
            try await client.syncNow(space: "team")
            #expect(try await client.outbox(errorsOnly: true, limit: 3).isEmpty)
            #expect(daemon.calls.last?.parameters == ["errorsOnly": true, "limit": 3])
        }
    }

    @Test func attachmentsTravelAsBase64AndAbsolutePaths() async throws {
        try await withDaemon({ call in
            switch call.method {
            case "io.ferry.Store.PutAttachment": return [.ok(["sha256": "ab", "size": 3])]
            default: return [.ok(["sha256": "ab", "size": 3, "data": "Zm9v"])]
            }
        }) { (client, daemon) async throws in
            #expect(try await client.putAttachment(data: Array("foo".utf8)) == AttachmentInfo(sha256: "ab", size: 3))
            #expect(daemon.calls[0].parameters == ["data": "Zm9v"])
            _ = try await client.putAttachment(path: "some/file.bin")
            let sent = daemon.calls[1].parameters["path"]?.stringValue ?? ""
            #expect(sent.hasPrefix("/") && sent.hasSuffix("/some/file.bin"))
            #expect(try await client.getAttachment(sha256: "ab").content == .inline(Array("foo".utf8)))
        }
    }

    @Test func remoteErrorsCarryNameMessageAndParameters() async throws {
        let parameters: [String: JSONValue] = ["space": "private", "entity": "note", "id": "X", "message": "no record note/X"]
        try await withDaemon({ _ in [.error("io.ferry.Store.NotFound", parameters)] }) { (client, _) async throws in
            do throws(FerryClientError) {
                _ = try await client.delete(entity: "note", id: "X")
                Issue.record("delete of an unknown record succeeded")
            } catch {
                #expect(error == .remote(name: "io.ferry.Store.NotFound", message: "no record note/X", parameters: parameters))
                #expect(error.isNotFound)
                #expect(error.remoteErrorName == "NotFound")
                #expect(error.description == "io.ferry.Store.NotFound: no record note/X")
            }
        }
    }

    @Test func standardErrorsWithoutMessageAreExplained() async throws {
        try await withDaemon({ _ in [.error("org.varlink.service.MethodNotFound", ["method": "io.ferry.Engine.Status"])] }) { (client, _) async throws in
            do throws(FerryClientError) {
                _ = try await client.status()
                Issue.record("expected an error")
            } catch {
                guard case .remote(let name, let message, _) = error else {
                    Issue.record("expected .remote, got \(error)")
                    return
                }
                #expect(name == "org.varlink.service.MethodNotFound")
                #expect(message.contains("different versions"))
                #expect(!error.isNotFound)
            }
        }
    }

    @Test func varlinkPermissionDeniedIsPermissionDenied() async throws {
        try await withDaemon({ _ in [.error("org.varlink.service.PermissionDenied")] }) { (client, daemon) async throws in
            await #expect(throws: FerryClientError.permissionDenied(path: daemon.path)) { try await client.spaces() }
        }
    }

    @Test func droppedConnectionAndGarbage() async throws {
        try await withDaemon({ _ in [.close] }) { (client, daemon) async throws in
            await #expect(throws: FerryClientError.connectionClosed(path: daemon.path)) { try await client.spaces() }
        }
        try await withDaemon({ _ in [.raw("not json")] }) { (client, _) async throws in
            do throws(FerryClientError) {
                _ = try await client.spaces()
                Issue.record("garbage accepted")
            } catch {
                guard case .protocolError = error else {
                    Issue.record("expected .protocolError, got \(error)")
                    return
                }
            }
        }
        try await withDaemon({ _ in [.ok(["spaces": [["name": 1]]])] }) { (client, _) async throws in
            await #expect(throws: FerryClientError.malformedReply(WireError(field: "name", expected: "string"))) {
                try await client.spaces()
            }
        }
    }

    @Test func noSocketMeansNotRunning() throws {
        let path = "/tmp/ferry-client-no-such-dir-\(getpid())/ferryd.sock"
        #expect(throws: FerryClientError.daemonNotRunning(path: path)) { try FerryClient(socketPath: path) }
        #expect(FerryClientError.daemonNotRunning(path: path).description
            == "ferryd is not running (no socket at \(path)): start it with 'systemctl --user start ferryd' or 'ferryd'")
    }

    @Test func staleSocketMeansNotRunning() throws {
        // A socket file nobody listens on (what a crashed daemon leaves): connect is refused.
        let stale = "/tmp/ferry-client-stale-\(getpid()).sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(stale.utf8)) }
        unlink(stale)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        close(fd)
        defer { unlink(stale) }
        #expect(throws: FerryClientError.nobodyListening(path: stale)) { try FerryClient(socketPath: stale) }
        let message = FerryClientError.nobodyListening(path: stale).description
        #expect(message.hasPrefix("ferryd is not running (nobody listens on the socket at \(stale)"), "\(message)")
        #expect(message.hasSuffix("start it with 'systemctl --user start ferryd' or 'ferryd'"), "\(message)")
    }

    @Test func aDirectoryOrAFileIsNotASocket() throws {
        let directory = "/tmp/ferry-client-dir-\(getpid())"
        let file = directory + "/plain"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        #expect(throws: FerryClientError.notASocket(path: directory, found: "a directory")) { try FerryClient(socketPath: directory) }
        #expect(throws: FerryClientError.notASocket(path: file, found: "a regular file")) { try FerryClient(socketPath: file) }
        let message = FerryClientError.notASocket(path: directory, found: "a directory").description
        #expect(message.hasPrefix("\(directory) is a directory, not ferryd's socket: point --socket or FERRY_SOCKET at"), "\(message)")
    }

    @Test func socketPathTooLong() {
        let path = "/tmp/" + String(repeating: "x", count: 200) + ".sock"
        do {
            _ = try FerryClient(socketPath: path)
            Issue.record("connected to an impossible path")
        } catch {
            switch error {
            case .connectionFailed, .daemonNotRunning: break
            default: Issue.record("unexpected \(error)")
            }
        }
    }

    @Test func watchStreamsCursorThenChanges() async throws {
        try await withDaemon({ call in
            guard call.more else { return [.error("org.varlink.service.ExpectedMore")] }
            return [
                .ok(["cursor": 10], continues: true),
                .ok(["cursor": 11, "record": Samples.record(id: "A")], continues: true),
                .ok(["cursor": 12, "record": Samples.record(id: "B", deleted: true)], continues: false),
            ]
        }) { (client, daemon) async throws in
            var events: [WatchEvent] = []
            for try await event in client.watch(since: 9, spaces: FerryClient.allSpaces, entities: ["note"]) {
                events.append(event)
            }
            #expect(events.map(\.cursor) == [10, 11, 12])
            #expect(events.first == .started(cursor: 10))
            #expect(events.last?.record?.deleted == true)
            #expect(daemon.calls.first?.parameters == ["since": 9, "spaces": ["*"], "entities": ["note"]])
            // The watch had its own connection; this client's still works.
            #expect(daemon.calls.count == 1)
        }
    }

    @Test func watchErrorsArriveTyped() async throws {
        try await withDaemon({ _ in
            [.ok(["cursor": 3], continues: true),
             .error("io.ferry.Store.ResumeFromCursor", ["cursor": 3, "message": "fell behind: call Watch again with since 3"])]
        }) { (client, _) async throws in
            var cursors: [Int64] = []
            do {
                for try await event in client.watch() { cursors.append(event.cursor) }
                Issue.record("the stream ended without the error")
            } catch let error as FerryClientError {
                #expect(error.remoteErrorName == "ResumeFromCursor")
                if case .remote(_, _, let parameters) = error { #expect(parameters["cursor"] == 3) }
            }
            #expect(cursors == [3])
        }
    }

    @Test func watchAfterTheDaemonWentAway() async throws {
        let daemon = try FakeDaemon { _ in [.ok([:])] }
        let client = try FerryClient(socketPath: daemon.path)
        daemon.stop()
        do {
            for try await _ in client.watch() {}
            Issue.record("watched a daemon that is gone")
        } catch {
            #expect(error as? FerryClientError == .daemonNotRunning(path: daemon.path))
        }
    }

    @Test func stoppingAWatchEndsIt() async throws {
        try await withDaemon({ call in
            call.more ? [.ok(["cursor": 1], continues: true)] : [.ok(["spaces": []])]
        }) { (client, _) async throws in
            for try await event in client.watch() {
                #expect(event == .started(cursor: 1))
                break
            }
            // Breaking out ended the watch; the client's own connection is unaffected.
            #expect(try await client.spaces().isEmpty)
        }
    }
}
