import FerryAPI
import FerryClient
import FerryJSON

/// `ferryctl ls ENTITY`: lists the records of one entity kind, a page at a time.
enum LsCommand: Command {
    static let name = "ls"
    static let synopsis = "ENTITY [--after ID] [--limit N] [--all] [--where FIELD=VALUE ...] [--order id|stamp] [--follow-pages]"
    static let summary = "list the records of an entity kind"
    static let details = """
        Shows one page (100 records unless --limit says otherwise, fewer when records are
        large: a page stops at 8 MiB) and, when there are more, how to ask for the next one;
        --follow-pages reads them all. --where keeps records whose payload field equals the
        value: the value is JSON when it is a JSON scalar (true, 3, "x", null) and a string
        otherwise, so done=false matches the boolean and title=milk the string. With --json
        each page is one JSON document.
        """
    static let takesSpace = true
    static let options = [
        OptionSpec("after", value: "ID", help: "start after this id (the 'next' of the previous page)"),
        OptionSpec("limit", value: "N", help: "records per page, 1 to 1000 (default 100)"),
        OptionSpec("all", short: "a", help: "include deleted records (tombstones)"),
        OptionSpec("where", value: "FIELD=VALUE", repeatable: true, help: "keep records whose payload field equals VALUE"),
        OptionSpec("order", value: "id|stamp", help: "order by id (default) or by version stamp"),
        OptionSpec("follow-pages", help: "read every page, not just the first"),
    ]

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        let entity = try arguments.positionals(["ENTITY"])[0]
        let limit = try arguments.integerOption("limit", in: 1...1000).map { Int($0) }
        var order: ListOrder?
        if let text = arguments.value("order") {
            guard let parsed = ListOrder(rawValue: text) else {
                throw .usage("--order must be id or stamp (got \"\(text)\")")
            }
            order = parsed
        }
        let filter: [String: JSONValue]
        do {
            filter = try PayloadFilter.parse(arguments.all("where"))
        } catch {
            throw .usage(error.description)
        }
        let includeDeleted = arguments.has("all")
        let followPages = arguments.has("follow-pages")

        let client = try context.connect()
        var after = arguments.value("after")
        var widths: [Int] = []
        var printedRows = 0
        while true {
            let page = try await daemon { () async throws(FerryClientError) in
                try await client.list(space: context.space, entity: entity, after: after, limit: limit,
                                      includeDeleted: includeDeleted, where: filter, order: order)
            }
            if context.json {
                var verbatim = VerbatimJSON()
                var object: [String: JSONValue] = ["records": .array(page.records.map { verbatim.record($0) })]
                if let next = page.next { object["next"] = .string(next) }
                Output.json(.object(object), verbatim)
            } else if !page.records.isEmpty {
                var table = Table("ID", "HLC", "DELETED", "PAYLOAD")
                for record in page.records {
                    table.add(record.id, record.hlc, record.deleted ? "yes" : "no", Format.payload(record))
                }
                Output.out(table.render(header: printedRows == 0, widths: &widths))
                printedRows += page.records.count
            }
            guard let next = page.next else { break }
            guard followPages else {
                if !context.json {
                    // The same command for the next page: every option that shapes the pages kept.
                    var command = ["ferryctl"]
                    if let space = context.space { command += ["--space", shellQuoted(space)] }
                    command += ["ls", shellQuoted(entity)]
                    if let limit { command += ["--limit", String(limit)] }
                    if includeDeleted { command.append("--all") }
                    for condition in arguments.all("where") { command += ["--where", shellQuoted(condition)] }
                    if let order { command += ["--order", order.rawValue] }
                    command += ["--after", shellQuoted(next)]
                    Output.note("more records: \(command.joined(separator: " ")) (or --follow-pages for all)")
                }
                return
            }
            after = next
        }
        if !context.json && printedRows == 0 {
            Output.note("no records of \(entity) in space \(context.space ?? "private")"
                + (filter.isEmpty ? "" : " match the filter"))
        }
    }

    /// `text` quoted for a POSIX shell when it needs it.
    static func shellQuoted(_ text: String) -> String {
        let plain = text.allSatisfy { $0.isLetter || $0.isNumber || "-_.:/@%+=,".contains($0) }
        if plain && !text.isEmpty { return text }
        return "'" + text.replacing("'", with: "'\\''") + "'"
    }
}
