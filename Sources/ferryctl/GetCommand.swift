import FerryAPI
import FerryClient
import FerryJSON

/// `ferryctl get ENTITY ID`: one record at its current version.
enum GetCommand: Command {
    static let name = "get"
    static let synopsis = "ENTITY ID"
    static let summary = "print a record (exit 3 when it is unknown)"
    static let details = "A deleted record prints as a tombstone (deleted: yes, no payload)."
    static let takesSpace = true

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        let positionals = try arguments.positionals(["ENTITY", "ID"])
        let (entity, id) = (positionals[0], positionals[1])
        let client = try context.connect()
        let record = try await daemon { () async throws(FerryClientError) in
            try await client.get(space: context.space, entity: entity, id: id)
        }
        if context.json {
            if let record { Output.json(record: record) } else { Output.json(.object([:])) }
        }
        guard let record else {
            throw .unknownRecord(entity, id, space: context.space)
        }
        if !context.json { Output.out(Format.recordView(record)) }
    }
}
