import FerryAPI
import FerryClient
import FerryJSON
import Glibc

/// `ferryctl attach FILE`: stores a file as an attachment and prints its sha256.
enum AttachCommand: Command {
    static let name = "attach"
    static let synopsis = "FILE|-"
    static let summary = "store a file as an attachment and print its sha256"
    static let details = """
        Reference the printed sha256 from a record with 'ferryctl put ... --attach SHA'.
        Files up to 4 MiB (and stdin, -, up to 8 MiB) are sent inline; larger files are
        read by ferryd itself from their path, so ferryd must be able to see that path
        (a sandboxed service may have a private /tmp).
        """

    /// Files up to this size are sent inline: that works whatever the daemon's sandbox can see.
    static let inlineLimit: Int64 = 4 << 20
    /// The most the API takes inline.
    static let stdinLimit = 8 << 20

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        let path = try arguments.positionals(["FILE"])[0]
        var inline: [UInt8]?
        do {
            if path == "-" {
                inline = try FileIO.readAll(fd: 0, name: "stdin", limit: stdinLimit)
            } else if try FileIO.regularFileSize(path) <= inlineLimit {
                let fd = try FileIO.openForReading(path)
                defer { _ = close(fd) }
                inline = try FileIO.readAll(fd: fd, name: path, limit: Int(inlineLimit) * 2)
            }
        } catch {
            throw .local(error.description)
        }
        let client = try context.connect()
        let info = try await daemon { () async throws(FerryClientError) in
            if let inline {
                return try await client.putAttachment(data: inline)
            }
            return try await client.putAttachment(path: path)
        }
        if context.json {
            Output.json(info.json)
        } else {
            Output.line(info.sha256)
        }
    }
}
