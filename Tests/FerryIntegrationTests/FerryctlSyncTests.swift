import FerryJSON
import FerryTestSupport
import Foundation
import Testing

/// The sync commands of the built `ferryctl` against two real ferryd: owners and recovery
/// phrases, folder transports, pause and resume, export and import.
@Suite(.serialized) struct FerryctlSyncTests {
    @Test func ownersTransportsPauseAndBundles() async throws {
        let folder = TempDir("ctl-folder")
        let a = try SyncDevice("ctl-a"), b = try SyncDevice("ctl-b")
        try a.start(); try b.start()
        let ca = try CtlRunner(socket: a.harness.socketPath), cb = try CtlRunner(socket: b.harness.socketPath)
        // Owners exist as soon as the socket answers.
        #expect(try await a.client().spaces().allSatisfy { $0.owner != nil })

        let shown = try ca.run(["owner", "show-phrase", "--json"])
        #expect(shown.status == 0, "\(shown)")
        let phrase = try #require(try shown.json()["phrase"]?.stringValue)
        let owner = try shown.json()["owner"]?.stringValue
        let human = try ca.run(["owner", "show-phrase"])
        #expect(human.stdout.contains(phrase) && human.stderr.contains("secret"), "\(human)")

        // A typo is caught by the checksum and changes nothing.
        var typo = Array(phrase)
        typo[3] = typo[3] == "X" ? "Y" : "X"
        let wrong = try cb.run(["owner", "restore", String(typo)])
        #expect(wrong.status == 1 && wrong.stderr.contains("typo"), "\(wrong)")
        // Lower case and spaces for dashes are fine.
        let restored = try cb.run(["owner", "restore", phrase.lowercased().replacingOccurrences(of: "-", with: " "), "--json"])
        #expect(restored.status == 0, "\(restored)")
        #expect(try restored.json()["owner"]?.stringValue == owner)
        // The same phrase again changes nothing, and says so.
        let again = try cb.run(["owner", "restore", phrase])
        #expect(again.status == 0 && again.stdout.contains("belongs to owner \(owner ?? "-") already; nothing changed"), "\(again)")

        let missing = try ca.run(["transport", "add", "f", "folder", folder.path + "/nope"])
        #expect(missing.status == 1 && missing.stderr.contains("not an existing directory"), "\(missing)")
        let unknown = try ca.run(["transport", "add", "f", "carrier-pigeon", folder.path])
        #expect(unknown.status == 1 && unknown.stderr.contains("known kinds: folder"), "\(unknown)")
        #expect(try ca.run(["transport", "add", "f", "folder", folder.path]).status == 0)
        #expect(try cb.run(["transport", "add", "f", "folder", folder.path]).status == 0)
        // The same folder under another name (spelled differently) would write the same files.
        let twin = try ca.run(["transport", "add", "g", "folder", folder.path + "/./"])
        #expect(twin.status == 1 && twin.stderr.contains("transport f of space private already syncs through"), "\(twin)")
        // Through a symbolic link too.
        let link = TempDir("ctl-folder-link")
        try FileManager.default.createSymbolicLink(atPath: link.path + "/l", withDestinationPath: folder.path)
        let linked = try ca.run(["transport", "add", "g", "folder", link.path + "/l"])
        #expect(linked.status == 1 && linked.stderr.contains("transport f of space private already syncs through"), "\(linked)")
        // A shared space's phrase is to be restored into a space of that name, not the private one.
        #expect(try ca.run(["space", "create", "team"]).status == 0)
        let team = try ca.run(["--space", "team", "owner", "show-phrase"])
        #expect(team.status == 0 && team.stderr.contains("'ferryctl --space team owner restore \"PHRASE\"'")
                && team.stderr.contains("Without --space"), "\(team)")
        #expect(!human.stderr.contains("--space"), "\(human)")
        // A second space of the same owner would write them too: the restore is refused.
        #expect(try cb.run(["space", "create", "dup"]).status == 0)
        let dup = try cb.run(["--space", "dup", "owner", "restore", phrase])
        #expect(dup.status == 1 && dup.stderr.contains("space private on this device already belongs to the owner"), "\(dup)")
        let listed = try ca.run(["transport", "ls"])
        #expect(listed.status == 0 && listed.lines.first?.hasPrefix("TRANSPORT") == true && listed.stdout.contains(folder.path), "\(listed)")

