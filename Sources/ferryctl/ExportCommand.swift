import FerryClient
import FerryJSON
import Foundation

/// `ferryctl export FILE`: a sealed bundle of the whole store.
enum ExportCommand: Command {
    static let name = "export"
    static let synopsis = "FILE"
    static let summary = "write a sealed bundle of every space, to carry to a device with no shared folder"
    static let details = """
        The bundle holds every record, tombstone and attachment, each space sealed under its
        owner's keys. Import it on a device that has the same owners ('ferryctl owner
        restore') with 'ferryctl import FILE'. ferryd writes the file itself, so it must be
        a path ferryd can write. An attachment whose bytes are not on this device (not arrived
        yet, or found gone or damaged here) is left out; the command then says so and fails
        (exit 1), though the bundle is written and imports.
        """

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        let path = BundlePath.absolute(try arguments.positionals(["FILE"])[0])
        let client = try context.connect()
        let summary = try await daemon { () async throws(FerryClientError) in try await client.exportBundle(to: path) }
        if context.json {
            Output.json(.object(["spaces": .int(Int64(summary.spaces)), "records": .int(Int64(summary.records)),
                                 "attachments": .int(Int64(summary.attachments)),
                                 "attachmentsLeftOut": .int(Int64(summary.attachmentsLeftOut)), "bytes": .int(summary.bytes)]))
        } else {
            Output.line("exported \(summary.records) record(s) and \(summary.attachments) attachment(s) of \(summary.spaces) space(s) to \(path) (\(Format.bytes(summary.bytes)))")
        }
        if summary.attachmentsLeftOut > 0 {
            // The bundle is whole and imports; what it lacks is said, and the exit code is 1.
            throw .incomplete("\(summary.attachmentsLeftOut) attachment(s) the records reference were left out of the bundle: "
                + "their bytes are not on this device (not arrived yet, or found gone or damaged here); "
                + "'ferryctl status' shows what is missing; export again once they are here")
        }
    }
}

/// Makes a path absolute against the current directory (ferryd has its own).
enum BundlePath {
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}
