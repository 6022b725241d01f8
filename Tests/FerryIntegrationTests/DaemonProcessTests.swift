import FerryTestSupport
import Foundation
import Testing
import FerryJSON
import FerryVarlink

/// A real ferryd process driven over its real Unix socket.
@Suite(.serialized) struct DaemonProcessTests {
    @Test func putGetListDelete() async throws {
        let daemon = try DaemonHarness(name: "crud")
        try daemon.start()
        let client = try daemon.client()
        defer { client.close() }

        let put = try await client.call("io.ferry.Store.Put", ["entity": "note", "payload": ["title": "milk", "done": false]])
        let id = try #require(put.at("record", "id")?.stringValue)
        #expect(put.at("record", "payload", "title") == "milk")
        #expect(put.at("record", "space") == "private" && put.at("record", "seq") == 1)

        _ = try await client.call("io.ferry.Store.Put", ["entity": "note", "id": "B", "payload": ["title": "eggs", "done": true]])
        let got = try await client.call("io.ferry.Store.Get", ["entity": "note", "id": .string(id)])
        #expect(got.at("record", "payload") == put.at("record", "payload"))
        let missing = try await client.call("io.ferry.Store.Get", ["entity": "note", "id": "nope"])
        #expect(missing.at("record") == nil)

        let all = try await client.call("io.ferry.Store.List", ["entity": "note"])
        #expect(all.at("records")?.arrayValue?.count == 2)
        let done = try await client.call("io.ferry.Store.List", ["entity": "note", "where": ["done": true]])
        #expect(done.at("records")?.arrayValue?.map { $0["id"] } == ["B"])
        let page = try await client.call("io.ferry.Store.List", ["entity": "note", "limit": 1])
        #expect(page.at("records")?.arrayValue?.count == 1 && page.at("next") != nil)

        let deleted = try await client.call("io.ferry.Store.Delete", ["entity": "note", "id": "B"])
        #expect(deleted.at("record", "deleted") == true && deleted.at("record", "payload") == nil)
        let afterDelete = try await client.call("io.ferry.Store.List", ["entity": "note"])
        #expect(afterDelete.at("records")?.arrayValue?.count == 1)

        let many = try await client.call("io.ferry.Store.PutMany", ["records": .array((0..<50).map { i in
            ["entity": "task", "id": .string("T\(i)"), "payload": ["n": .int(Int64(i))]]
        })])
        #expect(many.at("records")?.arrayValue?.count == 50)

        // Typed errors with messages that say what to do.
        await expectRemoteError("io.ferry.Store.NotFound") {
            _ = try await client.call("io.ferry.Store.Delete", ["entity": "note", "id": "ghost"])
        }
        await expectRemoteError("io.ferry.Store.InvalidEntity") {
            _ = try await client.call("io.ferry.Store.Put", ["entity": "Bad Name", "payload": [:]])
        }
        await expectRemoteError("io.ferry.Store.SpaceNotFound") {
            _ = try await client.call("io.ferry.Store.Get", ["space": "ghost", "entity": "note", "id": "x"])
        }
        await expectRemoteError("io.ferry.Store.InvalidArgument") {
            _ = try await client.call("io.ferry.Store.List", ["entity": "note", "order": "sideways"])
        }
        #expect(daemon.stop() == 0)
    }

    @Test func spacesAndStatus() async throws {
        let daemon = try DaemonHarness(name: "spaces")
        try daemon.start()
        let client = try daemon.client()
        defer { client.close() }
        _ = try await client.call("io.ferry.Engine.CreateSpace", ["name": "team"])
        await expectRemoteError("io.ferry.Engine.SpaceExists") {
            _ = try await client.call("io.ferry.Engine.CreateSpace", ["name": "team"])
        }
        _ = try await client.call("io.ferry.Store.Put", ["space": "team", "entity": "item", "id": "1", "payload": ["w": "team"]])
        _ = try await client.call("io.ferry.Store.Put", ["entity": "item", "id": "1", "payload": ["w": "private"]])
        let team = try await client.call("io.ferry.Store.Get", ["space": "team", "entity": "item", "id": "1"])
        #expect(team.at("record", "payload", "w") == "team")
        let spaces = try await client.call("io.ferry.Engine.Spaces")
        #expect(spaces.at("spaces")?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["private", "team"])
        let status = try await client.call("io.ferry.Engine.Status")
        #expect(status.at("records") == 2 && status.at("outbox") == 2 && status.at("state") == "idle")
        #expect(status.at("node")?.stringValue?.count == 16)
        let outbox = try await client.call("io.ferry.Engine.Outbox", ["space": "team"])
        #expect(outbox.at("entries")?.arrayValue?.count == 1 && outbox.at("more") == nil)
        // Entries left out past the limit are announced (more), and only then.
        let cut = try await client.call("io.ferry.Engine.Outbox", ["limit": 1])
        #expect(cut.at("entries")?.arrayValue?.count == 1 && cut.at("more") == true, "\(cut)")
        let whole = try await client.call("io.ferry.Engine.Outbox", ["limit": 2])
        #expect(whole.at("entries")?.arrayValue?.count == 2 && whole.at("more") == nil, "\(whole)")
        _ = try await client.call("io.ferry.Engine.SyncNow")
        daemon.stop()
    }

