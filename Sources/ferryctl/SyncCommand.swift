import FerryClient
import FerryJSON

/// `ferryctl sync`: starts a sync round now.
enum SyncCommand: Command {
    static let name = "sync"
    static let synopsis = ""
    static let summary = "start a sync round now instead of waiting for the next trigger"
    static let details = """
        Returns once the round has started; follow it with 'ferryctl status'. Without --space
        every space syncs.
        """
    static let takesSpace = true

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        _ = try arguments.positionals([])
        let client = try context.connect()
        try await daemon { () async throws(FerryClientError) in try await client.syncNow(space: context.space) }
        if context.json {
            Output.json(.object([:]))
        } else {
            Output.line("sync started" + (context.space.map { " for space \($0)" } ?? "") + "; see 'ferryctl status'")
        }
    }
}
