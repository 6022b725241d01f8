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
        a path ferryd can write.
        """

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        let path = BundlePath.absolute(try arguments.positionals(["FILE"])[0])
        let client = try context.connect()
        let summary = try await daemon { () async throws(FerryClientError) in try await client.exportBundle(to: path) }
        if context.json {
            Output.json(.object(["spaces": .int(Int64(summary.spaces)), "records": .int(Int64(summary.records)),
                                 "attachments": .int(Int64(summary.attachments)), "bytes": .int(summary.bytes)]))
        } else {
            Output.line("exported \(summary.records) record(s) and \(summary.attachments) attachment(s) of \(summary.spaces) space(s) to \(path) (\(Format.bytes(summary.bytes)))")
        }
    }
}

/// Makes a path absolute against the current directory (ferryd has its own).
enum BundlePath {
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}