    /// Watch: the first reply carries the cursor, then one reply per change; a cursor resumes
    /// across a graceful restart and a kill -9 with nothing skipped.
    @Test func watchResumesAcrossRestarts() async throws {
        let daemon = try DaemonHarness(name: "watch")
        try daemon.start()
        var client = try daemon.client()
        let writer = try daemon.client()
        var seen: [String] = []
        var cursor: Int64 = 0
        do {
            var stream = client.callMore("io.ferry.Store.Watch", [:]).makeAsyncIterator()
            let first = try await stream.next()
            #expect(first?["cursor"] == 0 && first?["record"] == nil)
            for i in 0..<3 { _ = try await writer.call("io.ferry.Store.Put", ["entity": "note", "id": .string("N\(i)"), "payload": [:]]) }
            for _ in 0..<3 {
                let reply = try #require(try await stream.next())
                seen.append(reply.at("record", "id")?.stringValue ?? "?")
                cursor = reply["cursor"]?.intValue ?? -1
            }
        }
        #expect(seen == ["N0", "N1", "N2"] && cursor == 3)
        client.close(); writer.close()
        #expect(daemon.stop() == 0)

        // While the watcher is away, the daemon restarts and more changes happen, then it crashes.
        try daemon.start()
        let w2 = try daemon.client()
        _ = try await w2.call("io.ferry.Store.Put", ["entity": "note", "id": "N3", "payload": [:]])
        _ = try await w2.call("io.ferry.Store.Delete", ["entity": "note", "id": "N0"])
        w2.close()
        daemon.crash()
        try daemon.start()
        let w3 = try daemon.client()
        _ = try await w3.call("io.ferry.Store.Put", ["entity": "other", "id": "X", "payload": [:]])
        w3.close()

        client = try daemon.client()
        var resumed: [String] = []
        var stream = client.callMore("io.ferry.Store.Watch", ["since": .int(cursor), "entities": ["note"]]).makeAsyncIterator()
        let first = try await stream.next()
        #expect(first?["cursor"] == .int(cursor))
        for _ in 0..<2 {
            let reply = try #require(try await stream.next())
            resumed.append("\(reply.at("record", "id")?.stringValue ?? "?"):\(reply.at("record", "deleted")?.boolValue == true ? "deleted" : "live")")
        }
        #expect(resumed == ["N3:live", "N0:deleted"])
        // A cursor this store never handed out (a restored backup's clients) is refused: following
        // on from it would skip every change up to it. (A connection of its own: the watch above
        // still streams on `client`, and calls on one connection are answered in order.)
        let other = try daemon.client()
        defer { other.close() }
        var beyond = other.callMore("io.ferry.Store.Watch", ["since": .int(1_000_000)]).makeAsyncIterator()
        do {
            _ = try await beyond.next()
            Issue.record("a Watch since a cursor beyond the newest change was accepted")
        } catch {
            #expect("\(error)".contains("InvalidArgument") && "\(error)".contains("beyond this store's newest change"), "\(error)")
        }
        client.close()
        daemon.stop()
    }