        #expect(try ca.run(["put", "note", "N1", #"{"t":1}"#]).status == 0)
        #expect(try await eventually(.seconds(60)) { try await b.records()["N1"] != nil })

        // Paused, b keeps its change in the outbox; resumed, it goes out.
        let round = try cb.run(["sync"])
        #expect(round.status == 0 && round.stdout.hasPrefix("sync started; see 'ferryctl status'"), "\(round)")
        #expect(try cb.run(["sync", "pause"]).status == 0)
        #expect(try cb.run(["status", "--json"]).json()["state"] == "paused")
        #expect(try cb.run(["put", "note", "N2", #"{"t":2}"#]).status == 0)
        try await Task.sleep(for: .milliseconds(500))
        #expect(try await a.records()["N2"] == nil)
        #expect(try cb.run(["sync", "resume"]).status == 0)
        #expect(try await eventually(.seconds(60)) { try await a.records()["N2"] != nil })

        // Send and Receive: a third device of the same owner, no folder.
        let c = try SyncDevice("ctl-c")
        try c.start()
        let cc = try CtlRunner(socket: c.harness.socketPath)
        #expect(try cc.run(["owner", "restore", phrase]).status == 0)
        let bundle = folder.path + "/../ctl-bundle-\(UUID().uuidString).ferry"
        defer { try? FileManager.default.removeItem(atPath: bundle) }
        let exported = try ca.run(["export", bundle, "--json"])
        #expect(exported.status == 0, "\(exported)")
        #expect(try exported.json()["records"] == 2 && exported.json()["attachmentsLeftOut"] == 0)
        // Into a directory that is not there: said so, not in terms of a temporary file.
        let nowhere = try ca.run(["export", folder.path + "/no-such-dir/b.ferry"])
        #expect(nowhere.status == 1 && nowhere.stderr.contains("the directory \(folder.path)/no-such-dir does not exist")
                && !nowhere.stderr.contains("partial"), "\(nowhere)")
        let imported = try cc.run(["import", bundle])
        #expect(imported.status == 0 && imported.stdout.contains("2 applied"), "\(imported)")
        #expect(try await c.records() == a.records())
        #expect(!(try String(contentsOfFile: bundle, encoding: .isoLatin1)).contains("\"t\""))
        let damaged = folder.path + "/../ctl-damaged-\(UUID().uuidString).ferry"
        defer { try? FileManager.default.removeItem(atPath: damaged) }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: bundle))
        try bytes.prefix(bytes.count - 5).write(to: URL(fileURLWithPath: damaged))
        let refused = try cc.run(["import", damaged])
        #expect(refused.status == 1 && refused.stderr.contains("nothing was imported"), "\(refused)")

        #expect(try cb.run(["transport", "rm", "f"]).status == 0)
        let gone = try cb.run(["transport", "rm", "f"])   // unknown now: "not found", exit 3
        #expect(gone.status == 3 && gone.stderr.contains("no transport named f"), "\(gone)")
        // Named in the wrong space: the error says which space has it.
        let teamFolder = TempDir("ctl-team-folder")
        #expect(try ca.run(["--space", "team", "transport", "add", "tf", "folder", teamFolder.path]).status == 0)
        let wrongSpace = try ca.run(["transport", "rm", "tf"])
        #expect(wrongSpace.status == 3 && wrongSpace.stderr.contains("space team has one: pass --space team"), "\(wrongSpace)")
    }
}
