import FerryAPI
import FerryClient
import FerryJSON
import Glibc

/// `ferryctl detach SHA [-o FILE]`: writes an attachment's bytes to a file or stdout.
enum DetachCommand: Command {
    static let name = "detach"
    static let synopsis = "SHA [-o FILE]"
    static let summary = "write an attachment to FILE, or to stdout"
    static let details = "Exit 3 when ferryd holds no attachment with that sha256."
    static let options = [
        OptionSpec("output", short: "o", value: "FILE", help: "write to FILE instead of stdout"),
    ]

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        let sha256 = try arguments.positionals(["SHA"])[0]
        let output = arguments.value("output").flatMap { $0 == "-" ? nil : $0 }
        if context.json && output == nil {
            throw .usage("--json prints the reply, not the bytes: give -o FILE, or leave out --json")
        }
        let client = try context.connect()
        let attachment = try await daemon { () async throws(FerryClientError) in
            try await client.getAttachment(sha256: sha256)
        }
        let name = output ?? "stdout"
        do throws(FileIO.Failure) {
            var fd: Int32 = 1
            if let output { fd = try FileIO.create(output) }
            defer { if fd != 1 { _ = close(fd) } }
            let written: Int64
            switch attachment.content {
            case .inline(let bytes):
                try FileIO.write(bytes, to: fd, name: name)
                written = Int64(bytes.count)
            case .file(let path):
                written = try FileIO.copy(from: path, to: fd, name: name)
            }
            guard written == attachment.size else {
                throw FileIO.Failure("attachment \(sha256) should have \(attachment.size) bytes but \(written) were read; "
                    + "check ferryd's state directory")
            }
        } catch {
            throw .local(error.description)
        }
        if context.json { Output.json(attachment.jsonWithoutData) }
    }
}

extension FetchedAttachment {
    /// The reply as `--json` shows it when the bytes went to a file: without the data.
    var jsonWithoutData: JSONValue {
        var object: [String: JSONValue] = ["sha256": .string(sha256), "size": .int(size)]
        if case .file(let path) = content { object["path"] = .string(path) }
        return .object(object)
    }
}