    /// A stopping ferryd tells each open watcher where to resume (ResumeFromCursor with the
    /// cursor of the last change it was sent), rather than dropping it without a word.
    @Test func aStoppingDaemonTellsWatchersWhereToResume() async throws {
        let daemon = try DaemonHarness(config: "[Store]\nDurability=normal\n", name: "watch-stop")
        try daemon.start()
        let client = try daemon.client()
        let writer = try daemon.client()
        var stream = client.callMore("io.ferry.Store.Watch", [:]).makeAsyncIterator()
        _ = try await stream.next()
        _ = try await writer.call("io.ferry.Store.Put", ["entity": "note", "id": "S1", "payload": [:]])
        let change = try #require(try await stream.next())
        let cursor = try #require(change["cursor"]?.intValue)
        writer.close()
        let stopping = Task { daemon.stop() }
        do {
            while try await stream.next() != nil {}
            Issue.record("the stream ended without an error")
        } catch let error as VarlinkClientError {
            #expect(error.remoteError?.name == "io.ferry.Store.ResumeFromCursor", "\(error)")
            #expect(error.remoteError?.parameters["cursor"]?.intValue == cursor, "\(error)")
            #expect(error.remoteError?.parameters["message"]?.stringValue?.contains("stopping") == true, "\(error)")
        }
        #expect(await stopping.value == 0)
        client.close()
    }

    /// A caught-up watcher sees every record of a commit larger than the shared feed holds
    /// (one PutMany of 10,000): it falls back to reading the store, skipping nothing.
    @Test func aWatcherSeesEveryRecordOfACommitLargerThanTheFeed() async throws {
        let daemon = try DaemonHarness(config: "[Store]\nDurability=normal\n[API]\nWatchBufferBytes=67108864\n", name: "watch-burst")
        try daemon.start()
        let client = try daemon.client()
        let writer = try daemon.client()
        var stream = client.callMore("io.ferry.Store.Watch", [:]).makeAsyncIterator()
        _ = try await stream.next()
        let items: [JSONValue] = (0..<10_000).map { i in ["entity": "note", "id": .string("B\(i)"), "payload": [:]] }
        _ = try await writer.call("io.ferry.Store.PutMany", ["records": .array(items)])
        var ids = Set<String>()
        var last: Int64 = 0
        // Until the last change's cursor: a watcher that skipped records gets there too, with
        // fewer ids.
        while last < 10_000 {
            guard let reply = try await stream.next() else { break }
            if let id = reply.at("record", "id")?.stringValue { ids.insert(id) }
            let cursor = reply["cursor"]?.intValue ?? -1
            #expect(cursor > last, "cursors go up")
            last = cursor
        }
        #expect(ids.count == 10_000)
        #expect(last == 10_000)
        client.close(); writer.close()
        daemon.stop()
    }

    /// A stopped ferryd leaves every write in its database file: it empties the write-ahead log
    /// as it stops (its connections are not closed at exit, so SQLite's own last checkpoint
    /// never ran and the file lacked every write since the last one). A copy of the file alone,
    /// without its -wal, as a backup of a stopped daemon's store takes it, holds every record.
    @Test func aStoppedDaemonLeavesEveryWriteInTheDatabaseFile() async throws {
        let daemon = try DaemonHarness(name: "stopfile")
        try daemon.start()
        let client = try daemon.client()
        for i in 0..<50 {
            _ = try await client.call("io.ferry.Store.Put", ["entity": "note", "id": .string("N\(i)"), "payload": ["i": .int(Int64(i))]])
        }
        _ = try await client.call("io.ferry.Store.List", ["entity": "note"])
        client.close()
        #expect(daemon.stop() == 0)
        let file = daemon.stateDirectory + "/ferry.db"
        #expect(FileSize.of(file + "-wal") == 0, "the write-ahead log holds \(FileSize.of(file + "-wal")) bytes")
        let copy = daemon.root + "/copy.db"
        try FileManager.default.copyItem(atPath: file, toPath: copy)
        let count = try runCommand(Executables.python, ["-c", """
            import sqlite3, sys
            print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM records WHERE entity = 'note'").fetchone()[0])
            """, copy])
        #expect(count.status == 0 && count.output.trimmingCharacters(in: .whitespacesAndNewlines) == "50", "\(count.output)")
        #expect(!daemon.log.contains("could not be emptied"), "\(daemon.log)")
    }

