import FerryAPI
import FerryJSON
import FerryModel
import FerryStore
import FerrySync
import FerryVarlink
import Foundation

/// The handlers of `io.ferry.Engine`.
struct EngineAPI: Sendable {
    let store: Store
    let engine: EngineLoop
    let sync: SyncEngine
    let startedAt: Int64
    /// The config file whose `[Transport NAME]` sections declare transports, for messages.
    let configPath: String
    /// ferryd's state directory and socket, which an export may not replace.
    let stateDirectory: String
    let socketPath: String
    let logger: Logger

    var methods: [String: VarlinkMethod] {
        [
            "Status": VarlinkMethod { _, _ throws(VarlinkError) in try await status() },
            "Outbox": VarlinkMethod { call, _ throws(VarlinkError) in try await outbox(call.parameters) },
            "SyncNow": VarlinkMethod { call, _ throws(VarlinkError) in try await syncNow(call.parameters) },
            "Spaces": VarlinkMethod { _, _ throws(VarlinkError) in ["spaces": .array(store.spaces().map(Self.space))] },
            "CreateSpace": VarlinkMethod { call, _ throws(VarlinkError) in try await createSpace(call.parameters) },
            "Transports": VarlinkMethod { call, _ throws(VarlinkError) in try await transports(call.parameters) },
            "AddTransport": VarlinkMethod { call, _ throws(VarlinkError) in try await addTransport(call.parameters) },
            "RelayPairingCode": VarlinkMethod { call, _ throws(VarlinkError) in try await relayPairingCode(call.parameters) },
            "RelayUsage": VarlinkMethod { call, _ throws(VarlinkError) in try await relayUsage(call.parameters) },
            "RelayDevices": VarlinkMethod { call, _ throws(VarlinkError) in try await relayDevices(call.parameters) },
            "RelayRevoke": VarlinkMethod { call, _ throws(VarlinkError) in try await relayRevoke(call.parameters) },
            "RelayDeleteCopy": VarlinkMethod { call, _ throws(VarlinkError) in try await relayDeleteCopy(call.parameters) },
            "RemoveTransport": VarlinkMethod { call, _ throws(VarlinkError) in try await removeTransport(call.parameters) },
            "OwnerPhrase": VarlinkMethod { call, _ throws(VarlinkError) in try await ownerPhrase(call.parameters) },
            "RestoreOwner": VarlinkMethod { call, _ throws(VarlinkError) in try await restoreOwner(call.parameters) },
            "Pause": VarlinkMethod { _, _ throws(VarlinkError) in try await setPaused(true) },
            "Resume": VarlinkMethod { _, _ throws(VarlinkError) in try await setPaused(false) },
            "Export": VarlinkMethod { call, _ throws(VarlinkError) in try await export(call.parameters) },
            "Import": VarlinkMethod { call, _ throws(VarlinkError) in try await importBundle(call.parameters) },
        ]
    }

    static func space(_ s: SpaceInfo) -> JSONValue {
        var o: [String: JSONValue] = ["name": .string(s.name), "kind": .string(s.kind.rawValue), "createdAt": .int(s.createdAt)]
        if let owner = s.ownerID { o["owner"] = .string(owner) }
        return .object(o)
    }

    func status() async throws(VarlinkError) -> [String: JSONValue] {
        let store = self.store
        let stats = try await run { () throws(FerryError) in try store.stats() }
        let transports = try await transportList(space: nil)
        let health = await sync.states().map { ($0.info.name, $0.health) }
        var reply: [String: JSONValue] = [
            "node": .string(store.nodeID.description), "version": .string(FerryVersion.string),
            "state": .string(EngineState.summary(health.map(\.1), paused: sync.isPaused)),
            "records": .int(Int64(stats.records)), "tombstones": .int(Int64(stats.tombstones)),
            "outbox": .int(Int64(stats.outbox)), "outboxWithoutTransport": .int(Int64(stats.outboxWithoutTransport)),
            "outboxErrors": .int(Int64(stats.outboxErrors)), "lastSeq": .int(stats.lastSeq),
            "attachments": .int(Int64(stats.attachments)), "attachmentBytes": .int(stats.attachmentBytes),
            "attachmentsMissing": .int(Int64(stats.attachmentsMissing)),
            "spaces": .array(store.spaces().map(Self.space)), "transports": .array(transports), "startedAt": .int(startedAt),
        ]
        // The latest failure and the latest success of any transport.
        if let (name, h) = health.filter({ $0.1.lastErrorAt != nil }).max(by: { $0.1.lastErrorAt! < $1.1.lastErrorAt! }),
           let error = h.lastError, let at = h.lastErrorAt {
            reply["lastError"] = .string("\(name): \(error)")
            reply["lastErrorAt"] = .int(at)
        }
        if let t = health.compactMap(\.1.lastSuccessAt).max() { reply["lastSuccessAt"] = .int(t) }
        return reply
    }

