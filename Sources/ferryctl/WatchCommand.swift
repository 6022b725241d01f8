import FerryAPI
import FerryClient
import FerryJSON

/// `ferryctl watch`: follows changes like `tail -f`, one line per change, until interrupted.
enum WatchCommand: Command {
    static let name = "watch"
    static let synopsis = "[--since CURSOR] [--entity E ...] [--space S ... | --all-spaces]"
    static let summary = "follow changes, one line per change, until interrupted"
    static let details = """
        Each line is: CURSOR SPACE ENTITY ID put|delete PAYLOAD. The cursor of the last line
        seen, passed as --since, resumes after it (across daemon restarts too) with nothing
        skipped. Without --since the watch starts at the current end of the change log.
        If ferryd says the watcher fell behind, ferryctl resumes from its cursor by itself; if
        ferryd goes away, the watch ends (exit 1) saying which --since resumes it.
        With --json every reply of the daemon is printed as one JSON document per line: the
        first carries only the starting cursor.
        """
    static let takesSpace = true
    static let takesSeveralSpaces = true
    static let options = [
        OptionSpec("since", value: "CURSOR", help: "resume after this cursor"),
        OptionSpec("entity", value: "E", repeatable: true, help: "only changes of this entity kind (repeatable)"),
        OptionSpec("all-spaces", help: "follow every space (default: the private space, or the --space ones)"),
    ]

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        _ = try arguments.positionals([])
        var since = try arguments.integerOption("since", in: 0...Int64.max)
        let entities = arguments.all("entity")
        var spaces: [String]? = context.spaces.isEmpty ? nil : context.spaces
        if arguments.has("all-spaces") {
            guard spaces == nil else { throw .usage("--all-spaces and --space exclude each other") }
            spaces = FerryClient.allSpaces
        }
        let client = try context.connect()
        var watched = false
        while true {
            do throws(FerryClientError) {
                try await follow(client, since: since, spaces: spaces, entities: entities, json: context.json) { cursor in
                    since = cursor
                    watched = true
                }
                return
            } catch {
                // A watcher told where to resume (it fell behind, or ferryd is stopping) does so,
                // as tail -f would.
                if error.remoteErrorName == "ResumeFromCursor", case .remote(_, _, let parameters) = error {
                    let cursor = parameters["cursor"]?.intValue ?? since ?? 0
                    // The daemon's reason, without its advice to API clients (this is it).
                    let message = parameters["message"]?.stringValue ?? "fell behind"
                    let why = message.split(separator: ":", maxSplits: 1).first.map(String.init) ?? message
                    Output.note("ferryctl: \(why); resuming after cursor \(cursor)")
                    since = cursor
                    continue
                }
                // A cursor from another store (or from before a restore): the daemon's advice in
                // this tool's words.
                if error.remoteErrorName == "InvalidArgument", case .remote(_, let message, let parameters) = error,
                   parameters["parameter"]?.stringValue == "since", let since, since > 0 {
                    throw .local(message + " (with ferryctl: 'ferryctl watch --since 0', or 'ferryctl ls')")
                }
                // The daemon went away during the watch: it ends, saying where to pick it up.
                switch error {
                case .connectionClosed, .daemonNotRunning, .nobodyListening:
                    if watched, let since { throw .local(error.description + "; resume with 'ferryctl watch --since \(since)'") }
                default:
                    break
                }
                throw .client(error)
            }
        }
    }

    /// Prints every event of one Watch call; `seen` gets the cursor of each.
    private static func follow(_ client: FerryClient, since: Int64?, spaces: [String]?, entities: [String],
                               json: Bool, seen: (Int64) -> Void) async throws(FerryClientError) {
        let stream = client.watch(since: since, spaces: spaces, entities: entities.isEmpty ? nil : entities)
        do {
            for try await event in stream {
                if json {
                    var verbatim = VerbatimJSON()
                    let document = event.record.map { verbatim.replacingRecord(in: event.json, with: $0) } ?? event.json
                    Output.json(document, verbatim)
                } else {
                    switch event {
                    case .started(let cursor):
                        Output.note("watching changes after cursor \(cursor) (Ctrl-C to stop)")
                    case .change(let record, let cursor):
                        let action = record.deleted ? "delete" : "put"
                        Output.line("\(cursor) \(record.space) \(record.entity) \(record.id) \(action) \(Format.payload(record, limit: 120))")
                    }
                }
                seen(event.cursor)
            }
        } catch let error as FerryClientError {
            throw error
        } catch {
            throw .protocolError(String(describing: error))
        }
    }
}
