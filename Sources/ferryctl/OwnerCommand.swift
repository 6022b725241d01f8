import FerryClient
import FerryJSON

/// `ferryctl owner show-phrase | restore PHRASE`.
enum OwnerCommand: Command {
    static let name = "owner"
    static let synopsis = "show-phrase | restore PHRASE"
    static let summary = "show a space's recovery phrase, or make this device's space the owner of one"
    static let details = """
        Everything a space syncs is sealed with its owner's keys. show-phrase prints the
        recovery phrase: whoever has it can read and write the space's synced data, so keep
        it like a password. On another device, 'ferryctl owner restore PHRASE' makes that
        device's space the same owner; its records stay and are queued for upload. Both take
        --space (default: the private space).
        """
    static let takesSpace = true

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        guard let action = arguments.positionals.first else { throw .usage("missing show-phrase or restore") }
        let client = try context.connect()
        switch action {
        case "show-phrase":
            _ = try arguments.positionals(["show-phrase"])
            let (owner, phrase) = try await daemon { () async throws(FerryClientError) in try await client.ownerPhrase(space: context.space) }
            if context.json {
                Output.json(.object(["owner": .string(owner), "phrase": .string(phrase)]))
            } else {
                Output.line("owner \(owner)")
                Output.line(phrase)
                if let space = context.space, space != "private" {
                    // Restored into the other device's private space, this phrase would send that
                    // device's private records to everyone who shares this space.
                    Output.note("Keep this phrase secret: it opens everything the space syncs. On another device, create the space "
                        + "('ferryctl space create \(space)', unless it is there) and restore it into that space: "
                        + "'ferryctl --space \(space) owner restore \"PHRASE\"'. Without --space it would become that device's private "
                        + "space, whose records would then go to everyone who shares \(space).")
                } else {
                    Output.note("Keep this phrase secret: it opens everything the space syncs. Restore it on another device with 'ferryctl owner restore \"PHRASE\"'.")
                }
            }
        case "restore":
            guard arguments.positionals.count >= 2 else { throw .usage("missing PHRASE") }
            // The phrase may be passed as one argument or as its groups.
            let phrase = arguments.positionals.dropFirst().joined(separator: "-")
            // The owner before, to tell a restore of the owner the space has already.
            let previous = try? await client.spaces().first { $0.name == (context.space ?? "private") }?.owner
            let (owner, relays) = try await daemon { () async throws(FerryClientError) in
                try await client.restoreOwnerReport(space: context.space, phrase: phrase)
            }
            if context.json {
                var object: [String: JSONValue] = ["owner": .string(owner)]
                if !relays.isEmpty { object["relaysToPairAgain"] = .array(relays.map { .string($0) }) }
                Output.json(.object(object))
            } else if previous == owner {
                Output.line("space \(context.space ?? "private") belongs to owner \(owner) already; nothing changed")
            } else {
                Output.line("space \(context.space ?? "private") now belongs to owner \(owner); its records are queued for upload")
            }
            if !relays.isEmpty {
                Output.note("the relay transport(s) \(relays.joined(separator: ", ")) hold a token of the space's previous owner: pair each "
                    + "again with a code from a device of this owner ('ferryctl relay pair' there, then 'ferryctl transport add NAME relay URL --code CODE' here)")
            }
        default:
            throw .usage("unknown owner command '\(action)' (show-phrase or restore)")
        }
    }
}
