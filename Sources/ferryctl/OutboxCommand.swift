import FerryAPI
import FerryClient
import FerryJSON

/// `ferryctl outbox [--errors]`: records waiting to be sent, with each transport's state.
enum OutboxCommand: Command {
    static let name = "outbox"
    static let synopsis = "[--errors] [--limit N]"
    static let summary = "list records waiting to be sent, and what each transport said"
    static let details = "Without --space it lists every space's outbox."
    static let takesSpace = true
    static let options = [
        OptionSpec("errors", help: "only entries a transport rejected or cannot take now"),
        OptionSpec("limit", value: "N", help: "at most N entries (1 to 100000)"),
    ]

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        _ = try arguments.positionals([])
        let limit = try arguments.integerOption("limit", in: 1...100_000).map { Int($0) }
        let client = try context.connect()
        let (entries, more) = try await daemon { () async throws(FerryClientError) in
            try await client.outboxPage(space: context.space, errorsOnly: arguments.has("errors"), limit: limit)
        }
        if context.json {
            Output.json(.object(more ? ["entries": .array(entries.map(\.json)), "more": true] : ["entries": .array(entries.map(\.json))]))
            return
        }
        guard !entries.isEmpty else {
            Output.note(arguments.has("errors") ? "no rejected or held entries in the outbox" : "the outbox is empty: everything is sent")
            return
        }
        // An entry no transport has seen, of a space with no transport, waits for the first one
        // added: say so, not "pending" (when the transports cannot be listed, "pending" it is).
        var unsynced: Set<String> = []
        if entries.contains(where: { $0.deliveries.isEmpty }), let transports = try? await client.transports() {
            unsynced = Set(entries.map(\.space)).subtracting(transports.map(\.space))
        }
        var table = Table("SPACE", "ENTITY", "ID", "HLC", "QUEUED", "TRANSPORTS")
        for entry in entries {
            let state = entry.deliveries.isEmpty && unsynced.contains(entry.space) ? "no transport yet (kept for the first one added)" : deliveries(entry)
            table.add(entry.space, entry.entity, entry.id, entry.hlc, Format.time(entry.queuedAt), state)
        }
        Output.out(table.render())
        // The table cuts long texts; each distinct one is given whole once, with what to do.
        let whole = problems(entries)
        if !whole.isEmpty { Output.out("\n" + whole.joined(separator: "\n") + "\n") }
        if more {
            Output.note("more entries wait than the \(entries.count) shown: 'ferryctl status' counts them; --limit N shows up to N (100000 at most)")
        }
    }

    /// Each distinct rejection or hold, whole: `relay: rejected: too large for relay: …`.
    static func problems(_ entries: [OutboxEntry]) -> [String] {
        var seen = Set<String>()
        var out: [String] = []
        for entry in entries {
            for d in entry.deliveries {
                let line = d.error.map { "\(d.transport): rejected: \($0)" } ?? d.held.map { "\(d.transport): held: \($0)" }
                if let line, seen.insert(line).inserted { out.append(line) }
            }
        }
        return out
    }

    /// Each transport's state in a few words: `relay: sent, folder: rejected (disk full)`.
    static func deliveries(_ entry: OutboxEntry) -> String {
        guard !entry.deliveries.isEmpty else { return "pending" }
        return entry.deliveries.map { delivery in
            if let error = delivery.error {
                return "\(delivery.transport): rejected (\(Format.truncate(error, to: 80)))"
            }
            if let held = delivery.held {
                return "\(delivery.transport): held (\(Format.truncate(held, to: 80)))"
            }
            if let acknowledged = delivery.acknowledged {
                return delivery.transport + (acknowledged == entry.hlc ? ": sent" : ": older version sent")
            }
            return "\(delivery.transport): pending"
        }.joined(separator: ", ")
    }
}