    /// A write the daemon acknowledged survives kill -9 (durability full, the default).
    @Test func acknowledgedWritesSurviveKill9() async throws {
        let daemon = try DaemonHarness(config: "[Store]\nDurability=full\n", name: "kill9")
        try daemon.start()
        let client = try daemon.client()
        var ids: [String] = []
        for i in 0..<20 {
            let reply = try await client.call("io.ferry.Store.Put", ["entity": "note", "payload": ["i": .int(Int64(i))]])
            ids.append(reply.at("record", "id")?.stringValue ?? "")
        }
        client.close()
        daemon.crash()
        try daemon.start()
        let after = try daemon.client()
        for id in ids {
            let got = try await after.call("io.ferry.Store.Get", ["entity": "note", "id": .string(id)])
            #expect(got.at("record", "id") == .string(id))
        }
        after.close()
        daemon.stop()
    }

    @Test func attachmentsInlineAndByPath() async throws {
        let daemon = try DaemonHarness(name: "attach")
        try daemon.start()
        let client = try daemon.client()
        defer { client.close() }
        let small = Data("hello".utf8).base64EncodedString()
        let put = try await client.call("io.ferry.Store.PutAttachment", ["data": .string(small)])
        #expect(put["sha256"] == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" && put["size"] == 5)
        let got = try await client.call("io.ferry.Store.GetAttachment", ["sha256": put["sha256"]!])
        #expect(got["data"] == .string(small))

        let bigPath = daemon.root + "/big.bin"
        let big = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        FileManager.default.createFile(atPath: bigPath, contents: big)
        let putBig = try await client.call("io.ferry.Store.PutAttachment", ["path": .string(bigPath)])
        let gotBig = try await client.call("io.ferry.Store.GetAttachment", ["sha256": putBig["sha256"]!])
        let path = try #require(gotBig["path"]?.stringValue)
        #expect(FileManager.default.contents(atPath: path) == big)
        #expect(gotBig["data"] == nil && gotBig["size"] == .int(Int64(big.count)))
        // The daemon's own file, handed out read-only.
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o400)

