import FerryClient
import FerryJSON
import Foundation

/// `ferryctl transport ls | add NAME KIND LOCATION | rm NAME`.
enum TransportCommand: Command {
    static let name = "transport"
    static let synopsis = "ls | add NAME folder PATH | add NAME relay URL (--code CODE | --token TOKEN) | rm NAME"
    static let summary = "list, add or remove the transports a space syncs through"
    static let details = """
        A folder transport syncs through a directory that a file-sync tool (Syncthing,
        Dropbox, Nextcloud, iCloud Drive) keeps the same on every device: each device writes
        only files of its own there, sealed so the tool and its host see only ciphertext.
        A relay transport syncs through a ferry-relay server, which stores only sealed
        envelopes: pair with --code CODE from 'ferryctl relay pair' on a device already on the
        relay, or give the first device the --token its operator created (checked with the
        relay at once; when the relay cannot be reached the transport is added with a warning).
        Adding a transport queues every record of the space for it; removing one drops its
        progress and keeps the data. A transport declared in ferryd.conf ([Transport NAME])
        is not removed with 'rm' (a reload would bring it back): delete its section there and
        reload ferryd. Every device of an owner must share its recovery phrase first: see
        'ferryctl owner'.
        """
    static let options = [
        OptionSpec("code", value: "CODE", help: "for a relay: a pairing code from 'ferryctl relay pair'"),
        OptionSpec("token", value: "TOKEN", help: "for a relay: a token from the relay's operator"),
    ]
    static let takesSpace = true

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        guard let action = arguments.positionals.first else { throw .usage("missing ls, add or rm") }
        switch action {
        case "ls", "list":
            _ = try arguments.positionals(["ls"])
            let client = try context.connect()
            let list = try await daemon { () async throws(FerryClientError) in try await client.transports(space: context.space) }
            if context.json {
                Output.json(.object(["transports": .array(list.map(\.json))]))
                return
            }
            if list.isEmpty {
                Output.note("no transports" + (context.space.map { " in space \($0)" } ?? "") + "; add one with 'ferryctl transport add NAME folder PATH' or 'ferryctl transport add NAME relay URL --code CODE'")
                return
            }
            var table = Table("TRANSPORT", "SPACE", "KIND", "LOCATION", "STATE", "PENDING", "LAST SUCCESS", "PROBLEM")
            for t in list {
                // Only what is wrong now: an error that a later success of the same loop put
                // right is history (`ferryctl status` shows the last one with its time).
                let problem = t.problem ?? t.transportMessage ?? "-"
                table.add(t.name, t.space, t.kind, t.location ?? "-", t.state ?? "-", String(t.pending),
                          Format.time(t.lastSuccessAt), problem)
            }
            Output.out(table.render())
        case "add":
            let p = try arguments.positionals(["add", "NAME", "KIND", "LOCATION"])
            let isFolder = p[2] == "folder"
            let location = !isFolder || p[3].hasPrefix("/") ? p[3] : FileManager.default.currentDirectoryPath + "/" + p[3]
            let code = arguments.value("code"), token = arguments.value("token")
            if isFolder && (code != nil || token != nil) { throw .usage("--code and --token are for relay transports") }
            if code != nil && token != nil {
                throw .usage("use one of --token or --code: --code CODE pairs with a code from 'ferryctl relay pair', --token TOKEN uses a token from the relay's operator")
            }
            if p[2] == "relay" && code == nil && token == nil {
                throw .usage("a relay transport needs --code CODE (from 'ferryctl relay pair' on a device already syncing through the relay) or --token TOKEN (from the relay's operator)")
            }
            let client = try context.connect()
            // A transport of that name already there is reconfigured, not added.
            let existed = ((try? await client.transports(space: context.space)) ?? []).contains { $0.name == p[1] }
            let result = try await daemon { () async throws(FerryClientError) in
                try await client.addTransport(space: context.space, name: p[1], kind: p[2], location: location, code: code, token: token)
            }
            let added = result.transport
            if context.json {
                var document: [String: JSONValue] = ["transport": added.json]
                if let warning = result.warning { document["warning"] = .string(warning) }
                Output.json(.object(document))
            } else {
                Output.line("\(existed ? "updated" : "added") \(added.kind) transport \(added.name) \(existed ? "of" : "to") space \(added.space) "
                    + "(\(added.location ?? location)); \(added.pending) record(s) queued for it")
            }
            if let warning = result.warning { Output.note("warning: \(warning)") }
            // A folder this ferryd can only read still syncs one way (it reads the others' files);
            // say so now rather than at the first push.
            if added.transportState == "read-only", let message = added.transportMessage {
                Output.note("note: \(message)")
            }
        case "rm", "remove":
            let p = try arguments.positionals(["rm", "NAME"])
            let client = try context.connect()
            try await daemon { () async throws(FerryClientError) in try await client.removeTransport(space: context.space, name: p[1]) }
            if context.json { Output.json(.object([:])) } else { Output.line("removed transport \(p[1]); the data stays on this device") }
        default:
            throw .usage("unknown transport command '\(action)' (ls, add or rm)")
        }
    }
}
