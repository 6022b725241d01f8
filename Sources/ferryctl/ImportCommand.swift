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
        queued for every transport. A damaged bundle changes nothing. A space of an owner
        that no space here has is left out and the command fails (exit 1): restore that
        owner's phrase first ('ferryctl owner restore --space NAME PHRASE'). Records or
        attachments that do not open or verify are left out and the command fails (exit 1).
        """

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        let path = BundlePath.absolute(try arguments.positionals(["FILE"])[0])
        let client = try context.connect()
        let s = try await daemon { () async throws(FerryClientError) in try await client.importBundle(from: path) }
        if context.json {
            Output.json(.object(["applied": .int(Int64(s.applied)), "duplicates": .int(Int64(s.duplicates)),
                                 "lost": .int(Int64(s.lost)), "refused": .int(Int64(s.refused)),
                                 "skippedOwners": .array(s.skippedOwners.map { .string($0) })]))
        }
        let counted = s.applied + s.duplicates + s.lost + s.refused
        if !context.json && (counted > 0 || s.skippedOwners.isEmpty) {
            Output.line("imported \(path): \(s.applied) applied, \(s.duplicates) already here, \(s.lost) older than what is here, \(s.refused) refused")
        }
        if s.skippedOwners.isEmpty && s.refused > 0 {
            // Envelopes or attachments that did not open or verify (damaged, or not sealed by
            // this owner's keys): what the bundle holds did not all arrive, so not a success.
            throw .incomplete("\(s.refused) of the bundle's records or attachments did not open or verify (damaged or tampered "
                + "with since it was written, or not sealed with this owner's keys) and were left out; the rest was imported: "
                + "export the bundle again from its source and import that")
        }
        guard !s.skippedOwners.isEmpty else { return }
        // Data sealed for an owner no space here has cannot be opened: not a success.
        let owners = s.skippedOwners.sorted().joined(separator: ", ")
        let what = counted == 0
            ? "the bundle belongs to another owner (\(owners)) than any space here, so nothing was imported"
            : "part of the bundle belongs to another owner (\(owners)) than any space here, so that part was not imported"
        throw .incomplete(what + ": restore that owner's recovery phrase on this device into the space that should hold "
            + "the data ('ferryctl owner restore --space NAME PHRASE'; 'ferryctl space create NAME' makes a new one), "
            + "then import again")
    }
}
