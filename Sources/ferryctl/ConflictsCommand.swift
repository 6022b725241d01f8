import FerryAPI
import FerryClient
import FerryJSON

/// `ferryctl conflicts ENTITY ID [--restore HLC]`: the versions of a record that lost a merge.
enum ConflictsCommand: Command {
    static let name = "conflicts"
    static let synopsis = "ENTITY ID [--restore HLC]"
    static let summary = "list the versions of a record that lost a merge, or restore one"
    static let details = """
        Lists the kept losing versions, newest first, with where each came from. --restore HLC
        makes the losing version with that stamp current again, as a new version that wins on
        every device. Exit 3 when the record (or, with --restore, that version) is unknown.
        """
    static let takesSpace = true
    static let options = [
        OptionSpec("restore", value: "HLC", help: "make the losing version with this stamp current again"),
    ]

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        let positionals = try arguments.positionals(["ENTITY", "ID"])
        let (entity, id) = (positionals[0], positionals[1])
        let client = try context.connect()
        if let hlc = arguments.value("restore") {
            let record = try await daemon { () async throws(FerryClientError) in
                try await client.restoreConflict(space: context.space, entity: entity, id: id, hlc: hlc)
            }
            if context.json {
                Output.json(record: record)
            } else {
                Output.note("restored the version of \(hlc) as \(record.hlc)")
                Output.out(Format.recordView(record))
            }
            return
        }
        let versions = try await daemon { () async throws(FerryClientError) in
            try await client.conflicts(space: context.space, entity: entity, id: id)
        }
        if versions.isEmpty {
            // No losing versions: say whether that is because the record does not exist (exit 3).
            let record = try await daemon { () async throws(FerryClientError) in
                try await client.get(space: context.space, entity: entity, id: id)
            }
            if record == nil {
                if context.json { Output.json(.object(["versions": .array([])])) }
                throw .unknownRecord(entity, id, space: context.space, lsOptions: " --all")
            }
        }
        if context.json {
            var verbatim = VerbatimJSON()
            let items = versions.map { verbatim.replacingRecord(in: $0.json, with: $0.record) }
            Output.json(.object(["versions": .array(items)]), verbatim)
            return
        }
        guard !versions.isEmpty else {
            Output.note("no losing versions of \(entity)/\(id) on this device (a device keeps the versions that lost merges it made itself; one that only got the winner has none)")
            return
        }
        var table = Table("HLC", "ORIGIN", "LOST TO", "LOST AT", "DELETED", "PAYLOAD")
        for version in versions {
            table.add(version.record.hlc, version.origin, version.winner, Format.time(version.lostAt),
                      version.record.deleted ? "yes" : "no", Format.payload(version.record, limit: 50))
        }
        Output.out(table.render())
    }
}
