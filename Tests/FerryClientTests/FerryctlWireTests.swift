import FerryJSON
import Foundation
import Testing

/// ferryctl against a scripted daemon: what each command line sends over the wire, what it
/// prints for the replies, and the exit code each kind of error gets. (The same commands
/// against a real ferryd are in FerryIntegrationTests.)
@Suite struct FerryctlWireTests {
    let ferryctl: FerryctlRunner

    init() throws {
        ferryctl = try FerryctlRunner()
    }

    /// Runs ferryctl against a fake daemon answering with `handler`.
    private func run(_ arguments: [String], stdin: [UInt8] = [],
                     _ handler: @escaping @Sendable (FakeDaemon.Call) -> [FakeDaemon.Reply]) throws -> (FerryctlRunner.Result, [FakeDaemon.Call]) {
        let daemon = try FakeDaemon(handler: handler)
        defer { daemon.stop() }
        let result = try ferryctl.run(["--socket", daemon.path] + arguments, stdin: stdin)
        return (result, daemon.calls)
    }

    @Test func lsSendsEveryOption() throws {
        let (result, calls) = try run(["ls", "note", "--where", "done=false", "--where", "n=3", "--where", "title=milk",
                                       "--order", "stamp", "--limit", "5", "--all", "--after", "A0", "--space", "team"]) { _ in
            [.ok(["records": [Samples.record(id: "A1"), Samples.record(id: "A2", deleted: true)], "next": "A2"])]
        }
        #expect(result.status == 0, "\(result)")
        #expect(calls.first?.method == "io.ferry.Store.List")
        #expect(calls.first?.parameters == [
            "space": "team", "entity": "note", "after": "A0", "limit": 5, "includeDeleted": true, "order": "stamp",
            "where": ["done": false, "n": 3, "title": "milk"],
        ])
        #expect(result.lines.count == 3, "\(result)")
        #expect(result.lines.first?.split(separator: " ", omittingEmptySubsequences: true) == ["ID", "HLC", "DELETED", "PAYLOAD"])
        #expect(result.lines[1].hasPrefix("A1  \(Samples.hlc)  no "), "\(result)")
        #expect(result.lines[1].hasSuffix(#"{"title":"milk"}"#), "\(result)")
        #expect(result.lines[2].hasPrefix("A2  \(Samples.hlc)  yes"), "\(result)")
        // The next page's command keeps every option that shapes the pages.
        #expect(result.stderr.contains("more records: ferryctl --space team ls note --limit 5 --all --where done=false --where n=3 "
                                       + "--where title=milk --order stamp --after A2"), "\(result)")
    }

    @Test func lsFollowsPages() throws {
        let (result, calls) = try run(["ls", "note", "--follow-pages", "--json"]) { call in
            switch call.parameters["after"]?.stringValue {
            case nil: return [.ok(["records": [Samples.record(id: "A")], "next": "A"])]
            case "A": return [.ok(["records": [Samples.record(id: "B")], "next": "B"])]
            default: return [.ok(["records": []])]
            }
        }
        #expect(result.status == 0, "\(result)")
        #expect(calls.map { $0.parameters["after"] } == [nil, "A", "B"])
        #expect(result.lines.count == 3, "one JSON document per page: \(result)")
        #expect(try JSONParser.parse(result.lines[0]) == ["records": [Samples.record(id: "A")], "next": "A"])
    }

    @Test func getPrintsTheRecordOrExits3() throws {
        let (found, _) = try run(["get", "note", "A1"]) { _ in [.ok(["record": Samples.record()])] }
        #expect(found.status == 0, "\(found)")
        #expect(found.stdout.contains("id           A1\n"), "\(found)")
        #expect(found.stdout.contains("hlc          \(Samples.hlc)\n"), "\(found)")
        #expect(found.stdout.contains("payload      {\n               \"title\": \"milk\"\n             }"), "\(found)")

        let (json, _) = try run(["get", "note", "A1", "--json"]) { _ in [.ok(["record": Samples.record()])] }
        #expect(try JSONParser.parse(json.stdout) == ["record": Samples.record()])

        let (missing, calls) = try run(["get", "note", "nope", "--space", "team"]) { _ in [.ok([:])] }
        #expect(missing.status == 3, "\(missing)")
        #expect(missing.stderr.contains("no record note/nope in space team"), "\(missing)")
        #expect(calls.first?.parameters == ["space": "team", "entity": "note", "id": "nope"])

        let (missingJSON, _) = try run(["get", "note", "nope", "--json"]) { _ in [.ok([:])] }
        #expect(missingJSON.status == 3 && missingJSON.stdout == "{}\n", "\(missingJSON)")
    }

    @Test func putFromArgumentAndFromStdin() throws {
        let (result, calls) = try run(["put", "note", "X", #"{"title": "milk", "n": 2}"#, "--attach", "aa", "--attach", "bb"]) { _ in
            [.ok(["record": Samples.record(id: "X")])]
        }
        #expect(result.status == 0, "\(result)")
        #expect(calls.first?.method == "io.ferry.Store.Put")
        #expect(calls.first?.parameters == ["entity": "note", "id": "X", "payload": ["title": "milk", "n": 2], "attachments": ["aa", "bb"]])

        let (piped, pipedCalls) = try run(["put", "note", "-", "--json"], stdin: Array("{\"big\": true}\n".utf8)) { _ in
            [.ok(["record": Samples.record(id: "NEW")])]
        }
        #expect(piped.status == 0, "\(piped)")
        #expect(pipedCalls.first?.parameters == ["entity": "note", "payload": ["big": true]])
        #expect(try JSONParser.parse(piped.stdout)["record"]?["id"] == "NEW")
    }

    @Test func errorsMapToExitCodes() throws {
        let notFound: [String: JSONValue] = ["space": "private", "entity": "note", "id": "X",
                                             "message": "no record note/X: check the id with 'ferryctl ls note'"]
        let (rm, _) = try run(["rm", "note", "X"]) { _ in [.error("io.ferry.Store.NotFound", notFound)] }
        #expect(rm.status == 3, "\(rm)")
        // Said as get says it: which record, and where to look for the ids.
        #expect(rm.stderr == "ferryctl: no record note/X in space private: list the ids with 'ferryctl ls note'\n")

        let (conflicts, _) = try run(["conflicts", "note", "X"]) { _ in [.error("io.ferry.Store.NotFound", notFound)] }
        #expect(conflicts.status == 3, "\(conflicts)")

        let (invalid, _) = try run(["put", "Bad Entity", "{}"]) { _ in
            [.error("io.ferry.Store.InvalidEntity", ["entity": "Bad Entity", "message": "use [a-z][a-z0-9_.-]{0,63}"])]
        }
        #expect(invalid.status == 1, "\(invalid)")
        #expect(invalid.stderr.contains("io.ferry.Store.InvalidEntity: use [a-z]"), "\(invalid)")

        let (denied, _) = try run(["status"]) { _ in [.error("org.varlink.service.PermissionDenied")] }
        #expect(denied.status == 5, "\(denied)")
        #expect(denied.stderr.contains("permission denied"), "\(denied)")

        let (dropped, _) = try run(["status"]) { _ in [.close] }
        #expect(dropped.status == 1, "\(dropped)")
        #expect(dropped.stderr.contains("closed the connection"), "\(dropped)")

        let (noSpace, _) = try run(["ls", "note", "--space", "nope"]) { _ in
            [.error("io.ferry.Store.SpaceNotFound", ["space": "nope", "message": "no space nope: 'ferryctl space ls' lists them"])]
        }
        #expect(noSpace.status == 1, "\(noSpace)")
    }

    @Test func watchPrintsOneLinePerChange() throws {
        let replies: [FakeDaemon.Reply] = [
            .ok(["cursor": 10], continues: true),
            .ok(["cursor": 11, "record": Samples.record(id: "A")], continues: true),
            .ok(["cursor": 12, "record": Samples.record(id: "B", deleted: true)], continues: false),
        ]
        let (text, calls) = try run(["watch", "--since", "9", "--entity", "note", "--entity", "task", "--all-spaces"]) { _ in replies }
        #expect(text.status == 0, "\(text)")
        #expect(calls.first?.method == "io.ferry.Store.Watch")
        #expect(calls.first?.more == true)
        #expect(calls.first?.parameters == ["since": 9, "entities": ["note", "task"], "spaces": ["*"]])
        #expect(text.lines == [#"11 private note A put {"title":"milk"}"#, "12 private note B delete -"], "\(text)")
        #expect(text.stderr.contains("watching changes after cursor 10"), "\(text)")

        let (json, jsonCalls) = try run(["watch", "--json", "--space", "a", "--space", "b"]) { _ in replies }
        #expect(jsonCalls.first?.parameters == ["spaces": ["a", "b"]])
        #expect(try json.lines.map { try JSONParser.parse($0) }
            == [["cursor": 10], ["cursor": 11, "record": Samples.record(id: "A")], ["cursor": 12, "record": Samples.record(id: "B", deleted: true)]])
    }

    @Test func watchResumesWhenTheDaemonSaysSo() throws {
        let (result, calls) = try run(["watch"]) { call in
            if call.parameters["since"] == nil {
                return [.ok(["cursor": 3], continues: true),
                        .error("io.ferry.Store.ResumeFromCursor", ["cursor": 3, "message": "resume from 3"])]
            }
            return [.ok(["cursor": 3], continues: true), .ok(["cursor": 4, "record": Samples.record()])]
        }
        #expect(result.status == 0, "\(result)")
        #expect(calls.map { $0.parameters["since"] } == [nil, 3])
        #expect(result.lines == [#"4 private note A1 put {"title":"milk"}"#], "\(result)")
        #expect(result.stderr.contains("resuming after cursor 3"), "\(result)")
    }

    @Test func conflictsAndRestore() throws {
        let losing: JSONValue = ["record": Samples.record(), "origin": "remote:nas", "winner": .string(Samples.hlc), "lostAt": 1_738_343_045_123]
        let (list, _) = try run(["conflicts", "note", "A1"]) { _ in [.ok(["versions": [losing]])] }
        #expect(list.status == 0, "\(list)")
        #expect(list.lines.count == 2 && list.lines[1].contains("remote:nas") && list.lines[1].contains("2025-01-31 17:04:05Z"), "\(list)")

        // No losing versions: ferryctl asks whether the record exists at all (exit 3 if not).
        let (none, noneCalls) = try run(["conflicts", "note", "A1"]) { call in
            call.method == "io.ferry.Store.Get" ? [.ok(["record": Samples.record()])] : [.ok(["versions": []])]
        }
        #expect(none.status == 0 && none.stderr.contains("no losing versions"), "\(none)")
        #expect(noneCalls.map(\.method) == ["io.ferry.Store.Conflicts", "io.ferry.Store.Get"])
        let (unknownRecord, _) = try run(["conflicts", "note", "nope"]) { call in
            call.method == "io.ferry.Store.Get" ? [.ok([:])] : [.ok(["versions": []])]
        }
        #expect(unknownRecord.status == 3 && unknownRecord.stderr.contains("no record note/nope"), "\(unknownRecord)")

        let (restore, calls) = try run(["conflicts", "note", "A1", "--restore", Samples.hlc, "--space", "team"]) { _ in
            [.ok(["record": Samples.record()])]
        }
        #expect(restore.status == 0, "\(restore)")
        #expect(calls.first?.method == "io.ferry.Store.RestoreConflict")
        #expect(calls.first?.parameters == ["space": "team", "entity": "note", "id": "A1", "hlc": .string(Samples.hlc)])

        let (unknown, _) = try run(["conflicts", "note", "A1", "--restore", "x"]) { _ in
            [.error("io.ferry.Store.ConflictNotFound", ["entity": "note", "id": "A1", "hlc": "x", "message": "no such version"])]
        }
        #expect(unknown.status == 3, "\(unknown)")
    }

    @Test func attachAndDetach() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferryctl-attach-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in.bin").path
        try Data([0, 1, 2, 255]).write(to: URL(fileURLWithPath: input))

        let (attach, attachCalls) = try run(["attach", input]) { _ in [.ok(["sha256": "abc", "size": 4])] }
        #expect(attach.status == 0 && attach.stdout == "abc\n", "\(attach)")
        #expect(attachCalls.first?.parameters == ["data": "AAEC/w=="])

        let (missingFile, _) = try run(["attach", directory.appendingPathComponent("nope").path]) { _ in [] }
        #expect(missingFile.status == 1 && missingFile.stderr.contains("No such file"), "\(missingFile)")

        let output = directory.appendingPathComponent("out.bin").path
        let (detach, detachCalls) = try run(["detach", "abc", "-o", output]) { _ in [.ok(["sha256": "abc", "size": 4, "data": "AAEC/w=="])] }
        #expect(detach.status == 0, "\(detach)")
        #expect(detachCalls.first?.parameters == ["sha256": "abc"])
        #expect(FileManager.default.contents(atPath: output) == Data([0, 1, 2, 255]))

        // A large attachment comes as the path of the daemon's copy.
        let (viaPath, _) = try run(["detach", "abc", "--output", output + ".2"]) { _ in [.ok(["sha256": "abc", "size": 4, "path": .string(input)])] }
        #expect(viaPath.status == 0, "\(viaPath)")
        #expect(FileManager.default.contents(atPath: output + ".2") == Data([0, 1, 2, 255]))

        let (toStdout, _) = try run(["detach", "abc"]) { _ in [.ok(["sha256": "abc", "size": 3, "data": "Zm9v"])] }
        #expect(toStdout.stdout == "foo", "\(toStdout)")

        let (unknown, _) = try run(["detach", "abc"]) { _ in [.error("io.ferry.Store.AttachmentMissing", ["sha256": "abc", "message": "not stored"])] }
        #expect(unknown.status == 3, "\(unknown)")
    }

    @Test func engineCommands() throws {
        let (status, _) = try run(["status"]) { _ in [.ok(Samples.status)] }
        #expect(status.status == 0, "\(status)")
        for text in ["node         00112233445566aa", "records      3 live, 1 deleted", "1 rejected, held by nas (see 'ferryctl outbox --errors')",
                     "attachments  1 (2.0 KiB)", "nas", "disk full"] {
            #expect(status.stdout.contains(text), "'\(text)' missing: \(status)")
        }
        let (statusJSON, _) = try run(["status", "--json"]) { _ in [.ok(Samples.status)] }
        #expect(try JSONParser.parse(statusJSON.stdout) == .object(Samples.status))

        let (spaces, _) = try run(["space", "ls"]) { _ in [.ok(["spaces": [Samples.space]])] }
        #expect(spaces.lines.count == 2 && spaces.lines[1].hasPrefix("private  private  -      2025-01-31"), "\(spaces)")
        // The same column is SPACE in 'space ls', 'status' and 'transport ls'.
        #expect(spaces.lines[0].split(separator: " ") == ["SPACE", "KIND", "OWNER", "CREATED"], "\(spaces)")
        #expect(status.lines.contains { $0.split(separator: " ") == ["SPACE", "KIND", "OWNER", "CREATED"] }, "\(status)")

        let (create, createCalls) = try run(["space", "create", "team", "--kind", "shared"]) { call in
            [.ok(["space": ["name": call.parameters["name"]!, "kind": "shared", "createdAt": 1]])]
        }
        #expect(create.status == 0 && create.stdout.contains("created shared space team"), "\(create)")
        #expect(createCalls.first?.parameters == ["name": "team", "kind": "shared"])

        let (exists, _) = try run(["space", "create", "team"]) { _ in
            [.error("io.ferry.Engine.SpaceExists", ["space": "team", "message": "a space named team exists"])]
        }
        #expect(exists.status == 1 && exists.stderr.contains("io.ferry.Engine.SpaceExists"), "\(exists)")

        let (sync, syncCalls) = try run(["sync", "--space", "team"]) { _ in [.ok([:])] }
        #expect(sync.status == 0, "\(sync)")
        #expect(syncCalls.first?.method == "io.ferry.Engine.SyncNow" && syncCalls.first?.parameters == ["space": "team"])

        let entry: JSONValue = ["space": "private", "entity": "note", "id": "A1", "hlc": .string(Samples.hlc), "seq": 7, "queuedAt": 1,
                                "deliveries": [["transport": "nas", "error": "disk full"]]]
        let (outbox, outboxCalls) = try run(["outbox", "--errors"]) { _ in [.ok(["entries": [entry]])] }
        #expect(outbox.status == 0 && outbox.stdout.contains("nas: rejected (disk full)"), "\(outbox)")
        #expect(outboxCalls.first?.parameters == ["errorsOnly": true])
        #expect(!outbox.stderr.contains("more entries wait"))
        let (cut, _) = try run(["outbox", "--limit", "1"]) { _ in [.ok(["entries": [entry], "more": true])] }
        #expect(cut.status == 0 && cut.stderr.contains("more entries wait than the 1 shown"), "\(cut)")
        let (cutJSON, _) = try run(["--json", "outbox", "--limit", "1"]) { _ in [.ok(["entries": [entry], "more": true])] }
        #expect(cutJSON.status == 0 && cutJSON.stdout.contains(#""more":true"#), "\(cutJSON)")

        // "Nothing to show" goes to stderr, as for ls: stdout stays empty for scripts.
        let (none, _) = try run(["transport", "ls"]) { _ in [.ok(["transports": []])] }
        #expect(none.status == 0 && none.stdout.isEmpty && none.stderr.contains("no transports"), "\(none)")

        // A restore that leaves relay transports with the previous owner's token says so.
        let (restored, _) = try run(["owner", "restore", "PHRASE"]) { _ in [.ok(["owner": "ab", "relaysToPairAgain": ["relay"]])] }
        #expect(restored.status == 0 && restored.stderr.contains("the relay transport(s) relay hold a token of the space's previous owner"),
                "\(restored)")
        let (restoredSame, _) = try run(["owner", "restore", "PHRASE"]) { _ in [.ok(["owner": "ab"])] }
        #expect(restoredSame.status == 0 && !restoredSame.stderr.contains("pair each"), "\(restoredSame)")

        // The room left under the quota shows, in bytes when both figures print the same.
        @Sendable func usage(_ bytes: Int64, quota: Int64) -> [String: JSONValue] {
            ["owner": "ab", "url": "http://r", "events": 3, "bytes": .int(bytes), "blobs": 0, "blobBytes": 0, "quotaBytes": .int(quota)]
        }
        let (near, _) = try run(["relay", "status"]) { _ in [.ok(usage(43_925_939, quota: 43_950_000))] }
        #expect(near.status == 0 && near.stdout.contains("41.9 MiB (24061 B left)"), "\(near)")
        let (roomy, _) = try run(["relay", "status"]) { _ in [.ok(usage(1 << 20, quota: 1 << 30))] }
        #expect(roomy.stdout.contains("1.0 GiB (1023.0 MiB left)"), "\(roomy)")
        let (full, _) = try run(["relay", "status"]) { _ in [.ok(usage(5 << 20, quota: 4 << 20))] }
        #expect(full.stdout.contains("4.0 MiB (full)"), "\(full)")

        // An import that left records out because they did not open is no success.
        let (tampered, _) = try run(["import", "/tmp/b.ferry"]) { _ in
            [.ok(["applied": 4, "duplicates": 0, "lost": 0, "refused": 2, "skippedOwners": []])]
        }
        #expect(tampered.status == 1 && tampered.stdout.contains("4 applied") && tampered.stderr.contains("2 of the bundle's records or attachments did not open"),
                "\(tampered)")
        let (clean, _) = try run(["import", "/tmp/b.ferry"]) { _ in
            [.ok(["applied": 4, "duplicates": 0, "lost": 0, "refused": 0, "skippedOwners": []])]
        }
        #expect(clean.status == 0, "\(clean)")

        let (version, _) = try run(["version"]) { _ in
            [.ok(["vendor": "Ferry", "product": "ferryd", "version": "9.9.9", "url": "u", "interfaces": ["io.ferry.Store"]])]
        }
        #expect(version.lines.count == 2 && version.lines[1].hasPrefix("ferryd 9.9.9"), "\(version)")
    }
}
