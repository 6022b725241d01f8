import FerryJSON
import Foundation
import Glibc
import Testing

@testable import FerryVarlink

@Suite struct VarlinkServerTests {
    @Test func createsAPrivateSocket() async throws {
        try await withTestServer { server in
            var status = stat()
            #expect(stat(server.path, &status) == 0)
            #expect(status.st_mode & S_IFMT == S_IFSOCK)
            #expect(status.st_mode & 0o777 == 0o600)
            #expect(stat(server.directory.path + "/run", &status) == 0)
            #expect(status.st_mode & 0o777 == 0o700)
        }
    }

    /// An existing directory that lets another user replace the socket is refused, with what
    /// to do; one only its owner can write to, or with the sticky bit (like /tmp), is used.
    @Test func refusesADirectoryOthersCouldReplaceTheSocketIn() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        for (name, mode, owner, safe) in [("open", 0o777, geteuid(), false), ("group", 0o770, geteuid(), false),
                                          ("sticky", 0o1777, geteuid(), true), ("readable", 0o755, geteuid(), true),
                                          ("theirs", 0o700, 65534, false)] as [(String, mode_t, uid_t, Bool)] {
            let dir = directory.path + "/" + name
            #expect(mkdir(dir, 0o700) == 0 && chmod(dir, mode) == 0 && chown(dir, owner, gid_t(owner == 65534 ? 65534 : getegid())) == 0)
            let server = VarlinkServer(service: try TestInterface.service(recorder: Recorder()), endpoint: .unixPath(dir + "/s.sock"))
            do {
                try await server.start()
                #expect(safe, "\(name): started in an unsafe directory")
                await server.stop()
            } catch {
                #expect(!safe, "\(name): \(error)")
                guard case let .unsafeDirectory(path, _) = error else { Issue.record("\(name): \(error)"); continue }
                #expect(path == dir && error.description.contains("chmod 700 \(dir)"), "\(error)")
                #expect(access(dir + "/s.sock", F_OK) != 0, "\(name): nothing was created")
            }
        }
    }

    /// A client call with capture paths gets the objects there as the text the server sent,
    /// each placeholder in the parameters standing for its own object, in arrays too.
    @Test func clientCapturesObjectsAsSent() async throws {
        try await withTestServer { server in
            let client = try server.client()
            let reply = try await client.call(.test("Objects", ["count": 3]), capturing: [[.key("first")], [.key("all"), .anyElement]])
            let all = try #require(reply.parameters["all"]?.arrayValue)
            #expect(all.count == 3)
            for (i, item) in all.enumerated() {
                let text = try #require(reply.captured.text(of: item))
                #expect(try reply.captured.value(of: text) == ["i": .int(Int64(i)), "s": .string("{\"i\": \(i)}, [x]")])
            }
            let first = try #require(reply.captured.text(of: reply.parameters["first"]))
            #expect(Array(first) == Array(try #require(reply.captured.text(of: all[0]))))
            // Without paths nothing is captured; an empty array has nothing to capture.
            let plain = try await client.call(.test("Objects", ["count": 0]), capturing: [[.key("all"), .anyElement]])
            #expect(plain.parameters == ["all": []])
        }
    }

    @Test func removesTheSocketOnStop() async throws {
        let server = try await TestServer.start()
        await server.server.stop()
        #expect(access(server.path, F_OK) != 0)
        #expect(throws: VarlinkClientError.self) { try server.client() }
        server.directory.remove()
    }

    @Test func servesGetInfoAndDescriptions() async throws {
        try await withTestServer { server in
            let client = try server.client()
            let info = try await client.call("org.varlink.service.GetInfo")
            #expect(info["interfaces"] == ["org.varlink.service", "org.ferry.test"])
            let own = try await client.call(
                "org.varlink.service.GetInterfaceDescription", ["interface": "org.varlink.service"])
            #expect(own["description"]?.stringValue?.contains("error ExpectedMore ()") == true)
            let test = try await client.call("org.varlink.service.GetInterfaceDescription", ["interface": "org.ferry.test"])
            #expect(test["description"] == .string(TestInterface.definition))
        }
    }

    @Test func answersEveryStandardErrorOverTheWire() async throws {
        try await withTestServer { server in
            let client = try server.client()
            let cases: [(String, [String: JSONValue], VarlinkError)] = [
                ("org.nothing.Here", [:], .interfaceNotFound("org.nothing")),
                ("org.ferry.test.Missing", [:], .methodNotFound("org.ferry.test.Missing")),
                ("org.ferry.test.Unimplemented", [:], .methodNotImplemented("org.ferry.test.Unimplemented")),
                ("org.ferry.test.Add", ["a": 1, "b": "two"], .invalidParameter("b")),
                ("org.ferry.test.Add", ["a": 1], .invalidParameter("b")),
                ("org.ferry.test.Add", ["a": 1, "b": 2, "c": 3], .invalidParameter("c")),
                ("org.ferry.test.Count", ["count": 3], .expectedMore),
                ("org.ferry.test.Fail", ["detail": "boom"], VarlinkError("org.ferry.test.Custom", parameters: ["detail": "boom"])),
            ]
            for (method, parameters, expected) in cases {
                do throws(VarlinkClientError) {
                    _ = try await client.call(method, parameters)
                    Issue.record("\(method) succeeded")
                } catch {
                    #expect(error == .remote(expected), "\(method)")
                }
            }
            // The connection survives all of them.
            #expect(try await client.call("org.ferry.test.Add", ["a": 2, "b": 3]) == ["sum": 5])
        }
    }

    @Test func refusedPeerGetsPermissionDenied() async throws {
        try await withTestServer(peerPolicy: { $0.userID == UInt32.max }) { server in
            let client = try server.client()
            do throws(VarlinkClientError) {
                _ = try await client.call("org.ferry.test.Add", ["a": 1, "b": 2])
                Issue.record("refused peer was served")
            } catch {
                #expect(error == .remote(.permissionDenied))
            }
            do throws(VarlinkClientError) {
                _ = try await client.call("org.ferry.test.Add", ["a": 1, "b": 2])
                Issue.record("refused peer's connection stayed open")
            } catch {
                #expect(error == .connectionClosed)
            }
            let logged = await server.recorder.waitFor { $0.hasPrefix("log: refused peer") }
            #expect(logged == "log: refused peer pid \(getpid()) uid \(getuid()) gid \(getgid())")
        }
    }

    /// The refusal reaches the peer: the connection ends after it, never with a reset that
    /// loses it (the server closed with the peer's bytes unread in the socket, so the kernel
    /// reset the connection and the reply was usually gone).
    @Test func aRefusedPeerReadsItsPermissionDeniedBeforeTheEnd() async throws {
        try await withTestServer(peerPolicy: { $0.userID == UInt32.max }) { server in
            for _ in 0..<20 {
                let raw = try server.raw()
                await raw.send(VarlinkCallMessage.test("Add", ["a": 1, "b": 2]).encoded() + VarlinkCallMessage.test("Add", ["a": 3, "b": 4]).encoded())
                #expect(await raw.readReply()?.varlinkError == .permissionDenied)
                #expect(await raw.read() == .endOfFile)
            }
        }
    }

    @Test func pipelinedCallsAreAnsweredInOrder() async throws {
        try await withTestServer { server in
            let raw = try server.raw()
            var batch: [UInt8] = []
            batch += VarlinkCallMessage.test("Sleep", ["milliseconds": 200, "tag": "slow"]).encoded()
            batch += VarlinkCallMessage.test("Add", ["a": 1, "b": 1]).encoded()
            batch += VarlinkCallMessage.test("Sleep", ["milliseconds": 0, "tag": "fast"]).encoded()
            await raw.send(batch)
            #expect(await raw.readReply()?.parameters == ["tag": "slow"])
            #expect(await raw.readReply()?.parameters == ["sum": 2])
            #expect(await raw.readReply()?.parameters == ["tag": "fast"])
        }
    }

    @Test func concurrentClientCallsGetTheirOwnReplies() async throws {
        try await withTestServer { server in
            let client = try server.client()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        let reply = try await client.call(
                            "org.ferry.test.Sleep", ["milliseconds": .int(Int64(index % 3)), "tag": .string("t\(index)")])
                        #expect(reply["tag"] == .string("t\(index)"))
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test func streamsRepliesWithContinues() async throws {
        try await withTestServer { server in
            let client = try server.client()
            var indexes: [Int64] = []
            for try await reply in client.callMore("org.ferry.test.Count", ["count": 5]) {
                indexes.append(reply["index"]?.intValue ?? -1)
            }
            #expect(indexes == [0, 1, 2, 3, 4])

            let raw = try server.raw()
            await raw.sendCall(.test("Count", ["count": 3], more: true))
            await raw.sendCall(.test("Add", ["a": 1, "b": 2]))
            let first = await raw.readReply()
            #expect(first?.continues == true && first?.parameters == ["index": 0])
            #expect(await raw.readReply()?.continues == true)
            let last = await raw.readReply()
            #expect(last?.continues == false && last?.parameters == ["index": 2])
            #expect(await raw.readReply()?.parameters == ["sum": 3])
        }
    }

    @Test func streamOutlivesItsClient() async throws {
        try await withTestServer { server in
            let stream = try server.client().callMore("org.ferry.test.Count", ["count": 3])
            var count = 0
            for try await _ in stream { count += 1 }
            #expect(count == 3)
            #expect(await eventually { await server.server.connectionCount() == 0 })
        }
    }

    @Test func moreCallToAPlainMethodGetsOneReply() async throws {
        try await withTestServer { server in
            let client = try server.client()
            var replies: [JSONValue] = []
            for try await reply in client.callMore("org.ferry.test.Add", ["a": 1, "b": 2]) {
                replies.append(reply)
            }
            #expect(replies == [["sum": 3]])
            var failure: (any Error)?
            do {
                for try await _ in client.callMore("org.ferry.test.Count", ["count": 0]) {}
            } catch {
                failure = error
            }
            #expect(failure as? VarlinkClientError == .remote(.invalidParameter("count")))
        }
    }

    @Test func onewayCallsGetNoReply() async throws {
        try await withTestServer { server in
            let client = try server.client()
            try await client.oneway("org.ferry.test.Record", ["value": "one"])
            try await client.oneway("org.ferry.test.Record", ["value": "two"])
            #expect(try await client.call("org.ferry.test.Recorded") == ["values": ["one", "two"]])

            let raw = try server.raw()
            await raw.sendCall(.test("Record", ["value": "three"], oneway: true))
            await raw.sendCall(.test("Missing", oneway: true))
            await raw.sendCall(.test("Add", ["a": "bad"], oneway: true))
            await raw.sendCall(.test("Add", ["a": 4, "b": 4]))
            #expect(await raw.readReply()?.parameters == ["sum": 8])
        }
    }

    /// A streaming call made oneway could never be answered and would hold the connection:
    /// it is refused (silently, being oneway) and the next call is answered.
    @Test func aOnewayStreamIsRefusedAndTheNextCallAnswered() async throws {
        try await withTestServer { server in
            let raw = try server.raw()
            await raw.sendCall(.test("Watch", oneway: true, more: true))
            await raw.sendCall(.test("Add", ["a": 2, "b": 3]))
            #expect(await raw.readReply()?.parameters == ["sum": 5])
        }
    }

    /// The calls before a message that breaks the protocol are answered, then the connection
    /// closes: sent in one write, a slow call's answer is not lost to the garbage after it.
    @Test func callsBeforeGarbageAreAnsweredBeforeTheClose() async throws {
        try await withTestServer { server in
            let raw = try server.raw()
            let first = VarlinkCallMessage.test("Sleep", ["milliseconds": 50, "tag": "slow"]).encoded()
            let second = VarlinkCallMessage.test("Add", ["a": 1, "b": 1]).encoded()
            await raw.send(first + second + Array("garbage".utf8) + [0])
            #expect(await raw.readReply()?.parameters == ["tag": "slow"])
            #expect(await raw.readReply()?.parameters == ["sum": 2])
            #expect(await raw.read() == .endOfFile)
        }
    }

    @Test func callsSentJustBeforeHangingUpStillRunIfOneway() async throws {
        try await withTestServer { server in
            do {
                let raw = try server.raw()
                var batch: [UInt8] = []
                batch += VarlinkCallMessage.test("Sleep", ["milliseconds": 100, "tag": "first"]).encoded()
                batch += VarlinkCallMessage.test("Record", ["value": "before"], oneway: true).encoded()
                batch += VarlinkCallMessage.test("Watch", more: true).encoded()
                batch += VarlinkCallMessage.test("Record", ["value": "after"], oneway: true).encoded()
                await raw.send(batch)
            }
            let client = try server.client()
            #expect(await eventually {
                (try? await client.call("org.ferry.test.Recorded")) == ["values": ["before", "after"]]
            })
            // Watch was skipped: nobody was left to stream to.
            #expect(await server.recorder.entries.allSatisfy { !$0.hasPrefix("watch") })
            #expect(await eventually { await server.server.connectionCount() == 1 })
        }
    }

    @Test func peerGoneCancelsTheStreamingHandler() async throws {
        try await withTestServer { server in
            let client = try server.client()
            var iterator = client.callMore("org.ferry.test.Watch").makeAsyncIterator()
            #expect(try await iterator.next() == ["event": "hello"])
            client.close()
            let cancelled = await server.recorder.waitFor { $0.hasPrefix("watch cancelled") }
            #expect(cancelled == "watch cancelled, connected=false")
            #expect(await server.recorder.waitFor { $0.hasPrefix("watch late send") } == "watch late send: the peer disconnected")
            #expect(await eventually { await server.server.connectionCount() == 0 })
        }
    }

    @Test func slowConsumerIsToldToResume() async throws {
        var configuration = VarlinkServerConfiguration()
        configuration.outputBufferLimit = 64 << 10
        configuration.slowPeerGrace = .milliseconds(300)
        try await withTestServer(configuration: configuration) { server in
            let raw = try server.raw()
            await raw.sendCall(.test("Flood", ["chunk": 8192], more: true))
            let tooSlow = await server.recorder.waitFor { $0.hasPrefix("flood too slow at ") }
            let cursor = Int(try #require(tooSlow).dropFirst("flood too slow at ".count))!
            #expect(await server.recorder.waitFor { $0.hasPrefix("log: disconnected slow peer") } != nil)
            // The client only reads well after the grace (it stalled): everything queued before
            // the limit still arrives, then the final error, so it learns why the stream ended.
            try await Task.sleep(for: .seconds(1))
            var received = 0
            var final: VarlinkReplyMessage?
            while case let .message(bytes) = await raw.read() {
                let reply = try VarlinkReplyMessage.decode(bytes)
                if reply.continues {
                    #expect(reply.parameters["index"] == .int(Int64(received)))
                    received += 1
                } else {
                    final = reply
                }
            }
            #expect(received == cursor)
            #expect(final?.varlinkError == VarlinkError("org.ferry.test.ResumeFrom", parameters: ["cursor": .int(Int64(cursor))]))
            // Bounded: the kernel's socket buffer plus our cap, not everything Flood could make.
            #expect(cursor * 8192 < 8 << 20)
            #expect(await eventually { await server.server.connectionCount() == 0 })
        }
    }

    @Test func silentConnectionDoesNotBlockOthers() async throws {
        try await withTestServer { server in
            let silent = try server.raw()
            let partial = try server.raw()
            await partial.send(Array(#"{"method":"org.ferry.test.Add","para"#.utf8))
            let client = try server.client()
            #expect(try await client.call("org.ferry.test.Add", ["a": 1, "b": 1]) == ["sum": 2])
            #expect(await server.server.connectionCount() == 3)
            _ = (silent, partial)
        }
    }

    /// A message that stops half-way is not held for ever: past the timeout its connection
    /// closes (logged); a client whose messages keep completing stays, however long it sends.
    @Test func aMessageUnfinishedPastTheTimeoutClosesItsConnection() async throws {
        var configuration = VarlinkServerConfiguration()
        configuration.incompleteMessageTimeout = .milliseconds(600)
        try await withTestServer(configuration: configuration) { server in
            let stalled = try server.raw()
            await stalled.send(Array(#"{"method":"org.ferry.test.Add","para"#.utf8))
            let steady = try server.raw()
            let started = ContinuousClock.now
            // Each call arrives in two parts with a pause between, for twice the timeout.
            while ContinuousClock.now - started < .milliseconds(1200) {
                await steady.send(Array(#"{"method":"org.ferry.test.Add","#.utf8))
                try await Task.sleep(for: .milliseconds(100))
                await steady.send(Array(#""parameters":{"a":1,"b":2}}"#.utf8) + [0])
                #expect(await steady.readReply()?.parameters == ["sum": 3])
            }
            #expect(await stalled.read() == .endOfFile)
            #expect(await server.recorder.waitFor { $0.hasPrefix("log: closed connection") && $0.contains("had not finished a message") } != nil)
            let idle = try server.raw()   // a connection that sent nothing holds nothing: it stays
            try await Task.sleep(for: .milliseconds(900))
            await idle.sendCall(.test("Add", ["a": 2, "b": 2]))
            #expect(await idle.readReply()?.parameters == ["sum": 4])
        }
    }

    /// All connections together hold at most `maxBufferedBytes`: the one that sends past it,
    /// holding more than its fair share, is closed (logged), and every other is served.
    @Test func connectionsTogetherStayWithinTheBufferBudget() async throws {
        var configuration = VarlinkServerConfiguration()
        configuration.maxBufferedBytes = 1 << 20
        configuration.fairShareBytes = 64 << 10
        try await withTestServer(configuration: configuration) { server in
            let start = Array(#"{"method":"org.ferry.test.Add","parameters":{"a":1,"b":2,"pad":""#.utf8)
            let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 100 << 10)
            var holders: [RawConnection] = []
            for _ in 0..<3 {
                let raw = try server.raw(timeout: .seconds(1))
                await raw.send(start)
                for _ in 0..<4 { await raw.send(chunk) }   // about 400 KiB each, unfinished
                holders.append(raw)
            }
            #expect(await server.recorder.waitFor { $0.contains("reached the cap of 1048576 bytes") } != nil)
            var closed = 0
            for raw in holders where await raw.read() == .endOfFile { closed += 1 }
            #expect(closed >= 1 && closed < 3, "closed \(closed)")
            // A small call always gets through: within its fair share.
            let client = try server.client()
            #expect(try await client.call("org.ferry.test.Add", ["a": 1, "b": 1]) == ["sum": 2])
        }
    }

    /// Replies nobody reads count against the budget too. Past it, the connections holding
    /// more than their fair share of replies they have not read for a while go first (logged),
    /// then the one whose reply would keep the total over the cap: the total stays within the
    /// cap plus one reply, and a client that reads is served. Before, every connection could
    /// always queue one whole reply, whatever the total (300 unread 8 MiB lists held 2.4 GiB).
    /// Both ways a call is answered: by a task, and on the server's loop (an outside check
    /// found the second one unchecked: a List flood held 850 MB).
    @Test(arguments: [true, false]) func unreadRepliesStayWithinTheBufferBudget(_ byTask: Bool) async throws {
        var configuration = VarlinkServerConfiguration()
        configuration.maxBufferedBytes = 4 << 20
        configuration.fairShareBytes = 64 << 10
        try await withTestServer(configuration: configuration) { server in
            var silent: [RawConnection] = []
            for i in 0..<12 {
                let raw = try server.raw()
                // About 1 MiB of reply each.
                await raw.sendCall(byTask ? .test("Objects", ["count": 30_000]) : .test("Padding", ["bytes": .int(1 << 20)]))
                silent.append(raw)
                // The first four have not read for longer than the grace when the rest come.
                if i == 3 { try await Task.sleep(for: .milliseconds(2300)) }
            }
            let dropped = await server.recorder.waitFor { $0.contains("replies it has not read") }
            let logged = await server.recorder.entries
            let heldNow = await server.server.bufferedBytes()
            #expect(dropped != nil, "\(logged) held \(heldNow)")
            let client = try server.client()
            #expect(try await client.call("org.ferry.test.Add", ["a": 1, "b": 1]) == ["sum": 2])
            let held = await server.server.bufferedBytes()
            #expect(held <= (4 << 20) + (1 << 20) + (64 << 10), "\(held) bytes held")
            #expect(await silent[0].read() == .endOfFile, "the longest silent goes first")
            _ = silent
        }
    }

    @Test func garbageClosesOnlyThatConnection() async throws {
        try await withTestServer { server in
            let client = try server.client()
            for garbage in ["hello world", "[1,2,3]", "\"just a string\"", "{\"method\":", "\u{1}\u{2}\u{3}"] {
                let raw = try server.raw()
                await raw.send(Array(garbage.utf8) + [0])
                #expect(await raw.read() == .endOfFile, "\(garbage)")
                #expect(try await client.call("org.ferry.test.Add", ["a": 1, "b": 1]) == ["sum": 2])
            }
            #expect(await server.recorder.waitFor { $0.hasPrefix("log: closed connection") } != nil)
        }
    }

    @Test func callsWithoutAValidMethodGetInvalidParameter() async throws {
        try await withTestServer { server in
            let raw = try server.raw()
            for (text, field) in [
                (#"{"parameters":{}}"#, "method"),
                (#"{"method":42}"#, "method"),
                (#"{"method":"NoInterface"}"#, "method"),
                (#"{"method":"org.ferry.test.Add","parameters":[]}"#, "parameters"),
                (#"{"method":"org.ferry.test.Add","more":"yes"}"#, "more"),
            ] {
                await raw.send(Array(text.utf8) + [0])
                #expect(await raw.readReply()?.varlinkError == .invalidParameter(field), "\(text)")
            }
            await raw.sendCall(.test("Add", ["a": 1, "b": 1]))
            #expect(await raw.readReply()?.parameters == ["sum": 2])
        }
    }

    @Test func oversizeMessageClosesTheConnection() async throws {
        try await withTestServer { server in
            let raw = try server.raw()
            let chunk = [UInt8](repeating: UInt8(ascii: " "), count: 1 << 20)
            var sent = 0
            while sent <= 17 << 20, await raw.send(chunk) { sent += chunk.count }
            // Closed: with megabytes it will never read still coming, the server's end resets.
            let end = await raw.read()
            #expect(end == .endOfFile || end == .reset, "\(end)")
            let logged = await server.recorder.waitFor { $0.contains("exceeds 16777216 bytes") }
            #expect(logged != nil)
            let client = try server.client()
            #expect(try await client.call("org.ferry.test.Add", ["a": 1, "b": 1]) == ["sum": 2])
        }
    }

    @Test func deeplyNestedCallClosesTheConnection() async throws {
        try await withTestServer { server in
            let raw = try server.raw()
            let value = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
            await raw.send(Array(#"{"method":"org.ferry.test.Deep","parameters":{"value":"#.utf8) + Array(value.utf8) + Array("}}".utf8) + [0])
            #expect(await raw.read() == .endOfFile)
            let client = try server.client()
            #expect(try await client.call("org.ferry.test.Deep", ["value": ["a": [[["b": 1]]]]]) == [:])
        }
    }

    @Test func gracefulStopLetsRunningCallsFinish() async throws {
        let server = try await TestServer.start()
        let client = try server.client()
        let slow = Task { try await client.call("org.ferry.test.Sleep", ["milliseconds": 300, "tag": "done"]) }
        try await Task.sleep(for: .milliseconds(100))
        await server.stop(gracePeriod: .seconds(5))
        #expect(try await slow.value == ["tag": "done"])
    }

    @Test func stopCancelsCallsPastTheGracePeriod() async throws {
        let server = try await TestServer.start()
        let client = try server.client()
        var iterator = client.callMore("org.ferry.test.Watch").makeAsyncIterator()
        #expect(try await iterator.next() == ["event": "hello"])
        let started = ContinuousClock.now
        await server.stop(gracePeriod: .milliseconds(200))
        // The stream never ends by itself: stop returned because it cancelled it.
        #expect(ContinuousClock.now - started < .seconds(60))
        do {
            _ = try await iterator.next()
            Issue.record("stream survived the stop")
        } catch {
            #expect(error as? VarlinkClientError == .connectionClosed)
        }
        #expect(await server.recorder.waitFor { $0.hasPrefix("watch cancelled") } != nil)
    }

    @Test func servesASocketActivatedDescriptor() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/activated.sock"
        let fd = try UnixSocket.listen(path: path, socketMode: 0o600, directoryMode: 0o700, backlog: 16)
        let server = VarlinkServer(service: try TestInterface.service(recorder: Recorder()), endpoint: .listeningDescriptor(fd))
        try await server.start()
        let client = try VarlinkClient(address: "unix:\(path)")
        #expect(try await client.call("org.ferry.test.Add", ["a": 20, "b": 22]) == ["sum": 42])
        await server.stop()
    }

    @Test func clientReportsConnectFailures() {
        #expect(throws: VarlinkClientError.invalidAddress("tcp:localhost:1")) {
            try VarlinkClient(address: "tcp:localhost:1")
        }
        do throws(VarlinkClientError) {
            _ = try VarlinkClient(address: "unix:/nonexistent/ferry.sock")
            Issue.record("connected to nothing")
        } catch {
            guard case let .system(failure) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(failure.errno == ENOENT)
            #expect(failure.call == "connect /nonexistent/ferry.sock")
        }
    }
}
