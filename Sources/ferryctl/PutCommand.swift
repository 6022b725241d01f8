import FerryAPI
import FerryClient
import FerryJSON

/// `ferryctl put ENTITY [ID] JSON|-`: writes a version of a record.
enum PutCommand: Command {
    static let name = "put"
    static let synopsis = "ENTITY [ID] JSON|- [--attach SHA ...]"
    static let summary = "write a record; the payload is a JSON object, or - to read it from stdin"
    static let details = """
        Without ID the record is new and gets a new upper-case UUID. The write is durable when
        the command returns. Attachments are referenced by the sha256 'ferryctl attach' printed.
        """
    static let takesSpace = true
    static let options = [
        OptionSpec("attach", value: "SHA", repeatable: true, help: "reference an attachment (repeatable)"),
    ]

    /// The most `put -` reads from stdin (the daemon's own payload limit is lower).
    static let stdinLimit = 16 << 20

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        let positionals = arguments.positionals
        switch positionals.count {
        case 0: throw .usage("missing ENTITY")
        case 1: throw .usage("missing JSON (the payload, or - for stdin)")
        case 2, 3: break
        default: throw .usage("unexpected argument \"\(positionals[3])\"")
        }
        let entity = positionals[0]
        let id = positionals.count == 3 ? positionals[1] : nil
        let payload = try readPayload(positionals.last!)
        let attachments = arguments.all("attach")
        let client = try context.connect()
        let record: WireRecord
        do throws(CommandFailure) {
            // The payload goes as typed, byte for byte (docs/api.md: stored exactly as sent).
            record = try await daemon { () async throws(FerryClientError) in
                try await client.put(space: context.space, entity: entity, id: id, payloadJSON: payload,
                                     attachments: attachments.isEmpty ? nil : attachments)
            }
        } catch .client(let error) where error.isNotFound {
            // An attachment the daemon does not hold: a refused write (exit 1), not a lookup. Its
            // message says to store the file first.
            throw .local(error.description)
        }
        if context.json {
            Output.json(record: record)
        } else {
            Output.out(Format.recordView(record))
        }
    }

    /// The payload object's text, from the argument or from stdin for `-`, checked to be one
    /// JSON object.
    static func readPayload(_ argument: String) throws(CommandFailure) -> String {
        let bytes: [UInt8]
        if argument == "-" {
            do {
                bytes = try FileIO.readAll(fd: 0, name: "stdin", limit: stdinLimit)
            } catch {
                throw .local(error.description)
            }
        } else {
            bytes = Array(argument.utf8)
        }
        let parsed: JSONValue
        do {
            parsed = try JSONParser.parse(bytes)
        } catch {
            throw .usage("the payload is not valid JSON (\(error)); quote it for the shell, e.g. '{\"title\": \"milk\"}'")
        }
        guard case .object = parsed else {
            throw .usage("the payload must be a JSON object, not \(article(parsed.typeName)) (for example '{\"title\": \"milk\"}')")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func article(_ word: String) -> String {
        (word.first.map { "aeiou".contains($0) } ?? false ? "an " : "a ") + word
    }
}