    /// Every transport (of `space`, or all) with its progress, the engine's health of it and
    /// its own status.
    private func transportList(space: String?) async throws(VarlinkError) -> [JSONValue] {
        let store = self.store
        if let space { try checkSpace(space) }
        var out: [JSONValue] = []
        for state in await sync.states() where space == nil || state.space == space {
            let t = state.info
            let (pending, push, cursor) = try await run { () throws(FerryError) in
                (try store.pendingCount(space: state.space, transport: t.name),
                 try store.progress(space: state.space, key: "push:" + t.name),
                 try store.progress(space: state.space, key: "cursor:" + t.name))
            }
            var o: [String: JSONValue] = ["space": .string(state.space), "name": .string(t.name), "kind": .string(t.kind),
                                          "pending": .int(Int64(pending)), "state": .string(state.health.state),
                                          "pushed": .int(state.health.pushed), "pulled": .int(state.health.pulled),
                                          "refused": .int(state.health.refused)]
            if let location = TransportConfiguration.location(of: t) { o["location"] = .string(location) }
            if let v = push { o["push"] = .string(v) }
            if let v = cursor { o["cursor"] = .string(v) }
            let h = state.health
            if let v = h.lastError { o["lastError"] = .string(v) }
            if let v = h.lastErrorKind { o["lastErrorKind"] = .string(v) }
            if let v = h.lastErrorAt { o["lastErrorAt"] = .int(v) }
            if let v = h.lastSuccessAt { o["lastSuccessAt"] = .int(v) }
            if let v = h.retryAt { o["retryAt"] = .int(v) }
            if let v = h.problem { o["problem"] = .string(v) }
            if let v = h.lastRefusal { o["lastRefusal"] = .string(v) }
            if let s = state.status {
                o["transportState"] = .string(s.state)
                if let m = s.message { o["transportMessage"] = .string(m) }
                if !s.details.isEmpty { o["details"] = .object(s.details.mapValues { .string($0) }) }
            }
            out.append(.object(o))
        }
        return out
    }

    func outbox(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let space = p["space"]?.stringValue
        let errorsOnly = p["errorsOnly"]?.boolValue ?? false
        let limit = Int(p["limit"]?.intValue ?? 1000)
        guard (1...100_000).contains(limit) else {
            throw ErrorMapping.invalidArgument("limit", "limit is 1 to 100000", interface: EngineInterface.name)
        }
        let store = self.store
        // Transports whose pushes fail as a whole (a relay over its quota, unreachable, or
        // refusing the token) take nothing: every entry waiting for them is held, and says why.
        var held: [String: [String: String]] = [:]
        for state in await sync.states() where space == nil || state.space == space {
            if let why = state.health.failure(of: "push") { held[state.space, default: [:]][state.info.name] = why }
        }
        let heldList = held.flatMap { space, transports in transports.keys.map { (space: space, transport: $0) } }
        // One entry past the limit tells whether any were left out.
        var entries = try await run { () throws(FerryError) in
            try store.outbox(space: space, errorsOnly: errorsOnly, held: heldList, limit: limit + 1)
        }
        var more = entries.count > limit
        if more { entries.removeLast() }
        var out: [JSONValue] = []
        // Outbox has no paging: entries stop at the limit, or where one more would not fit in
        // one message; `more` says that some were left out.
        var bytes = #"{"entries":[],"more":true}"#.utf8.count
        for e in entries {
            let heldHere = held[e.space] ?? [:]
            var deliveries: [JSONValue] = e.deliveries.map { d in
                var o: [String: JSONValue] = ["transport": .string(d.transport)]
                if let a = d.acknowledged { o["acknowledged"] = .string(a.text) }
                if let err = d.error { o["error"] = .string(err) }
                if let s = d.errorStamp { o["errorHlc"] = .string(s.text) }
                let taken = (d.acknowledged.map { $0 >= e.hlc } ?? false) || (d.errorStamp.map { $0 >= e.hlc } ?? false)
                if !taken, let why = heldHere[d.transport] { o["held"] = .string(why) }
                return .object(o)
            }
            for (transport, why) in heldHere.sorted(by: { $0.key < $1.key }) where !e.deliveries.contains(where: { $0.transport == transport }) {
                deliveries.append(["transport": .string(transport), "held": .string(why)])
            }
            let entry = JSONValue.object([
                "space": .string(e.space), "entity": .string(e.entity), "id": .string(e.id), "hlc": .string(e.hlc.text),
                "seq": .int(e.seq), "queuedAt": .int(e.queuedAt), "deliveries": .array(deliveries),
            ])
            bytes += JSONWriter.serialize(entry).count + 1
            if bytes > StoreAPI.maxReplyBytes {
                more = true
                break
            }
            out.append(entry)
        }
        return more ? ["entries": .array(out), "more": true] : ["entries": .array(out)]
    }

