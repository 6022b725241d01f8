import FerryClient
import FerryJSON

/// `ferryctl space ls` and `ferryctl space create NAME`.
enum SpaceCommand: Command {
    static let name = "space"
    static let synopsis = "ls | create NAME [--kind KIND]"
    static let summary = "list the spaces on this device, or create one"
    static let details = """
        A space is one dataset with its own owner, keys and transports. Records go to the
        private space unless a command is given --space NAME.
        """
    static let options = [
        OptionSpec("kind", value: "KIND", help: "for create: shared (default) or private"),
    ]

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        guard let action = arguments.positionals.first else { throw .usage("missing ls or create") }
        switch action {
        case "ls", "list":
            _ = try arguments.positionals(["ls"])
            if arguments.has("kind") { throw .usage("--kind applies to 'space create'") }
            try await list(context)
        case "create":
            let name = try arguments.positionals(["create", "NAME"])[1]
            try await create(name, kind: arguments.value("kind"), context)
        default:
            throw .usage("unknown space command '\(action)' (ls or create)")
        }
    }

    private static func list(_ context: Context) async throws(CommandFailure) {
        let client = try context.connect()
        let spaces = try await daemon { () async throws(FerryClientError) in try await client.spaces() }
        if context.json {
            Output.json(.object(["spaces": .array(spaces.map(\.json))]))
            return
        }
        var table = Table("SPACE", "KIND", "OWNER", "CREATED")
        for space in spaces {
            table.add(space.name, space.kind, space.owner ?? "-", Format.time(space.createdAt))
        }
        Output.out(table.render())
    }

    private static func create(_ name: String, kind: String?, _ context: Context) async throws(CommandFailure) {
        let client = try context.connect()
        let space = try await daemon { () async throws(FerryClientError) in
            try await client.createSpace(name: name, kind: kind)
        }
        if context.json {
            Output.json(.object(["space": space.json]))
        } else {
            Output.line("created \(space.kind) space \(space.name); use it with --space \(space.name)")
        }
    }
}
