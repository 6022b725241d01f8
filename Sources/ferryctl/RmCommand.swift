import FerryAPI
import FerryClient
import FerryJSON

/// `ferryctl rm ENTITY ID`: deletes a record.
enum RmCommand: Command {
    static let name = "rm"
    static let synopsis = "ENTITY ID"
    static let summary = "delete a record (exit 3 when it is unknown)"
    static let details = """
        Writes a tombstone with a new stamp, so the delete wins on every device. A record
        deleted already stays as it is (its tombstone keeps its stamp), and ferryctl says so.
        """
    static let takesSpace = true

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        let positionals = try arguments.positionals(["ENTITY", "ID"])
        let (entity, id) = (positionals[0], positionals[1])
        let client = try context.connect()
        // Deleted already: nothing is written, and saying "deleted" would suggest a new delete.
        let current = try? await client.get(space: context.space, entity: entity, id: id)
        let already = current?.deleted == true
        let record: WireRecord
        do throws(CommandFailure) {
            record = try await daemon { () async throws(FerryClientError) in
                try await client.delete(space: context.space, entity: entity, id: id)
            }
        } catch {
            if case .client(let e) = error, e.isNotFound {
                throw .unknownRecord(entity, id, space: context.space)
            }
            throw error
        }
        if context.json {
            Output.json(.object(["record": record.json]))
        } else if already && record.hlc == current?.hlc {
            Output.line("\(record.entity)/\(record.id) in space \(record.space) was deleted already (at \(record.hlc)); nothing changed")
        } else {
            Output.line("deleted \(record.entity)/\(record.id) in space \(record.space) at \(record.hlc)")
        }
    }
}