    /// Starts a round now; while syncing is paused it starts nothing and says so
    /// (`SyncPaused`), rather than reporting a round that does not happen.
    func syncNow(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let space = p["space"]?.stringValue
        if let space { try checkSpace(space) }
        if sync.isPaused { throw ErrorMapping.syncPaused() }
        engine.wake()
        sync.syncNow(space: space)
        return [:]
    }

    func createSpace(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let name = p["name"]?.stringValue ?? ""
        let kindName = p["kind"]?.stringValue ?? "shared"
        guard let kind = SpaceInfo.Kind(rawValue: kindName) else {
            throw ErrorMapping.invalidArgument("kind", "kind is \"private\" or \"shared\"", interface: EngineInterface.name)
        }
        let store = self.store, sync = self.sync
        let info = try await run { () throws(FerryError) in
            let info = try store.createSpace(name: name, kind: kind)
            _ = try sync.keyring.keys(for: name)
            return info
        }
        return ["space": Self.space(store.spaces().first { $0.name == info.name } ?? info)]
    }

    // MARK: Transports

    func transports(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        ["transports": .array(try await transportList(space: p["space"]?.stringValue))]
    }

    func addTransport(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let space = p["space"]?.stringValue ?? Store.privateSpace
        try checkSpace(space)
        let name = p["name"]?.stringValue ?? ""
        let kind = p["kind"]?.stringValue ?? ""
        let location = p["location"]?.stringValue ?? ""
        // Before anything else: a relay pairing code is spent when it is redeemed.
        guard Names.isValidName(name) else {
            throw ErrorMapping.varlink(.invalidTransportName(name.clipped(to: 80)), interface: EngineInterface.name)
        }
        // A pairing code or token given for another kind is a mistake, not something to drop.
        for key in ["code", "token"] where kind != "relay" && p[key] != nil && p[key]?.isNull == false {
            throw ErrorMapping.invalidArgument(key, "\(key) is for a relay transport; a \(kind.prefix(40)) transport takes none",
                                               interface: EngineInterface.name)
        }
        let config: String
        var warning: String?
        do {
            if kind == "relay" {
                (config, warning) = try await relayConfiguration(space: space, location: location, code: p["code"]?.stringValue,
                                                                 token: p["token"]?.stringValue)
            } else {
                config = try TransportConfiguration.make(kind: kind, location: location)
            }
        } catch {
            if error.unreachable { throw Self.relayFailure(message: error.message) }
            throw ErrorMapping.invalidArgument(error.parameter, error.message, interface: EngineInterface.name)
        }
        let store = self.store
        // Changed here, a reload would change it back: the config file is where it changes.
        if (try? await run({ () throws(FerryError) in try DeclaredTransports.isDeclared(space: space, name: name, in: store) })) == true {
            throw ErrorMapping.transportDeclared(space: space, name: name, file: configPath, changing: true)
        }
        let configured = (try? await run { () throws(FerryError) in try store.transports(space: space) }) ?? []
        // Two transports of one space at one place would write the same files as one device.
        if let twin = configured.first(where: { $0.name != name && TransportConfiguration.samePlace($0, kind: kind, config: config) }) {
            throw ErrorMapping.invalidArgument("location", "transport \(twin.name) of space \(space) already syncs through "
                + "\(TransportConfiguration.location(of: twin) ?? "that place"); use it, or remove it first", interface: EngineInterface.name)
        }
        let existing = configured.first { $0.name == name }
        let startOver = existing.map { !TransportConfiguration.samePlace($0, kind: kind, config: config) } ?? true
        do { try await sync.addTransport(space: space, name: name, kind: kind, config: config, startOver: startOver) } catch {
            throw ErrorMapping.varlink(error, interface: EngineInterface.name)
        }
        if let existing, let kept = await revokeReplacedToken(existing, space: space, newConfig: config) {
            warning = [warning, kept].compactMap { $0 }.joined(separator: "; ")
        }
        let list = try await transportList(space: space)
        guard let added = list.first(where: { $0["name"]?.stringValue == name }) else {
            throw ErrorMapping.transportNotFound(space: space, name: name)
        }
        var reply: [String: JSONValue] = ["transport": added]
        if let warning { reply["warning"] = .string(warning) }
        return reply
    }

