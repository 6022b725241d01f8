import FerryClient
import FerryJSON

/// `ferryctl relay pair [NAME]`: a one-time code for pairing another device with a relay.
enum RelayCommand: Command {
    static let name = "relay"
    static let synopsis = "pair [NAME]"
    static let summary = "get a one-time code that pairs another device with this space's relay"
    static let details = """
        On a device already syncing through a relay, 'ferryctl relay pair' asks the relay for
        a short-lived, one-time code. On the new device (after 'ferryctl owner restore' with
        the same phrase): 'ferryctl transport add NAME relay URL --code CODE'. NAME picks the
        relay transport when the space has several.
        """
    static let takesSpace = true

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        let p = try arguments.positionals(["pair", "NAME"], optional: 1)
        guard p.first == "pair" else { throw .usage("unknown relay command '\(p.first ?? "")' (pair)") }
        let client = try context.connect()
        let (code, expiresAt) = try await daemon { () async throws(FerryClientError) in
            try await client.relayPairingCode(space: context.space, name: p.count > 1 ? p[1] : nil)
        }
        if context.json {
            Output.json(.object(["code": .string(code), "expiresAt": .int(expiresAt)]))
        } else {
            Output.line(code)
            Output.note("Valid once, until \(Format.time(expiresAt)). On the new device: ferryctl transport add NAME relay URL --code \(code)")
        }
    }
}
