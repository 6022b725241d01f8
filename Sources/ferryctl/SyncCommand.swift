import FerryClient
import FerryJSON

/// `ferryctl sync [pause | resume]`: starts a sync round now, or pauses or resumes syncing.
enum SyncCommand: Command {
    static let name = "sync"
    static let synopsis = "[pause | resume]"
    static let summary = "start a sync round now, or pause or resume syncing"
    static let details = """
        Without an argument, starts a round now and returns once it has started; follow it
        with 'ferryctl status'. Without --space every space syncs. 'pause' stops every sync
        loop (reads and writes go on, the outbox keeps the changes) until 'resume'; a pause
        lasts across restarts. While paused, 'ferryctl sync' starts nothing and fails
        (exit 1, io.ferry.Engine.SyncPaused): resume first.
        """
    static let takesSpace = true

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        let p = try arguments.positionals(["ACTION"], optional: 1)
        let client = try context.connect()
        switch p.first {
        case nil:
            try await daemon { () async throws(FerryClientError) in try await client.syncNow(space: context.space) }
            if context.json {
                Output.json(.object([:]))
            } else {
                // A round with no transport to run starts nothing: say so, and what to do.
                let transports = (try? await client.status().transports) ?? []
                let relevant = transports.filter { context.space == nil || $0.space == context.space }
                if relevant.isEmpty {
                    Output.line((context.space.map { "space \($0) has no transport" } ?? "no space has a transport") + ", so there is nothing to sync with; "
                        + "add one with 'ferryctl transport add NAME folder PATH' or 'ferryctl transport add NAME relay URL --code CODE'")
                } else {
                    Output.line("sync started" + (context.space.map { " for space \($0)" } ?? "") + "; see 'ferryctl status'")
                }
            }
        case "pause", "resume":
            if context.space != nil { throw .usage("pause and resume apply to every space; leave out --space") }
            let pause = p.first == "pause"
            try await daemon { () async throws(FerryClientError) in try await client.setSyncPaused(pause) }
            if context.json { Output.json(.object([:])) } else { Output.line(pause ? "syncing paused; 'ferryctl sync resume' resumes it" : "syncing resumed") }
        default:
            throw .usage("unknown sync action '\(p[0])' (pause or resume)")
        }
    }
}