    func removeTransport(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let space = p["space"]?.stringValue ?? Store.privateSpace
        try checkSpace(space)
        let name = p["name"]?.stringValue ?? ""
        let store = self.store
        let (existing, declared) = try await run { () throws(FerryError) in
            (try store.transports(space: space).first { $0.name == name },
             try DeclaredTransports.isDeclared(space: space, name: name, in: store))
        }
        guard let existing else {
            let elsewhere = store.spaces().map(\.name).filter { other in
                other != space && ((try? store.transports(space: other))?.contains { $0.name == name } ?? false)
            }
            throw ErrorMapping.transportNotFound(space: space, name: name, elsewhere: elsewhere)
        }
        // Removed here, a reload would bring it back: the config file is where it goes away.
        if declared { throw ErrorMapping.transportDeclared(space: space, name: name, file: configPath) }
        do { try await sync.removeTransport(space: space, name: name) } catch {
            throw ErrorMapping.varlink(error, interface: EngineInterface.name)
        }
        await revokeToken(of: existing, space: space, using: TransportConfiguration.token(of: existing), why: "it was removed")
        return [:]
    }

    /// A relay transport's configuration: its URL and a token, given or got by redeeming a
    /// pairing code (whose owner must be the space's owner); and a warning when a given token
    /// could not be checked (the relay could not be reached).
    private func relayConfiguration(space: String, location: String, code: String?,
                                    token: String?) async throws(TransportConfiguration.Problem) -> (String, String?) {
        let url = try TransportConfiguration.relayURL(location)
        if token != nil && code != nil {
            throw .init(parameter: "code", message: "give either a pairing code or a token, not both")
        }
        if let token {
            guard (8...512).contains(token.utf8.count), token.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
                throw .init(parameter: "token", message: "the token is not one a relay issues (printable, 8 to 512 characters)")
            }
            // A token the relay refuses is refused here, not found out later from a failing
            // sync. A relay that cannot be reached now (offline) does not stop the add.
            let keys = try await ownerKeys(space)
            do { try await RelayAccount.checkToken(url: url, owner: keys.owner, token: token) } catch {
                switch error {
                case .unauthorized:
                    // The relay's own words may say what to do already (a malformed token).
                    let advised = error.message.contains("ferryctl relay pair")
                    throw .init(parameter: "token", message: "the relay refused the token for owner \(keys.owner) of space \(space): "
                        + error.message + (advised ? "" : ". Use the token 'ferry-relay admin create-owner' printed for this owner, "
                            + "or pair with --code CODE from 'ferryctl relay pair' on a device already syncing through the relay"))
                case .rejected:
                    throw .init(parameter: "location", message: error.message)
                default:
                    return (TransportConfiguration.relay(url: url, token: token),
                            "the token could not be checked (\(error.message)); the transport is added and keeps trying: "
                                + "'ferryctl transport ls' says so if the relay refuses the token")
                }
            }
            return (TransportConfiguration.relay(url: url, token: token), nil)
        }
        guard let code, !code.isEmpty, code.utf8.count < 128 else {
            throw .init(parameter: "code", message: "a relay transport needs a pairing code (code: from RelayPairingCode, "
                + "'ferryctl relay pair', on a device already syncing through the relay) or a token from the relay's operator (token)")
        }
        let keys = try await ownerKeys(space)
        let grant: RelayAccount.Grant
        do { grant = try await RelayAccount.redeem(url: url, code: code, device: "ferryd \(store.nodeID)") } catch {
            guard case .unavailable = error else { throw .init(parameter: "code", message: error.message) }
            // Nothing was added: the next step is this command again, not a sync.
            let message = error.message.replacingOccurrences(of: ", then 'ferryctl sync'", with: "")
            throw .init(parameter: "code", message: message + "; nothing was added: once that is fixed run this command again (the code "
                + "is still good unless the relay got it; if it says the code was used, make a new one with 'ferryctl relay pair')",
                        unreachable: true)
        }
        guard grant.owner == keys.owner else {
            // The code is spent either way; the token it gave is of no use here, so it is
            // revoked with itself rather than left valid on the relay.
            var revoked = false
            if let id = grant.tokenID {
                do {
                    try await RelayAccount.revoke(url: url, owner: grant.owner, token: grant.token, id: id)
                    revoked = true
                } catch {
                    logger.warning("could not revoke the relay token (id \(id)) a pairing code for another owner gave: \(error)")
                }
            }
            // Another space here may be that owner's: then the transport belongs there.
            let there = store.spaces().first { $0.name != space && $0.ownerID == grant.owner.description }?.name
            let advice = there.map { "space \($0) on this device belongs to that owner: add the transport there (--space \($0))" }
                ?? "restore that owner's recovery phrase here first ('ferryctl owner restore')"
            throw .init(parameter: "code", message: "the code is for owner \(grant.owner), but space \(space) belongs to owner \(keys.owner): "
                + advice + ", then make a new code with 'ferryctl relay pair' on a device already syncing through the relay (this one is used up)"
                + (revoked ? "" : "; the token this code gave could not be revoked: revoke it with 'ferry-relay admin revoke' on the relay"))
        }
        return (TransportConfiguration.relay(url: url, token: grant.token, tokenID: grant.tokenID), nil)
    }

    /// After a relay transport got a new token (paired again, or pointed at another URL),
    /// revokes the token it had got by pairing: a superseded token is never used again and
    /// would otherwise stay valid. At the same relay the new token revokes it; at another URL
    /// (which may be the same relay behind another name or a proxy) the old token revokes
    /// itself at the old URL, or, when that cannot be reached, the new token at the new URL.
    /// - Returns: what to tell the user when a token got by pairing could not be revoked.
    private func revokeReplacedToken(_ old: TransportInfo, space: String, newConfig: String) async -> String? {
        guard let value = try? JSONParser.parse(newConfig), case .object(let new) = value,
              let newToken = new["token"]?.stringValue, newToken != TransportConfiguration.token(of: old),
              old.kind == "relay", let id = TransportConfiguration.tokenID(of: old) else { return nil }
        if TransportConfiguration.samePlace(old, kind: "relay", config: newConfig) {
            if await revokeToken(of: old, space: space, using: newToken, why: "it was paired again") { return nil }
        } else {
            // At the old URL with the old token; when that cannot be reached (the relay moved),
            // at the new URL with the new one, which is the same relay if only its name changed.
            if await revokeToken(of: old, space: space, using: TransportConfiguration.token(of: old), why: "the transport moved to another URL") {
                return nil
            }
            if let url = new["url"]?.stringValue.flatMap({ URL(string: $0) }),
               await revokeToken(id: id, of: old.name, at: url, space: space, using: newToken, why: "the transport moved to another URL") {
                return nil
            }
        }
        return "the relay token this transport had (id \(id)) could not be revoked and may still be valid: revoke it with "
            + "'ferry-relay admin revoke OWNER \(id)' on the relay"
    }

    /// Revokes the token of relay transport `transport`, when pairing gave its id (a token from
    /// the relay's operator has none here, and stays), with `token` (another of the owner's, or
    /// the same). Best effort: a failure is logged and changes nothing else.
    /// - Returns: whether the relay revoked it (or there was nothing to revoke).
    @discardableResult
    private func revokeToken(of transport: TransportInfo, space: String, using token: String?, why: String) async -> Bool {
        guard transport.kind == "relay", let id = TransportConfiguration.tokenID(of: transport) else { return true }
        guard let location = TransportConfiguration.location(of: transport), let url = URL(string: location) else { return false }
        return await revokeToken(id: id, of: transport.name, at: url, space: space, using: token, why: why)
    }

    /// Revokes token `id` of transport `name` at the relay at `url`, with `token`; whether it
    /// was. Best effort: a failure is logged.
    private func revokeToken(id: String, of name: String, at url: URL, space: String, using token: String?, why: String) async -> Bool {
        guard let token, let keys = try? await ownerKeys(space) else { return false }
        do {
            try await RelayAccount.revoke(url: url, owner: keys.owner, token: token, id: id)
            logger.info("transport \(name) of space \(space): revoked its relay token (id \(id)) as \(why)")
            return true
        } catch {
            logger.warning("transport \(name) of space \(space): could not revoke its relay token (id \(id)) at \(url.absoluteString) "
                + "as \(why): \(error); revoke it with 'ferry-relay admin revoke' on the relay")
            return false
        }
    }

    /// The owner keys of `space`, for checking what a relay says about its owner.
    private func ownerKeys(_ space: String) async throws(TransportConfiguration.Problem) -> OwnerKeys {
        let sync = self.sync
        do { return try await Blocking.run { () throws(FerryError) in try sync.keyring.keys(for: space) } } catch {
            throw .init(parameter: "space", message: "\(error)")
        }
    }

    /// The relay transport of a space a relay method acts on (`name`, or the only one), with
    /// its URL, token and the space's owner.
    private func relayAccount(_ p: [String: JSONValue]) async throws(VarlinkError)
        -> (url: URL, token: String, owner: OwnerID, name: String, tokenID: String?) {
        let space = p["space"]?.stringValue ?? Store.privateSpace
        try checkSpace(space)
        let store = self.store, sync = self.sync
        let name = p["name"]?.stringValue
        let (transports, keys) = try await run { () throws(FerryError) in
            (try store.transports(space: space), try sync.keyring.keys(for: space))
        }
        let relays = transports.filter { $0.kind == "relay" && (name == nil || $0.name == name) }
        guard let relay = relays.first, let location = TransportConfiguration.location(of: relay), let url = URL(string: location),
              let token = TransportConfiguration.token(of: relay) else {
            if let name, let other = transports.first(where: { $0.name == name }) {
                throw ErrorMapping.invalidArgument("name", "transport \(name) of space \(space) is a \(other.kind) transport, not a relay; "
                    + "name a relay transport ('ferryctl transport ls' lists them)", interface: EngineInterface.name)
            }
            if let name { throw ErrorMapping.transportNotFound(space: space, name: name) }
            throw ErrorMapping.invalidArgument("name", "space \(space) has no relay transport; add one first ('ferryctl transport add NAME relay URL "
                + "--code CODE', with a code from 'ferryctl relay pair' on a device on the relay, or --token TOKEN from its operator)",
                                               interface: EngineInterface.name)
        }
        return (url, token, keys.owner, relay.name, TransportConfiguration.tokenID(of: relay))
    }

    private static func relayFailure(_ error: TransportFailure) -> VarlinkError {
        relayFailure(message: "\(error)")
    }

    private static func relayFailure(message: String) -> VarlinkError {
        VarlinkError(EngineInterface.name + ".RelayFailure", parameters: ["message": .string(message)])
    }

    func relayPairingCode(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let account = try await relayAccount(p)
        do {
            let (code, expiresAt) = try await RelayAccount.code(url: account.url, owner: account.owner, token: account.token)
            return ["code": .string(code), "expiresAt": .int(expiresAt)]
        } catch { throw Self.relayFailure(error) }
    }

    func relayUsage(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let account = try await relayAccount(p)
        do {
            let usage = try await RelayAccount.usage(url: account.url, owner: account.owner, token: account.token)
            var o: [String: JSONValue] = ["owner": .string(account.owner.description), "url": .string(account.url.absoluteString)]
            for key in ["events", "bytes", "blobs", "blobBytes", "quotaBytes", "lastPushAt"] { if let v = usage[key] { o[key] = .int(v) } }
            return o
        } catch { throw Self.relayFailure(error) }
    }

    func relayDevices(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let account = try await relayAccount(p)
        let tokens: [RelayAccount.DeviceToken]
        do { tokens = try await RelayAccount.tokens(url: account.url, owner: account.owner, token: account.token) } catch {
            throw Self.relayFailure(error)
        }
        // A relay that does not mark the token asked with: the id this device was paired with.
        let marked = tokens.contains(where: \.current)
        let devices: [JSONValue] = tokens.map { t in
            var o: [String: JSONValue] = ["id": .string(t.id), "device": .string(t.device), "role": .string(t.role),
                                          "createdAt": .int(t.createdAt),
                                          "thisDevice": .bool(marked ? t.current : t.id == account.tokenID)]
            if let last = t.lastUsedAt { o["lastUsedAt"] = .int(last) }
            return .object(o)
        }
        return ["owner": .string(account.owner.description), "url": .string(account.url.absoluteString), "devices": .array(devices)]
    }

    func relayRevoke(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let id = p["id"]?.stringValue ?? ""
        guard RelayAccount.isTokenID(id) else {
            throw ErrorMapping.invalidArgument("id", "'\(id.prefix(40))' is not a relay token id (16 hex digits); 'ferryctl relay devices' lists them",
                                               interface: EngineInterface.name)
        }
        let account = try await relayAccount(p)
        let tokens: [RelayAccount.DeviceToken]
        do { tokens = try await RelayAccount.tokens(url: account.url, owner: account.owner, token: account.token) } catch {
            throw Self.relayFailure(error)
        }
        if id == tokens.first(where: \.current)?.id ?? account.tokenID {
            throw ErrorMapping.invalidArgument("id", "token \(id) is this device's own for transport \(account.name): revoking it would cut "
                + "this device off the relay; to stop syncing through it here, remove the transport ('ferryctl transport rm \(account.name)')",
                                               interface: EngineInterface.name)
        }
        let revoked: Bool
        do {
            revoked = try await RelayAccount.revoke(url: account.url, owner: account.owner, token: account.token, id: id,
                                                    what: "revoking token \(id)")
        } catch { throw Self.relayFailure(error) }
        guard revoked else {
            throw ErrorMapping.invalidArgument("id", "the relay has no live token \(id) of owner \(account.owner) (revoked already, or another "
                + "owner's); 'ferryctl relay devices' lists the live ones", interface: EngineInterface.name)
        }
        return [:]
    }

    func relayDeleteCopy(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let account = try await relayAccount(p)
        do { try await RelayAccount.deleteCopy(url: account.url, owner: account.owner, token: account.token) } catch {
            throw Self.relayFailure(error)
        }
        return [:]
    }

    // MARK: Owners

    func ownerPhrase(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let space = p["space"]?.stringValue ?? Store.privateSpace
        try checkSpace(space)
        let sync = self.sync
        let (owner, phrase) = try await run { () throws(FerryError) in
            (try sync.keyring.keys(for: space).owner.description, try sync.recoveryPhrase(space: space))
        }
        return ["owner": .string(owner), "phrase": .string(phrase)]
    }

    func restoreOwner(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let space = p["space"]?.stringValue ?? Store.privateSpace
        try checkSpace(space)
        let phrase = p["phrase"]?.stringValue ?? ""
        let sync = self.sync, store = self.store
        let before = try? await run { () throws(FerryError) in try sync.keyring.keys(for: space).owner.description }
        do {
            try await sync.restoreOwner(space: space, phrase: phrase)
        } catch {
            switch error {
            case .phrase(let e): throw ErrorMapping.invalidPhrase(e)
            case .store(let e): throw ErrorMapping.varlink(e, interface: EngineInterface.name)
            case .ownerInUse: throw ErrorMapping.invalidArgument("phrase", error.description, interface: EngineInterface.name)
            }
        }
        let owner = try await run { () throws(FerryError) in try sync.keyring.keys(for: space).owner.description }
        // A relay transport keeps the token it was paired with, which is the previous owner's.
        guard before != owner else { return ["owner": .string(owner)] }
        let relays = try await run { () throws(FerryError) in try store.transports(space: space).filter { $0.kind == "relay" }.map(\.name).sorted() }
        return relays.isEmpty ? ["owner": .string(owner)] : ["owner": .string(owner), "relaysToPairAgain": .array(relays.map { .string($0) })]
    }

    func setPaused(_ paused: Bool) async throws(VarlinkError) -> [String: JSONValue] {
        let sync = self.sync
        try await run { () throws(FerryError) in try sync.setPaused(paused) }
        engine.refreshStatus()
        return [:]
    }

    // MARK: Send and Receive

    func export(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let path = try absolutePath(p)
        if let problem = Self.exportTargetProblem(path, stateDirectory: stateDirectory, socketPath: socketPath) {
            throw ErrorMapping.invalidArgument("path", problem, interface: EngineInterface.name)
        }
        let exporter = BundleExporter(store: store, keyring: sync.keyring)
        let summary: BundleExporter.Summary
        do { summary = try await Blocking.run { () throws(BundleError) in try exporter.export(to: path) } } catch {
            throw ErrorMapping.bundleFailure(path: path, "\(error)")
        }
        if summary.attachmentsLeftOut > 0 {
            logger.warning("export to \(path): \(summary.attachmentsLeftOut) attachment(s) its records reference were left out: "
                + "their bytes are not on this device (not arrived yet, or found gone or damaged here and set aside)")
        }
        return ["spaces": .int(Int64(summary.spaces)), "records": .int(Int64(summary.records)),
                "attachments": .int(Int64(summary.attachments)), "attachmentsLeftOut": .int(Int64(summary.attachmentsLeftOut)),
                "bytes": .int(summary.bytes)]
    }

    func importBundle(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let path = try absolutePath(p)
        let importer = BundleImporter(store: store, keyring: sync.keyring, scratchDirectory: sync.scratchDirectory)
        let summary: BundleImporter.Summary
        do { summary = try await Blocking.run { () throws(BundleError) in try importer.importBundle(from: path) } } catch {
            throw ErrorMapping.bundleFailure(path: path, "\(error)")
        }
        return ["applied": .int(Int64(summary.applied)), "duplicates": .int(Int64(summary.duplicates)),
                "lost": .int(Int64(summary.lost)), "refused": .int(Int64(summary.refused)),
                "skippedOwners": .array(summary.skippedOwners.sorted().map { .string($0) })]
    }

    // MARK: Helpers

    /// Why an export may not be written at `path`, or nil: the bundle replaces what is there,
    /// so a path in ferryd's state directory (its database, keys, attachments) or its socket
    /// would destroy the store or lock every client out. Symlinks in the path's directories are
    /// followed; the last component is replaced, not followed.
    static func exportTargetProblem(_ path: String, stateDirectory: String, socketPath: String) -> String? {
        // "DIR/" names no file: the bundle's temporary file would go inside DIR, whatever it is.
        guard !path.hasSuffix("/") else { return "\(path) is not a file path; pass a file name to write the bundle to" }
        // Only a regular file (or a link, which is replaced, not followed) is replaced: a device
        // node or a FIFO there (/dev/null) stays what it is.
        var st = stat()
        if lstat(path, &st) == 0, st.st_mode & S_IFMT != S_IFREG, st.st_mode & S_IFMT != S_IFLNK {
            return "\(path) exists and is not a regular file; pass a new file name or a regular file to replace"
        }
        // Named before the temporary file's name shows up in an error about it.
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var dirInfo = stat()
        if stat(directory, &dirInfo) != 0 {
            return "the directory \(directory) does not exist (or ferryd cannot reach it); create it, or pass a path in one that does"
        }
        if dirInfo.st_mode & S_IFMT != S_IFDIR {
            return "\(directory) is not a directory; pass a path in a directory"
        }
        func resolved(_ path: String) -> String? {
            let url = URL(fileURLWithPath: path)
            let name = url.lastPathComponent
            guard name != ".", name != "..", !name.isEmpty else { return nil }
            guard let parent = realpath(url.deletingLastPathComponent().path, nil) else { return path }
            defer { free(parent) }
            let dir = String(cString: parent)
            return (dir == "/" ? "" : dir) + "/" + name
        }
        guard let target = resolved(path) else { return "\(path) is not a file path; pass a file name to write the bundle to" }
        let state: String
        if let real = realpath(stateDirectory, nil) {
            state = String(cString: real)
            free(real)
        } else {
            state = stateDirectory
        }
        if target == state || target.hasPrefix(state == "/" ? "/" : state + "/") {
            return "\(path) is in ferryd's state directory \(state), which holds the store the bundle is made from; write it elsewhere"
        }
        if let socket = resolved(socketPath), target == socket {
            return "\(path) is ferryd's socket; write the bundle elsewhere"
        }
        return nil
    }

    private func absolutePath(_ p: [String: JSONValue]) throws(VarlinkError) -> String {
        let path = p["path"]?.stringValue ?? ""
        guard path.hasPrefix("/"), path.utf8.count < 4096, !path.utf8.contains(0) else {
            throw ErrorMapping.invalidArgument("path", "path must be an absolute file path (ferryctl resolves relative ones)",
                                               interface: EngineInterface.name)
        }
        return path
    }

    private func checkSpace(_ space: String) throws(VarlinkError) {
        guard store.spaces().contains(where: { $0.name == space }) else {
            throw ErrorMapping.varlink(.spaceNotFound(space.clipped(to: 80)), interface: EngineInterface.name)
        }
    }

    private func run<T: Sendable>(_ body: @escaping @Sendable () throws(FerryError) -> T) async throws(VarlinkError) -> T {
        do { return try await Blocking.run(body) } catch { throw ErrorMapping.varlink(error, interface: EngineInterface.name) }
    }
}
