import FerryClient
import FerryJSON

/// `ferryctl relay pair|status|devices|revoke ID|delete-copy [NAME]`: the space owner's account
/// on its relay.
enum RelayCommand: Command {
    static let name = "relay"
    static let synopsis = "pair [NAME] | status [NAME] | devices [NAME] | revoke ID [NAME] | delete-copy [NAME] --yes"
    static let summary = "pair another device with this space's relay, show its usage and devices, revoke one, or delete the relay's copy"
    static let details = """
        pair: on a device already syncing through a relay, asks the relay for a short-lived,
        one-time code. On the new device (after 'ferryctl owner restore' with the same
        phrase): 'ferryctl transport add NAME relay URL --code CODE'.
        status: what the relay holds for the space's owner (events, bytes, blobs, quota).
        devices: the devices that can reach the owner's data on the relay (its live tokens),
        oldest first, this one marked. revoke ID: revokes the token of another device (ID from
        devices, say a lost laptop's): the relay refuses it from its next request on, and that
        device syncs through the relay again only after pairing again. This device's own token
        is not revoked this way: 'ferryctl transport rm NAME' stops it syncing through the relay.
        delete-copy: deletes the relay's copy of the owner's data; the data on this device
        stays. Devices that keep the transport start over and fill the relay again: to leave
        it empty, first remove the transport ('ferryctl transport rm NAME') on every device.
        NAME picks the relay transport when the space has several.
        """
    static let options = [OptionSpec("yes", help: "for delete-copy: yes, delete the relay's copy")]
    static let takesSpace = true

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        // revoke takes the token id before the transport name.
        let p = arguments.positionals.first == "revoke"
            ? try arguments.positionals(["ACTION", "ID", "NAME"], optional: 1)
            : try arguments.positionals(["ACTION", "NAME"], optional: 1)
        let transport = p[0] == "revoke" ? (p.count > 2 ? p[2] : nil) : (p.count > 1 ? p[1] : nil)
        let client = try context.connect()
        switch p[0] {
        case "pair":
            let (code, expiresAt) = try await daemon { () async throws(FerryClientError) in
                try await client.relayPairingCode(space: context.space, name: transport)
            }
            if context.json {
                Output.json(.object(["code": .string(code), "expiresAt": .int(expiresAt)]))
            } else {
                Output.line(code)
                Output.note("Valid once, until \(Format.time(expiresAt)). On the new device: ferryctl transport add NAME relay URL --code \(code)")
            }
        case "status":
            let (owner, url, figures) = try await daemon { () async throws(FerryClientError) in
                try await client.relayUsage(space: context.space, name: transport)
            }
            if context.json {
                var o: [String: JSONValue] = ["owner": .string(owner), "url": .string(url)]
                for (k, v) in figures { o[k] = .int(v) }
                Output.json(.object(o))
                return
            }
            var table = Table("relay", url)
            table.add("owner", owner)
            table.add("events", figures["events"].map { String($0) } ?? "-")
            table.add("stored", Format.bytes((figures["bytes"] ?? 0) + (figures["blobBytes"] ?? 0)))
            table.add("blobs", figures["blobs"].map { String($0) } ?? "-")
            let stored = (figures["bytes"] ?? 0) + (figures["blobBytes"] ?? 0)
            // The room left, in bytes when the two figures print the same.
            table.add("quota", figures["quotaBytes"].map { quota in
                let left = quota - stored
                let room = left <= 0 ? "full" : Format.bytes(quota) == Format.bytes(stored) ? "\(left) B left" : "\(Format.bytes(left)) left"
                return "\(Format.bytes(quota)) (\(room))"
            } ?? "-")
            table.add("last push", Format.time(figures["lastPushAt"]))
            Output.out(table.render())
        case "devices":
            let (owner, url, devices) = try await daemon { () async throws(FerryClientError) in
                try await client.relayDevices(space: context.space, name: transport)
            }
            if context.json {
                Output.json(.object(["owner": .string(owner), "url": .string(url), "devices": .array(devices.map(\.json))]))
                return
            }
            var table = Table("ID", "DEVICE", "ROLE", "PAIRED", "LAST USED", "")
            for d in devices {
                table.add(d.id, d.device, d.role, Format.time(d.createdAt), Format.time(d.lastUsedAt), d.thisDevice ? "this device" : "")
            }
            Output.out(table.render())
            Output.note("owner \(owner) on \(url). To cut a device off: ferryctl relay revoke ID")
        case "revoke":
            try await daemon { () async throws(FerryClientError) in try await client.relayRevoke(space: context.space, name: transport, id: p[1]) }
            if context.json {
                Output.json(.object([:]))
            } else {
                Output.line("revoked token \(p[1]): the relay refuses it from its next request on. That device syncs through the relay "
                    + "again only after pairing again ('ferryctl relay pair' here, then 'ferryctl transport add NAME relay URL --code CODE' there)")
            }
        case "delete-copy":
            guard arguments.has("yes") else {
                throw .usage("delete-copy deletes the relay's copy of this space's data for every device; add --yes to go ahead")
            }
            try await daemon { () async throws(FerryClientError) in try await client.relayDeleteCopy(space: context.space, name: transport) }
            if context.json {
                Output.json(.object([:]))
            } else {
                Output.line("deleted the relay's copy; the data on this device stays. Every device still syncing through this relay, "
                    + "this one included, uploads its records again: to leave the relay empty, remove the relay transport on the other "
                    + "devices, then here run 'ferryctl sync pause', this command, 'ferryctl transport rm NAME' and 'ferryctl sync resume'")
            }
        default:
            throw .usage("unknown relay command '\(p[0])' (pair, status, devices, revoke or delete-copy)")
        }
    }
}
