import FerryClient

/// `ferryctl status`: the daemon's state at a glance.
enum StatusCommand: Command {
    static let name = "status"
    static let synopsis = ""
    static let summary = "show the daemon's state: records, outbox, spaces, transports"

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        _ = try arguments.positionals([])
        let client = try context.connect()
        let status = try await daemon { () async throws(FerryClientError) in try await client.status() }
        if context.json {
            Output.json(status.json)
            return
        }
        var summary = Table("node", status.node)
        summary.add("version", status.version)
        summary.add("state", status.state)
        summary.add("socket", context.socketPath)
        summary.add("started", Format.time(status.startedAt))
        summary.add("records", "\(status.records) live, \(status.tombstones) deleted")
        // Transports whose pushes fail as a whole hold everything they still need.
        let holding = status.transports.filter { ($0.problem ?? "").contains("push: ") && $0.pending > 0 }.map(\.name)
        let held = holding.isEmpty ? "" : ", held by \(holding.joined(separator: ", "))"
        let waiting = status.outboxWithoutTransport == 0 ? ""
            : " (\(status.outboxWithoutTransport == status.outbox ? "all" : String(status.outboxWithoutTransport)) in spaces "
                + "with no transport, queued for the first one added)"
        summary.add("outbox", "\(status.outbox) pending\(waiting), \(status.outboxErrors) rejected\(held)"
            + (status.outboxErrors > 0 || !holding.isEmpty ? " (see 'ferryctl outbox --errors')" : ""))
        summary.add("change log", "cursor \(status.lastSeq)")
        summary.add("attachments", "\(status.attachments) (\(Format.bytes(status.attachmentBytes)))"
            + (status.attachmentsMissing == 0 ? ""
                : ", \(status.attachmentsMissing) missing (records reference them; their bytes have not arrived: "
                    + "the device that has them must sync; 'ferryctl sync' looks again)"))
        summary.add("last sync", status.lastSuccessAt.map { Format.time($0) } ?? "never")
        if let lastError = status.lastError { summary.add("last error", "\(Format.time(status.lastErrorAt)): \(lastError)") }
        var text = summary.render()

        var spaces = Table("SPACE", "KIND", "OWNER", "CREATED")
        for space in status.spaces {
            spaces.add(space.name, space.kind, space.owner ?? "-", Format.time(space.createdAt))
        }
        text += "\n" + spaces.render()

        if status.transports.isEmpty {
            text += "\nno transports: this device does not sync yet\n"
        } else {
            var transports = Table("TRANSPORT", "SPACE", "KIND", "STATE", "PENDING", "LAST SUCCESS", "PROBLEM")
            for transport in status.transports {
                // What is wrong now; the latest failure, put right or not, is the summary's.
                let problem = transport.problem ?? transport.transportMessage ?? "-"
                transports.add(transport.name, transport.space, transport.kind, transport.state ?? "-", String(transport.pending),
                               Format.time(transport.lastSuccessAt), problem)
            }
            text += "\n" + transports.render()
        }
        Output.out(text)
    }
}
