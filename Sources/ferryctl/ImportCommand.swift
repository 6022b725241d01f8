import FerryClient
import FerryJSON

/// `ferryctl import FILE`: merges a bundle written by `ferryctl export`.
enum ImportCommand: Command {
    static let name = "import"
    static let synopsis = "FILE"
    static let summary = "merge a bundle written by 'ferryctl export' with the merge rules"
    static let details = """
        Each space of the bundle is merged into the space here with the same owner; newer
        versions win, tombstones keep deleted records deleted, and imported changes are
        queued for every transport. A damaged bundle changes nothing.
        """

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        let path = BundlePath.absolute(try arguments.positionals(["FILE"])[0])
        let client = try context.connect()
        let s = try await daemon { () async throws(FerryClientError) in try await client.importBundle(from: path) }
        if context.json {
            Output.json(.object(["applied": .int(Int64(s.applied)), "duplicates": .int(Int64(s.duplicates)),
                                 "lost": .int(Int64(s.lost)), "refused": .int(Int64(s.refused)),
                                 "skippedOwners": .array(s.skippedOwners.map { .string($0) })]))
            return
        }
        Output.line("imported \(path): \(s.applied) applied, \(s.duplicates) already here, \(s.lost) older than what is here, \(s.refused) refused")
        for owner in s.skippedOwners {
            Output.note("skipped owner \(owner): no space here belongs to it; restore its phrase first with 'ferryctl owner restore --space NAME PHRASE'")
        }
    }
}
