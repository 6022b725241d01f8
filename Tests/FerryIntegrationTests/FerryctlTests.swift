import FerryJSON
import FerryTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

/// `ferryctl`, the built binary, against a real `ferryd` on a temporary socket: every
/// subcommand, its output and its exit code, as a script would see them.
@Suite struct FerryctlTests {
    // MARK: records

    @Test func putGetListDelete() throws {
        let (daemon, ctl) = try Self.start("ctl-records")
        defer { daemon.stop() }

        let created = try ctl.run(["put", "note", #"{"title": "milk", "done": false}"#, "--json"])
        #expect(created.status == 0, "\(created)")
        let record = try created.json()["record"]
        let id = try #require(record?["id"]?.stringValue)
        #expect(id.count == 36 && id == id.uppercased(), "a new record gets an upper-case UUID: \(id)")
        #expect(record?["payload"] == ["title": "milk", "done": false])

        let named = try ctl.run(["put", "note", "N1", #"{"title": "eggs", "done": true}"#])
        #expect(named.status == 0, "\(named)")
        #expect(named.stdout.contains("id           N1\n") && named.stdout.contains("\"title\": \"eggs\""), "\(named)")

        let piped = try ctl.run(["put", "note", "N2", "-"], stdin: #"{"title": "from stdin"}"#)
        #expect(piped.status == 0, "\(piped)")

        let got = try ctl.run(["get", "note", "N1"])
        #expect(got.status == 0 && got.stdout.contains("deleted      no\n"), "\(got)")
        let gotJSON = try ctl.run(["get", "note", "N1", "--json"]).json()
        #expect(gotJSON["record"]?["payload"] == ["title": "eggs", "done": true])
        #expect(gotJSON["record"]?["space"] == "private")

        let listed = try ctl.run(["ls", "note"])
        #expect(listed.status == 0, "\(listed)")
        #expect(listed.lines.count == 4, "header and three records: \(listed)")
        #expect(listed.lines[0].split(separator: " ") == ["ID", "HLC", "DELETED", "PAYLOAD"], "\(listed)")
        // The payload as stored: its key order, without the whitespace between tokens.
        #expect(listed.lines.contains { $0.hasPrefix("N1  ") && $0.hasSuffix(#"{"title":"eggs","done":true}"#) }, "\(listed)")

        let filtered = try ctl.run(["ls", "note", "--where", "done=false", "--json"]).json()
        #expect(filtered["records"]?.arrayValue?.map { $0["id"] } == [.string(id)])
        let byTitle = try ctl.run(["ls", "note", "--where", "title=from stdin", "--json"]).json()
        #expect(byTitle["records"]?.arrayValue?.map { $0["id"] } == ["N2"])

        // Paging: one record per page, with the hint, then every page.
        let page = try ctl.run(["ls", "note", "--limit", "1"])
        #expect(page.lines.count == 2 && page.stderr.contains("more records: ferryctl ls note --limit 1 --after "), "\(page)")
        let all = try ctl.run(["ls", "note", "--limit", "1", "--follow-pages", "--json"])
        let ids = try all.lines.flatMap { try JSONParser.parse($0)["records"]?.arrayValue ?? [] }.compactMap { $0["id"]?.stringValue }
        #expect(Set(ids) == [id, "N1", "N2"] && ids.count == 3, "\(all)")

        let removed = try ctl.run(["rm", "note", "N1"])
        #expect(removed.status == 0 && removed.stdout.hasPrefix("deleted note/N1 in space private at "), "\(removed)")
        let tombstone = try ctl.run(["get", "note", "N1"])
        #expect(tombstone.status == 0 && tombstone.stdout.contains("deleted      yes\n"), "\(tombstone)")
        // Deleting it again changes nothing, and says so rather than "deleted".
        let again = try ctl.run(["rm", "note", "N1"])
        #expect(again.status == 0 && again.stdout.hasPrefix("note/N1 in space private was deleted already (at ")
                && again.stdout.contains("nothing changed"), "\(again)")
        #expect(try ctl.run(["ls", "note"]).lines.count == 3)
        let withDeleted = try ctl.run(["ls", "note", "--all", "--order", "stamp"])
        #expect(withDeleted.lines.count == 4 && withDeleted.lines.last?.hasPrefix("N1  ") == true, "\(withDeleted)")
        #expect(withDeleted.lines.last?.split(separator: " ").suffix(2) == ["yes", "-"], "\(withDeleted)")
    }

    /// `ls` of records with 1 MiB payloads: the daemon's pages stop at their byte budget, so
    /// the first page answers (with the hint for the next) and --follow-pages lists all twenty
    /// once, in order, across pages shorter than --limit.
    @Test func lsListsLargeRecordsAcrossShortPages() async throws {
        let (daemon, ctl) = try Self.start("ctl-huge")
        defer { daemon.stop() }
        let client = try daemon.client()
        let text = String(repeating: "y", count: (1 << 20) - 64)
        for batch in 0..<4 {
            let records: [JSONValue] = (0..<5).map { k in
                ["entity": "huge", "id": .string(String(format: "H%02d", batch * 5 + k)), "payload": ["text": .string(text)]]
            }
            _ = try await client.call("io.ferry.Store.PutMany", ["records": .array(records)])
        }
        client.close()

        let first = try ctl.run(["ls", "huge"])
        #expect(first.status == 0, "\(first.status) \(first.stderr)")
        #expect(first.stderr.contains("more records: ferryctl ls huge --after H"), "\(first.stderr)")
        let rows = first.lines.count - 1
        #expect(rows >= 1 && rows < 20, "one short page: \(rows) records")

        let all = try ctl.run(["ls", "huge", "--limit", "1000", "--follow-pages", "--json"])
        #expect(all.status == 0, "\(all.status) \(all.stderr)")
        let pages = try all.lines.map { try JSONParser.parse($0) }
        let ids = pages.flatMap { $0["records"]?.arrayValue ?? [] }.compactMap { $0["id"]?.stringValue }
        #expect(ids == (0..<20).map { String(format: "H%02d", $0) })
        #expect(pages.count > 2 && pages.dropLast().allSatisfy { $0["next"] != nil } && pages.last?["next"] == nil)
    }

    /// `put` stores the payload as typed, byte for byte (docs/api.md): numbers beyond 64-bit
    /// integers, number spellings, key order and spacing are the user's, as over the API.
    @Test func putStoresThePayloadAsTyped() throws {
        let (daemon, ctl) = try Self.start("ctl-verbatim")
        defer { daemon.stop() }
        let typed = #"{ "b": 1.50, "a": 18446744073709551615, "e": 1E2, "z": -0, "n": {"x": [1, 2.0]} }"#
        let put = try ctl.run(["put", "note", "V1", typed])
        #expect(put.status == 0, "\(put)")
        let piped = try ctl.run(["put", "note", "V2", "-"], stdin: #"{"x": 12345678901234567890123}"# + "\n")
        #expect(piped.status == 0, "\(piped)")

        let socket = try RawSocket(path: daemon.socketPath)
        for (id, expected) in [("V1", typed), ("V2", #"{"x": 12345678901234567890123}"#)] {
            socket.send(#"{"method":"io.ferry.Store.Get","parameters":{"entity":"note","id":"\#(id)"}}"# + "\0")
            let reply = try #require(socket.receive())
            #expect(reply.contains(#""payload":"# + expected), "\(id): \(reply)")
        }
        // And every command shows it as stored: every token (numbers, strings, key order) as
        // stored, only the whitespace between tokens redone: none in --json (one document a
        // line), indented in the record view.
        let tricky = #"{"s": "a, b: {c} [d] \"q\" \\", "n": 1.50, "big": 18446744073709551616, "e": [], "o": {}, "x": [1, {"y": -0}]}"#
        #expect(try ctl.run(["put", "note", "V4", tricky]).status == 0)
        let compact = #"{"s":"a, b: {c} [d] \"q\" \\","n":1.50,"big":18446744073709551616,"e":[],"o":{},"x":[1,{"y":-0}]}"#
        let typedCompact = #"{"b":1.50,"a":18446744073709551615,"e":1E2,"z":-0,"n":{"x":[1,2.0]}}"#
        #expect(try ctl.run(["put", "note", "V6", "-"], stdin: "{\n  \"lines\": [\n    1,\n    2\n  ]\n}\n").status == 0)
        for (arguments, expected) in [(["get", "note", "V1", "--json"], typedCompact), (["put", "note", "V5", typed, "--json"], typedCompact),
                                      (["get", "note", "V4", "--json"], compact), (["ls", "note", "--json"], compact),
                                      (["get", "note", "V6", "--json"], #"{"lines":[1,2]}"#)] {
            let out = try ctl.run(arguments)
            #expect(out.status == 0 && out.stdout.contains(#""payload":"# + expected), "\(arguments): \(out)")
            #expect((try? out.json()) != nil && out.lines.count == 1, "\(arguments): one JSON document on one line: \(out)")
        }
        let view = try ctl.run(["get", "note", "V4"])
        for line in [#"  "s": "a, b: {c} [d] \"q\" \\","#, #"  "n": 1.50,"#, #"  "big": 18446744073709551616,"#, #"  "e": [],"#,
                     #"  "o": {},"#, #"    1,"#, #"      "y": -0"#] {
            #expect(view.stdout.contains("             " + line + "\n"), "'\(line)': \(view)")
        }
        let table = try ctl.run(["ls", "note"])
        #expect(table.lines.contains { $0.hasPrefix("V4 ") && $0.hasSuffix(String(compact.prefix(59)) + "…") }, "\(table)")
        let watch = try ctl.background(["watch", "--since", "0", "--json"])
        #expect(watch.waitForLines(6), "\(watch.stdout)")
        watch.interrupt()
        #expect(watch.stdout.contains(#""payload":"# + compact), "\(watch.stdout)")

        // Still one JSON object, checked before anything is sent.
        let notAnObject = try ctl.run(["put", "note", "V3", "[1]"])
        #expect(notAnObject.status == 2, "\(notAnObject)")
        let broken = try ctl.run(["put", "note", "V3", #"{"a": 1"#])
        #expect(broken.status == 2, "\(broken)")
        #expect(try ctl.run(["get", "note", "V3"]).status == 3)
    }

    @Test func exitCodesForErrors() throws {
        let (daemon, ctl) = try Self.start("ctl-errors")

        let unknown = try ctl.run(["get", "note", "nope"])
        #expect(unknown.status == 3 && unknown.stderr.contains("no record note/nope"), "\(unknown)")
        let rmUnknown = try ctl.run(["rm", "note", "nope"])
        #expect(rmUnknown.status == 3 && rmUnknown.stderr.contains("no record note/nope") && rmUnknown.stderr.contains("ferryctl ls note"),
                "\(rmUnknown)")
        let conflictsUnknown = try ctl.run(["conflicts", "note", "nope"])
        #expect(conflictsUnknown.status == 3, "\(conflictsUnknown)")

        let badEntity = try ctl.run(["put", "Not An Entity", "{}"])
        #expect(badEntity.status == 1, "\(badEntity)")
        #expect(badEntity.stderr.hasPrefix("ferryctl: io.ferry.Store.InvalidEntity: "), "\(badEntity)")

        // A put the daemon refuses for a missing attachment is a failed write (1), not a lookup (3).
        let badAttachment = try ctl.run(["put", "note", "{}", "--attach", String(repeating: "0", count: 64)])
        #expect(badAttachment.status == 1, "\(badAttachment)")
        #expect(badAttachment.stderr.contains("io.ferry.Store.AttachmentMissing") && badAttachment.stderr.contains("ferryctl attach FILE"),
                "\(badAttachment)")
        #expect(!badAttachment.stderr.contains("keeps fetching") && badAttachment.stderr.components(separatedBy: "ferryctl attach").count == 2,
                "\(badAttachment)")

        let badFilter = try ctl.run(["ls", "note", "--where", "nested.field=1"])
        #expect(badFilter.status == 0 || badFilter.status == 1, "\(badFilter)")

        let usage = try ctl.run(["ls"])
        #expect(usage.status == 2, "\(usage)")
        // A relay needs a code or a token: said by ferryctl itself, as a usage error.
        let noCredential = try ctl.run(["transport", "add", "relay", "relay", "http://127.0.0.1:9"])
        #expect(noCredential.status == 2 && noCredential.stderr.contains("--code CODE") && noCredential.stderr.contains("--token TOKEN"),
                "\(noCredential)")
        // A token for a relay that cannot be reached is taken, with a warning that says it was
        // not checked and why; the URL is kept in one spelling (no trailing slash).
        let unchecked = try ctl.run(["transport", "add", "relay", "relay", "http://127.0.0.1:9/", "--token", "fr1_" + String(repeating: "A", count: 43)])
        #expect(unchecked.status == 0 && unchecked.stdout.hasPrefix("added relay transport relay to space private (http://127.0.0.1:9)")
                && unchecked.stderr.contains("warning: the token could not be checked") && unchecked.stderr.contains("refused"), "\(unchecked)")
        // Given again, it is updated, not added.
        let again = try ctl.run(["transport", "add", "relay", "relay", "http://127.0.0.1:9", "--token", "fr1_" + String(repeating: "A", count: 43)])
        #expect(again.status == 0 && again.stdout.hasPrefix("updated relay transport relay of space private"), "\(again)")
        #expect(try ctl.run(["transport", "rm", "relay"]).status == 0)
        // A bad name is refused as a bad name, before anything else is looked at.
        let badName = try ctl.run(["transport", "add", "Bad", "folder", "/tmp"])
        #expect(badName.status == 1 && badName.stderr.contains("invalid transport name"), "\(badName)")
        let overview = try ctl.run(["help"])
        #expect(overview.stdout.contains("put ENTITY [ID] JSON|-"), "\(overview)")

        daemon.stop()
        let stopped = try ctl.run(["status"])
        #expect(stopped.status == 4, "\(stopped)")
        #expect(stopped.stderr.contains("ferryd is not running (no socket at \(daemon.socketPath)): start it with"), "\(stopped)")
        let version = try ctl.run(["version"])
        #expect(version.status == 0 && version.stdout.hasPrefix("ferryctl "), "\(version)")
        // --version is the version command too, as ferryd's is.
        let flag = try ctl.run(["--version"])
        #expect(flag.status == 0 && flag.stdout == version.stdout, "\(flag)")
        let short = try ctl.run(["-V"])
        #expect(short.status == 0 && short.stdout == version.stdout, "\(short)")
        // The overview lists it.
        let help = try ctl.run(["--help"])
        #expect(help.stdout.contains("-V, --version"), "\(help)")
    }

    @Test func anotherUserGetsExit5() throws {
        try #require(getuid() == 0, "this test switches to uid 65534 with setpriv and must run as root (CI does)")
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "setpriv (util-linux) is missing")
        let (daemon, ctl) = try Self.start("ctl-uid")
        defer { daemon.stop() }
        // The binary must be reachable by the other user for the test to say anything.
        let probe = try ctl.run(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                                 ctl.executable, "help"], raw: true)
        try #require(probe.status == 0, "uid 65534 cannot run \(ctl.executable): \(probe)")
        let refused = try ctl.run(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                                   ctl.executable, "--socket", daemon.socketPath, "status"], raw: true)
        #expect(refused.status == 5, "\(refused)")
        #expect(refused.stderr.contains("permission denied on \(daemon.socketPath)"), "\(refused)")
        // Past the directory's permissions, ferryd's own peer-credential check says no: also 5.
        chmod((daemon.socketPath as NSString).deletingLastPathComponent, 0o755)
        chmod(daemon.socketPath, 0o666)
        let checked = try ctl.run(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                                   ctl.executable, "--socket", daemon.socketPath, "ls", "note"], raw: true)
        #expect(checked.status == 5, "\(checked)")
        #expect(try ctl.run(["status"]).status == 0, "the owner is still served")
    }

    // MARK: spaces, engine

    @Test func spacesStatusOutboxSyncVersion() throws {
        let (daemon, ctl) = try Self.start("ctl-engine")
        defer { daemon.stop() }

        let spaces = try ctl.run(["space", "ls"])
        #expect(spaces.status == 0 && spaces.lines.count == 2 && spaces.lines[1].hasPrefix("private  private  "), "\(spaces)")
        let created = try ctl.run(["space", "create", "team"])
        #expect(created.status == 0 && created.stdout.contains("space team"), "\(created)")
        let again = try ctl.run(["space", "create", "team"])
        #expect(again.status == 1 && again.stderr.contains("io.ferry.Engine.SpaceExists"), "\(again)")
        let spacesJSON = try ctl.run(["space", "ls", "--json"]).json()
        #expect(Set(spacesJSON["spaces"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []) == ["private", "team"])

        #expect(try ctl.run(["put", "note", "T1", #"{"in": "team"}"#, "--space", "team"]).status == 0)
        #expect(try ctl.run(["get", "note", "T1"]).status == 3, "a record of team is not in the private space")
        let inTeam = try ctl.run(["get", "note", "T1", "--space", "team", "--json"]).json()
        #expect(inTeam["record"]?["space"] == "team")
        let noSpace = try ctl.run(["ls", "note", "--space", "nope"])
        #expect(noSpace.status == 1 && noSpace.stderr.contains("io.ferry.Store.SpaceNotFound"), "\(noSpace)")

        let status = try ctl.run(["status"])
        #expect(status.status == 0, "\(status)")
        for text in ["node ", "version ", "records      1 live, 0 deleted", "private", "team", daemon.socketPath,
                     "outbox       1 pending (all in spaces with no transport, queued for the first one added), 0 rejected"] {
            #expect(status.stdout.contains(text), "'\(text)' missing: \(status)")
        }
        let statusJSON = try ctl.run(["status", "--json"]).json()
        #expect(statusJSON["records"] == 1 && statusJSON["node"]?.stringValue?.count == 16, "\(statusJSON)")
        #expect(statusJSON["outbox"] == 1 && statusJSON["outboxWithoutTransport"] == 1, "\(statusJSON)")

        let outbox = try ctl.run(["outbox", "--json"]).json()
        #expect(outbox["entries"]?.arrayValue != nil, "\(outbox)")
        // With no transport, the table says why the entry waits.
        let table = try ctl.run(["outbox"])
        #expect(table.status == 0 && table.stdout.contains("no transport yet (kept for the first one added)"), "\(table)")
        let errors = try ctl.run(["outbox", "--errors"])
        #expect(errors.status == 0 && errors.stdout.isEmpty && errors.stderr.contains("no rejected or held entries"), "\(errors)")

        // No transport anywhere: nothing to sync with, and what to do.
        let sync = try ctl.run(["sync"])
        #expect(sync.status == 0 && sync.stdout.hasPrefix("no space has a transport") && sync.stdout.contains("ferryctl transport add"), "\(sync)")
        let team = try ctl.run(["sync", "--space", "team"])
        #expect(team.status == 0 && team.stdout.hasPrefix("space team has no transport"), "\(team)")

        let version = try ctl.run(["version"])
        #expect(version.status == 0 && version.lines.count == 2 && version.lines[1].hasPrefix("ferryd "), "\(version)")

        let conflicts = try ctl.run(["conflicts", "note", "T1", "--space", "team"])
        #expect(conflicts.status == 0 && conflicts.stderr.contains("no losing versions"), "\(conflicts)")
        let restoreBad = try ctl.run(["conflicts", "note", "T1", "--space", "team", "--restore", "not-a-stamp"])
        #expect(restoreBad.status == 1 && restoreBad.stderr.contains("io.ferry.Store.InvalidStamp"), "\(restoreBad)")
        let stamp = try #require(inTeam["record"]?["hlc"]?.stringValue)
        let restoreUnknown = try ctl.run(["conflicts", "note", "T1", "--space", "team", "--restore", stamp])
        #expect(restoreUnknown.status == 3, "no losing version has that stamp: \(restoreUnknown)")
    }

    /// What a user cannot do here, each refused with what to do instead and a non-zero exit:
    /// removing a transport ferryd.conf declares, syncing while paused, importing another
    /// owner's bundle.
    @Test func refusalsSayWhatToDoInstead() throws {
        let folder = NSTemporaryDirectory() + "ctl-declared-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let daemon = try DaemonHarness(config: "[Store]\nDurability=normal\n[Transport declared]\nKind=folder\nLocation=\(folder)\n",
                                       name: "ctl-refusals")
        try daemon.start()
        defer { daemon.stop() }
        let ctl = try CtlRunner(socket: daemon.socketPath)

        // A transport of ferryd.conf stays: the file is where it goes away.
        let declared = try ctl.run(["transport", "rm", "declared"])
        #expect(declared.status == 1, "\(declared)")
        #expect(declared.stderr.contains("io.ferry.Engine.TransportDeclared") && declared.stderr.contains(daemon.configPath)
                && declared.stderr.contains("reload"), "\(declared)")
        #expect(declared.stdout.isEmpty, "\(declared)")
        #expect(try ctl.run(["transport", "ls"]).stdout.contains("declared"), "still there")
        // A relay command named at a folder transport says what it is.
        let notRelay = try ctl.run(["relay", "status", "declared"])
        #expect(notRelay.status == 1 && notRelay.stderr.contains("declared") && notRelay.stderr.contains("is a folder transport, not a relay"),
                "\(notRelay)")
        let changed = try ctl.run(["transport", "add", "declared", "folder", NSTemporaryDirectory()])
        #expect(changed.status == 1 && changed.stderr.contains("io.ferry.Engine.TransportDeclared")
                && changed.stderr.contains("changing it here"), "\(changed)")
        #expect(try ctl.run(["transport", "ls"]).stdout.contains(folder), "unchanged")
        // (Another folder: one space syncs through a folder with one transport.)
        let otherFolder = folder + "-own"
        try FileManager.default.createDirectory(atPath: otherFolder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: otherFolder) }
        #expect(try ctl.run(["transport", "add", "own", "folder", otherFolder]).status == 0)
        let own = try ctl.run(["transport", "rm", "own"])
        #expect(own.status == 0 && own.stdout.hasPrefix("removed transport own"), "one added with ferryctl goes: \(own)")
        // A folder this ferryd can only read is taken (it reads the other devices' files), and
        // ferryctl says at once that it is read-only and how to allow it (a real read-only tmpfs).
        let readOnly = folder + "-ro"
        try FileManager.default.createDirectory(atPath: readOnly, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: readOnly) }
        if mount("tmpfs", readOnly, "tmpfs", UInt(MS_RDONLY), "size=1m") == 0 {
            defer { umount2(readOnly, Int32(MNT_DETACH)) }
            let added = try ctl.run(["transport", "add", "ro", "folder", readOnly])
            #expect(added.status == 0 && added.stderr.contains("note: the folder \(readOnly) is not writable")
                    && added.stderr.contains("ReadWritePaths=\(readOnly)"), "\(added)")
            #expect(try ctl.run(["transport", "rm", "ro"]).status == 0)
        } else {
            Issue.record("mounting a read-only tmpfs at \(readOnly) failed (errno \(errno)): this test needs root")
        }

        // Paused, 'sync' starts nothing and says so.
        #expect(try ctl.run(["sync", "pause"]).status == 0)
        let paused = try ctl.run(["sync"])
        #expect(paused.status == 1, "\(paused)")
        #expect(paused.stderr.contains("io.ferry.Engine.SyncPaused") && paused.stderr.contains("'ferryctl sync resume'"), "\(paused)")
        #expect(paused.stdout.isEmpty, "\(paused)")
        #expect(try ctl.run(["sync", "resume"]).status == 0)
        #expect(try ctl.run(["sync"]).status == 0)

        // A bundle of another owner: nothing imported, and an error that says whose phrase to restore.
        let other = try DaemonHarness(name: "ctl-other-owner")
        try other.start()
        defer { other.stop() }
        let otherCtl = try CtlRunner(socket: other.socketPath)
        #expect(try otherCtl.run(["put", "note", "O1", #"{"from": "other"}"#]).status == 0)
        let bundle = other.root + "/other.ferry"
        #expect(try otherCtl.run(["export", bundle]).status == 0)
        let otherOwner = try #require(try otherCtl.run(["owner", "show-phrase", "--json"]).json()["owner"]?.stringValue)
        let imported = try ctl.run(["import", bundle])
        #expect(imported.status == 1, "\(imported)")
        #expect(imported.stderr.contains("the bundle belongs to another owner (\(otherOwner))") && imported.stderr.contains("nothing was imported")
                && imported.stderr.contains("ferryctl owner restore"), "\(imported)")
        #expect(!imported.stdout.contains("imported"), "\(imported)")
        let importedJSON = try ctl.run(["import", bundle, "--json"])
        let skipped = try importedJSON.json()["skippedOwners"]
        #expect(importedJSON.status == 1 && skipped == [.string(otherOwner)], "\(importedJSON)")
        #expect(try ctl.run(["get", "note", "O1"]).status == 3)
    }

    // MARK: attachments

    @Test func attachAndDetach() throws {
        let (daemon, ctl) = try Self.start("ctl-attach")
        defer { daemon.stop() }
        let small = daemon.root + "/small.txt"
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: small))
        // Over the inline limit: ferryctl sends the path, and ferryd hands back its own copy's path.
        let big = daemon.root + "/big.bin"
        var generator = SystemRandomNumberGenerator()
        try Data((0..<(5 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: URL(fileURLWithPath: big))

        for file in [small, big] {
            let attached = try ctl.run(["attach", file])
            #expect(attached.status == 0, "\(attached)")
            let sha = attached.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(sha.count == 64 && sha.allSatisfy { $0.isHexDigit && !$0.isUppercase }, "\(attached)")
            if FileManager.default.isExecutableFile(atPath: "/usr/bin/sha256sum") {
                let expected = try ctl.run(["/usr/bin/sha256sum", file], raw: true).stdout.prefix(64)
                #expect(sha == expected, "ferryd's sha256 of \(file)")
            }
            let output = file + ".out"
            let detached = try ctl.run(["detach", sha, "-o", output])
            #expect(detached.status == 0, "\(detached)")
            #expect(FileManager.default.contents(atPath: output) == FileManager.default.contents(atPath: file))

            let put = try ctl.run(["put", "doc", #"{"name": "with attachment"}"#, "--attach", sha, "--json"]).json()
            #expect(put["record"]?["attachments"] == [.string(sha)])
        }
        let toStdout = try ctl.run(["detach", try ctl.run(["attach", small]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)])
        #expect(toStdout.stdout == "hello\n", "\(toStdout)")
        let fromStdin = try ctl.run(["attach", "-", "--json"], stdin: "piped bytes").json()
        #expect(fromStdin["size"] == 11)

        let unknown = try ctl.run(["detach", String(repeating: "a", count: 64)])
        #expect(unknown.status == 3, "\(unknown)")
        // Never stored here: not said to be on its way.
        #expect(unknown.stderr.contains("never stored here") && !unknown.stderr.contains("keeps fetching"), "\(unknown)")
        let missing = try ctl.run(["attach", daemon.root + "/no-such-file"])
        #expect(missing.status == 1 && missing.stderr.contains("no-such-file"), "\(missing)")
    }

    // MARK: watch

    @Test func watchFollowsAndResumesAcrossRestarts() throws {
        let (daemon, ctl) = try Self.start("ctl-watch")
        defer { daemon.stop() }

        let text = try ctl.background(["watch"])
        let json = try ctl.background(["watch", "--json", "--all-spaces"])
        #expect(text.waitForStderr("watching changes after cursor 0"), "\(text.stderr)")
        #expect(json.waitForLines(1), "\(json.stdout)")
        #expect(try ctl.run(["space", "create", "team"]).status == 0)
        #expect(try ctl.run(["put", "note", "W1", #"{"n": 1}"#]).status == 0)
        #expect(try ctl.run(["put", "note", "W2", #"{"n": 2}"#, "--space", "team"]).status == 0)
        #expect(try ctl.run(["rm", "note", "W1"]).status == 0)

        #expect(text.waitForLines(2), "\(text.stdout)")
        #expect(json.waitForLines(4), "\(json.stdout)")
        text.interrupt()
        json.interrupt()
        #expect(text.lines == [#"1 private note W1 put {"n":1}"#, "3 private note W1 delete -"], "only the private space: \(text.stdout)")
        let events = try json.lines.map { try JSONParser.parse($0) }
        #expect(events.first == ["cursor": 0])
        #expect(events.dropFirst().map { $0["record"]?["space"] } == ["private", "team", "private"])
        #expect(events.dropFirst().map { $0["cursor"] } == [1, 2, 3])

        // Filtered by entity, resumed from a cursor after a restart: nothing skipped, nothing repeated.
        daemon.stop()
        try daemon.start()
        #expect(try ctl.run(["put", "task", "K1", #"{"n": 3}"#]).status == 0)
        #expect(try ctl.run(["put", "note", "W3", #"{"n": 4}"#]).status == 0)
        let resumed = try ctl.background(["watch", "--since", "1", "--entity", "note"])
        #expect(resumed.waitForLines(2), "\(resumed.stdout)")
        resumed.interrupt()
        #expect(resumed.lines == ["3 private note W1 delete -", #"5 private note W3 put {"n":4}"#], "\(resumed.stdout)")
        // A cursor beyond the store's newest change (another store's) is refused with what to
        // run instead.
        let beyond = try ctl.run(["watch", "--since", "99999999"])
        #expect(beyond.status == 1 && beyond.stderr.contains("beyond this store's newest change (5)")
                && beyond.stderr.contains("'ferryctl watch --since 0', or 'ferryctl ls'"), "\(beyond)")

        // The daemon going away ends the watch with exit 1 and how to resume.
        let orphan = try ctl.background(["watch"])
        #expect(orphan.waitForStderr("watching changes"), "\(orphan.stderr)")
        daemon.stop()
        let status = orphan.wait()
        #expect(status == 1, "\(orphan.stderr)")
        #expect(orphan.stderr.contains("ferryctl watch --since 5"), "\(orphan.stderr)")
    }

    // MARK: support

    /// A started daemon and a ferryctl runner pointed at it.
    private static func start(_ name: String) throws -> (DaemonHarness, CtlRunner) {
        let daemon = try DaemonHarness(name: name)
        try daemon.start()
        return (daemon, try CtlRunner(socket: daemon.socketPath))
    }
}

/// Runs the built ferryctl with `--socket` of one daemon and a clean environment.
struct CtlRunner {
    struct Result: CustomStringConvertible {
        let status: Int32
        let stdout: String
        let stderr: String
        var description: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
        func json() throws -> JSONValue { try JSONParser.parse(stdout.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    let executable: String
    let socket: String

    init(socket: String) throws {
        executable = try Executables.path("ferryctl")
        self.socket = socket
    }

    /// `ferryctl --socket SOCKET arguments...`, or with `raw` the program in `arguments[0]`.
    func run(_ arguments: [String], stdin: String = "", raw: Bool = false) throws -> Result {
        let directory = NSTemporaryDirectory() + "ferryctl-it-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let process = try launch(arguments, raw: raw, directory: directory, stdin: stdin)
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline { usleep(2_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return Result(status: process.terminationStatus,
                      stdout: (try? String(contentsOfFile: directory + "/out", encoding: .utf8)) ?? "",
                      stderr: (try? String(contentsOfFile: directory + "/err", encoding: .utf8)) ?? "")
    }

    /// Starts `ferryctl --socket SOCKET arguments...` and returns at once (for `watch`).
    func background(_ arguments: [String]) throws -> Background {
        let directory = NSTemporaryDirectory() + "ferryctl-it-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return Background(process: try launch(arguments, raw: false, directory: directory, stdin: ""), directory: directory)
    }

    private func launch(_ arguments: [String], raw: Bool, directory: String, stdin: String) throws -> Process {
        for (name, contents) in [("in", stdin), ("out", ""), ("err", "")] {
            guard FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(contents.utf8)) else {
                throw HarnessError("cannot create \(directory)/\(name)")
            }
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: raw ? arguments[0] : executable)
        process.arguments = raw ? Array(arguments.dropFirst()) : ["--socket", socket] + arguments
        process.environment = ["PATH": "/usr/bin:/bin"]
        process.standardInput = FileHandle(forReadingAtPath: directory + "/in")
        process.standardOutput = FileHandle(forWritingAtPath: directory + "/out")
        process.standardError = FileHandle(forWritingAtPath: directory + "/err")
        try process.run()
        return process
    }

    /// A ferryctl still running, its output read back from files as it grows.
    final class Background {
        let process: Process
        let directory: String

        init(process: Process, directory: String) {
            self.process = process
            self.directory = directory
        }

        deinit {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            try? FileManager.default.removeItem(atPath: directory)
        }

        var stdout: String { (try? String(contentsOfFile: directory + "/out", encoding: .utf8)) ?? "" }
        var stderr: String { (try? String(contentsOfFile: directory + "/err", encoding: .utf8)) ?? "" }
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }

        /// Waits (up to 20 s) until stdout has at least `count` lines.
        func waitForLines(_ count: Int) -> Bool { poll { self.lines.count >= count } }

        /// Waits (up to 20 s) until stderr contains `text`.
        func waitForStderr(_ text: String) -> Bool { poll { self.stderr.contains(text) } }

        /// Ctrl-C, as a user stops `watch`; waits for the exit.
        func interrupt() {
            kill(process.processIdentifier, SIGINT)
            process.waitUntilExit()
        }

        /// Waits (up to 20 s) for it to exit by itself; its exit status, or -1 if it did not.
        func wait() -> Int32 {
            guard poll({ !self.process.isRunning }) else { return -1 }
            process.waitUntilExit()
            return process.terminationStatus
        }

        private func poll(_ condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                if condition() { return true }
                usleep(10_000)
            }
            return condition()
        }
    }
}