        let record = try await client.call("io.ferry.Store.Put", ["entity": "doc", "payload": [:], "attachments": [put["sha256"]!, putBig["sha256"]!]])
        #expect(record.at("record", "attachments")?.arrayValue?.count == 2)
        await expectRemoteError("io.ferry.Store.AttachmentMissing") {
            _ = try await client.call("io.ferry.Store.Put", ["entity": "doc", "payload": [:], "attachments": [.string(String(repeating: "0", count: 64))]])
        }
        await expectRemoteError("io.ferry.Store.AttachmentMismatch") {
            _ = try await client.call("io.ferry.Store.PutAttachment", ["data": .string(small), "sha256": .string(String(repeating: "0", count: 64))])
        }
        // The caller's mistakes are InvalidArgument, not a storage failure of ferryd's.
        for bad: [String: JSONValue] in [["path": "/nonexistent/file"], ["path": .string(NSTemporaryDirectory())], ["data": "!!!notbase64"]] {
            await expectRemoteError("io.ferry.Store.InvalidArgument") {
                _ = try await client.call("io.ferry.Store.PutAttachment", bad)
            }
        }
        // Inline data is at most 8 MiB exactly: one byte more is refused, whatever its base64 length.
        let atCap = try await client.call("io.ferry.Store.PutAttachment", ["data": .string(Data(count: 8 << 20).base64EncodedString())])
        #expect(atCap["size"] == .int(8 << 20))
        for extra in [1, 2] {
            await expectRemoteError("io.ferry.Store.InvalidArgument") {
                _ = try await client.call("io.ferry.Store.PutAttachment", ["data": .string(Data(count: (8 << 20) + extra).base64EncodedString())])
            }
        }
        daemon.stop()
    }

    /// The socket is 0600 in a 0700 directory, and SO_PEERCRED keeps other users out even if
    /// those modes are loosened.
    @Test func otherUsersAreRefused() async throws {
        let daemon = try DaemonHarness(name: "peercred")
        try daemon.start()
        let dir = (daemon.socketPath as NSString).deletingLastPathComponent
        let dirMode = try FileManager.default.attributesOfItem(atPath: dir)[.posixPermissions] as? Int
        let sockMode = try FileManager.default.attributesOfItem(atPath: daemon.socketPath)[.posixPermissions] as? Int
        #expect(dirMode == 0o700 && sockMode == 0o600)
        let script = """
        import socket, json, sys
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(sys.argv[1])
        except OSError as e:
            print("connect-error", e.errno); sys.exit(0)
        s.sendall(json.dumps({"method": "io.ferry.Store.List", "parameters": {"entity": "note"}}).encode() + b"\\0")
        data = b""
        while not data.endswith(b"\\0"):
            chunk = s.recv(65536)
            if not chunk: break
            data += chunk
        print("reply", data.rstrip(b"\\0").decode())
        """
        let asNobody = ["--reuid=65534", "--regid=65534", "--clear-groups", "--", "/usr/bin/python3", "-c", script, daemon.socketPath]
        let blocked = try runCommand("/usr/bin/setpriv", asNobody)
        #expect(blocked.output.contains("connect-error 13"), "\(blocked.output)")   // EACCES from the 0700 directory
        chmod(dir, 0o755)
        chmod(daemon.socketPath, 0o666)
        let refused = try runCommand("/usr/bin/setpriv", asNobody)
        #expect(refused.output.contains("org.varlink.service.PermissionDenied"), "\(refused.output)")
        #expect(daemon.log.contains("refused a connection from uid 65534"))
        #expect(daemon.log.contains(getuid() == 0 ? "only root may use this ferryd" : "and root may use this ferryd"))
        // A refused peer that sends nothing does not keep its connection (and its place among
        // MaxConnections) until it gives up: it is closed within about a second.
        let silent = """
        import socket, sys, time
        s = socket.socket(socket.AF_UNIX)
        s.connect(sys.argv[1])
        s.settimeout(10)
        t = time.monotonic()
        data = s.recv(100)
        print("closed" if data == b"" else "data", round(time.monotonic() - t, 1))
        """
        let dropped = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--",
                                                          "/usr/bin/python3", "-c", silent, daemon.socketPath])
        let waited = Double(dropped.output.split(separator: " ").last.map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "") ?? 99
        #expect(dropped.output.hasPrefix("closed") && waited < 5, "\(dropped.output)")
        // The owner is still served.
        let client = try daemon.client()
        _ = try await client.call("io.ferry.Store.List", ["entity": "note"])
        client.close()
        daemon.stop()
    }

    @Test func checkConfigAndVersion() throws {
        let ferryd = try Executables.path("ferryd")
        let version = try runCommand(ferryd, ["--version"])
        #expect(version.status == 0 && version.output.hasPrefix("ferryd "))
        let daemon = try DaemonHarness(config: "[Store]\nDurability=sometimes\n", name: "checkconfig")
        let bad = try runCommand(ferryd, ["--config", daemon.configPath, "--check-config"])
        #expect(bad.status == 1 && bad.output.contains("ferryd.conf:2") && bad.output.contains("full or normal"))
        try "[Store]\nDurability=normal\n".write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let good = try runCommand(ferryd, ["--config", daemon.configPath, "--check-config"])
        #expect(good.status == 0 && good.output.contains("\nDurability=normal\n"), "\(good.output)")
        for key in ["StateDirectory=", "Socket=", "LogLevel=info", "MaxPayloadBytes=1048576", "SlowWatcherGraceSeconds=5\n",
                    "MaxConnections=4096", "BusyPollMicroseconds=200", "PollIntervalSeconds=30", "AttachmentWaitSeconds=120"] {
            #expect(good.output.contains(key), "\(key) missing: \(good.output)")
        }
        let usage = try runCommand(ferryd, ["--frobnicate"])
        #expect(usage.status == 2 && usage.output.contains("usage: ferryd"))
        // A declared folder that is not there yet is taken, with a warning (the transport waits
        // for it); a transport start-up could not use fails the check, as does a socket path too long.
        try "[Transport t1]\nKind=folder\nLocation=/nonexistent-ferry-folder\n".write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let waiting = try runCommand(ferryd, ["--config", daemon.configPath, "--check-config"])
        #expect(waiting.status == 0 && waiting.output.contains("ferryd: warning: \(daemon.configPath):1: [Transport t1]: /nonexistent-ferry-folder is not an existing directory (yet)"),
                "\(waiting.output)")
        try "[Transport t1]\nKind=folder\nLocation=/synced/ferry-v1/0123\n".write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let unusable = try runCommand(ferryd, ["--config", daemon.configPath, "--check-config"])
        #expect(unusable.status == 1 && unusable.output.contains("ferryd.conf:1: [Transport t1] would not be used"), "\(unusable.output)")
        try "".write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let long = try runCommand(ferryd, ["--config", daemon.configPath, "--check-config", "--socket", "/tmp/" + String(repeating: "s", count: 120)])
        #expect(long.status == 1 && long.output.contains("a Unix socket's path holds at most 107"), "\(long.output)")
        let directory = try runCommand(ferryd, ["--config", daemon.root, "--check-config"])
        #expect(directory.status == 1 && directory.output.contains("this is a directory, not a config file"), "\(directory.output)")
        // A relay token in a file others may read is warned about.
        try "[Transport r]\nKind=relay\nLocation=https://relay.example\nToken=fr1_AAAAAAAAAAAAAAAAAAAAb-_9ccccccccccccccccccc\n".write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        chmod(daemon.configPath, 0o644)
        let open = try runCommand(ferryd, ["--config", daemon.configPath, "--check-config"])
        #expect(open.status == 0 && open.output.contains("holds a relay token and others may read it (mode 644)"), "\(open.output)")
        chmod(daemon.configPath, 0o600)
        let closed = try runCommand(ferryd, ["--config", daemon.configPath, "--check-config"])
        #expect(closed.status == 0 && !closed.output.contains("warning"), "\(closed.output)")
    }

    @Test func oneDaemonPerStateDirectoryAndSocket() throws {
        let daemon = try DaemonHarness(name: "single")
        try daemon.start()
        let second = try runCommand(try Executables.path("ferryd"), ["--config", daemon.configPath, "--state-dir", daemon.stateDirectory,
                                                                     "--socket", daemon.root + "/other.sock"], timeout: 20)
        #expect(second.status == 1 && second.output.contains("another ferryd is using the state directory"))
        let third = try runCommand(try Executables.path("ferryd"), ["--config", daemon.configPath, "--state-dir", daemon.root + "/state2",
                                                                    "--socket", daemon.socketPath], timeout: 20)
        #expect(third.status == 1 && third.output.contains("already serving"))
        #expect(daemon.isRunning)
        daemon.stop()
    }

    /// Records of 1 MiB payload (the default maximum): 20 of them are more than one Varlink
    /// message (16 MiB) holds, so a List page stops at its byte budget and says `next`; every
    /// page arrives intact and paging returns each record once, in order.
    @Test func listPagesLargeRecordsUnderTheMessageCap() async throws {
        let daemon = try DaemonHarness(name: "huge")
        try daemon.start()
        let client = try daemon.client()
        defer { client.close() }

        let text = String(repeating: "x", count: (1 << 20) - 64)
        var ids: [String] = []
        // Four calls of five: one call of twenty would itself exceed the message cap.
        for batch in 0..<4 {
            let records: [JSONValue] = (0..<5).map { k in
                let n = batch * 5 + k
                return ["entity": "huge", "id": .string(String(format: "H%02d", n)), "payload": ["n": .int(Int64(n)), "text": .string(text)]]
            }
            let reply = try await client.call("io.ferry.Store.PutMany", ["records": .array(records)])
            ids += reply.at("records")?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        }
        #expect(ids.count == 20)

        for order: JSONValue in ["id", "stamp"] {
            var listed: [String] = []
            var pages = 0
            var after: JSONValue?
            repeat {
                var parameters: [String: JSONValue] = ["entity": "huge", "limit": 1000, "order": order]
                if let after { parameters["after"] = after }
                let page = try await client.call("io.ferry.Store.List", parameters)
                let records = page.at("records")?.arrayValue ?? []
                #expect(!records.isEmpty && records.allSatisfy { $0["payload"]?["text"]?.stringValue == text })
                listed += records.compactMap { $0["id"]?.stringValue }
                after = page.at("next")
                pages += 1
            } while after != nil && pages < 40
            #expect(listed == ids, "\(order)")
            #expect(pages > 2, "20 MiB of records take at least three pages of at most 8 MiB: \(pages)")
        }
        // The connection is still good after the large replies.
        let one = try await client.call("io.ferry.Store.Get", ["entity": "huge", "id": "H07"])
        #expect(one.at("record", "payload", "n") == 7)
        #expect(daemon.stop() == 0)
    }

    /// A PutMany whose reply (records without payloads) could not fit in one message is refused
    /// before anything is written, not committed and answered with a message the client drops.
    @Test func putManyWhoseReplyWouldNotFitIsRefusedUnwritten() async throws {
        let daemon = try DaemonHarness(config: "[Store]\nDurability=normal\nMaxBatch=100000\n", name: "bigbatch")
        try daemon.start()
        let client = try daemon.client()
        defer { client.close() }

        // 100,000 small records: a request of about 4 MiB, a reply of about 18 MiB.
        let records: [JSONValue] = (0..<100_000).map { _ in ["entity": "tiny", "payload": [:]] }
        await expectRemoteError("io.ferry.Store.InvalidArgument") {
            _ = try await client.call("io.ferry.Store.PutMany", ["records": .array(records)])
        }
        let listed = try await client.call("io.ferry.Store.List", ["entity": "tiny"])
        #expect(listed.at("records")?.arrayValue?.isEmpty == true, "nothing was written")
        // Half as many fit, and are written.
        let half = try await client.call("io.ferry.Store.PutMany", ["records": .array(Array(records.prefix(50_000)))])
        #expect(half.at("records")?.arrayValue?.count == 50_000)
        #expect(daemon.stop() == 0)
    }

    @Test func sighupReloadsTheLogLevel() async throws {
        let daemon = try DaemonHarness(config: "[Daemon]\nLogLevel=info\n", name: "reload")
        try daemon.start()
        // With two settings a reload does not apply, and Socket= that --socket overrides.
        try "[Daemon]\nLogLevel=debug\nSocket=/tmp/elsewhere.sock\n[Store]\nDurability=normal\n[API]\nMaxConnections=100\n"
            .write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        kill(daemon.process!.processIdentifier, SIGHUP)
        let deadline = Date().addingTimeInterval(10)
        while !daemon.log.contains("configuration reloaded"), Date() < deadline { usleep(20_000) }
        let client = try daemon.client()
        _ = try await client.call("io.ferry.Store.Put", ["entity": "note", "id": "dbg", "payload": [:]])
        client.close()
        usleep(200_000)
        #expect(daemon.log.contains("log level debug"))
        #expect(daemon.log.contains("changed, taking effect at the next start: Store.Durability, API.MaxConnections\n"), "\(daemon.log)")
        #expect(daemon.log.contains("debug: put"))   // debug entries name the record, never the payload
        // The file named with --config gone: the reload says so and the running settings stay.
        try FileManager.default.removeItem(atPath: daemon.configPath)
        kill(daemon.process!.processIdentifier, SIGHUP)
        let gone = Date().addingTimeInterval(10)
        while !daemon.log.contains("configuration not reloaded"), Date() < gone { usleep(20_000) }
        #expect(daemon.log.contains("configuration not reloaded, the running one stays: \(daemon.configPath): there is no config file here"),
                "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }

    /// --log-level wins over the file's LogLevel= at start and at every reload.
    @Test func theCommandLineLogLevelOutlivesAReload() async throws {
        let daemon = try DaemonHarness(config: "[Daemon]\nLogLevel=info\n", name: "reload-level")
        try daemon.start(extraArguments: ["--log-level", "debug"])
        kill(daemon.process!.processIdentifier, SIGHUP)
        let deadline = Date().addingTimeInterval(10)
        while !daemon.log.contains("configuration reloaded"), Date() < deadline { usleep(20_000) }
        #expect(daemon.log.contains("log level debug (from --log-level)"), "\(daemon.log)")
        let client = try daemon.client()
        _ = try await client.call("io.ferry.Store.Put", ["entity": "note", "id": "after", "payload": [:]])
        client.close()
        usleep(200_000)
        #expect(daemon.log.contains("debug: put entity=note id=after"), "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }
}

/// Expects `body` to fail with the Varlink error `name` carrying a non-empty message.
func expectRemoteError(_ name: String, sourceLocation: SourceLocation = #_sourceLocation,
                       _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected \(name), got success", sourceLocation: sourceLocation)
    } catch let error as VarlinkClientError {
        #expect(error.remoteError?.name == name, "\(error)", sourceLocation: sourceLocation)
        if name.hasPrefix("io.ferry.") {
            #expect(error.remoteError?.parameters["message"]?.stringValue?.isEmpty == false, sourceLocation: sourceLocation)
        }
    } catch {
        Issue.record("expected \(name), got \(error)", sourceLocation: sourceLocation)
    }
}
