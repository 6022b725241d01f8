import FerryAPI
import FerryJSON

extension FerryClient {
    /// The transports of one space, or of every space (`io.ferry.Engine.Transports`).
    /// - Throws: `FerryClientError.remote` with `SpaceNotFound`; or a connection error.
    public func transports(space: String? = nil) async throws(FerryClientError) -> [TransportStatus] {
        var parameters: [String: JSONValue] = [:]
        parameters.setIfPresent("space", space.json)
        let reply = try await call("io.ferry.Engine.Transports", parameters)
        return try decode { () throws(WireError) in
            var out: [TransportStatus] = []
            for t in try reply.objects("transports") { out.append(try TransportStatus(json: t)) }
            return out
        }
    }

    /// Adds a transport to a space (`io.ferry.Engine.AddTransport`); every record of the space
    /// is queued for it. For kind `"folder"`, `location` is the absolute path of an existing
    /// directory kept in sync by a file-sync tool; for `"relay"`, the relay's URL with a pairing
    /// `code` from another device of the owner, or a `token` from the relay's operator.
    /// - Returns: the transport's status, and a warning when a relay token could not be checked.
    /// - Throws: `FerryClientError.remote` with `InvalidArgument` (an unknown kind, a missing
    ///   directory), `SpaceNotFound`; or a connection error.
    @discardableResult
    public func addTransport(space: String? = nil, name: String, kind: String, location: String,
                             code: String? = nil, token: String? = nil) async throws(FerryClientError) -> AddedTransport {
        var parameters: [String: JSONValue] = ["name": .string(name), "kind": .string(kind), "location": .string(location)]
        parameters.setIfPresent("space", space.json)
        parameters.setIfPresent("code", code.json)
        parameters.setIfPresent("token", token.json)
        let reply = try await call("io.ferry.Engine.AddTransport", parameters)
        return try decode { () throws(WireError) in
            AddedTransport(transport: try TransportStatus(json: reply.object("transport")), warning: reply["warning"]?.stringValue)
        }
    }

    /// A one-time code for pairing another device with this space's relay
    /// (`io.ferry.Engine.RelayPairingCode`); `name` picks the relay transport when there are
    /// several. Returns the code and when it expires (Unix milliseconds).
    public func relayPairingCode(space: String? = nil, name: String? = nil) async throws(FerryClientError) -> (code: String, expiresAt: Int64) {
        var parameters: [String: JSONValue] = [:]
        parameters.setIfPresent("space", space.json)
        parameters.setIfPresent("name", name.json)
        let reply = try await call("io.ferry.Engine.RelayPairingCode", parameters)
        return try decode { () throws(WireError) in (try reply.string("code"), Int64(try reply.int("expiresAt"))) }
    }

    /// What the space's relay holds for its owner (`io.ferry.Engine.RelayUsage`): figures by
    /// name (`events`, `bytes`, `blobs`, `blobBytes`, `quotaBytes`, `lastPushAt`) and the
    /// owner id and URL.
    public func relayUsage(space: String? = nil, name: String? = nil) async throws(FerryClientError) -> (owner: String, url: String, figures: [String: Int64]) {
        var parameters: [String: JSONValue] = [:]
        parameters.setIfPresent("space", space.json)
        parameters.setIfPresent("name", name.json)
        let reply = try await call("io.ferry.Engine.RelayUsage", parameters)
        return try decode { () throws(WireError) in
            var figures: [String: Int64] = [:]
            for key in ["events", "bytes", "blobs", "blobBytes", "quotaBytes", "lastPushAt"] {
                if let v = try reply.optionalInt64(key) { figures[key] = v }
            }
            return (try reply.string("owner"), try reply.string("url"), figures)
        }
    }

    /// The devices that can reach the space owner's data on its relay
    /// (`io.ferry.Engine.RelayDevices`), oldest first, with the owner id and the relay's URL.
    public func relayDevices(space: String? = nil, name: String? = nil) async throws(FerryClientError) -> (owner: String, url: String, devices: [RelayDevice]) {
        var parameters: [String: JSONValue] = [:]
        parameters.setIfPresent("space", space.json)
        parameters.setIfPresent("name", name.json)
        let reply = try await call("io.ferry.Engine.RelayDevices", parameters)
        return try decode { () throws(WireError) in
            var devices: [RelayDevice] = []
            for device in try reply.objects("devices") { devices.append(try RelayDevice(json: device)) }
            return (try reply.string("owner"), try reply.string("url"), devices)
        }
    }

    /// Revokes another device's relay token (`io.ferry.Engine.RelayRevoke`), by the id
    /// `relayDevices` gives: that device stops syncing through the relay until it pairs again.
    /// This device's own token is refused (`.invalidArgument`); remove the transport instead.
    public func relayRevoke(space: String? = nil, name: String? = nil, id: String) async throws(FerryClientError) {
        var parameters: [String: JSONValue] = ["id": .string(id)]
        parameters.setIfPresent("space", space.json)
        parameters.setIfPresent("name", name.json)
        _ = try await call("io.ferry.Engine.RelayRevoke", parameters)
    }

    /// Deletes the relay's copy of the space owner's data (`io.ferry.Engine.RelayDeleteCopy`).
    public func relayDeleteCopy(space: String? = nil, name: String? = nil) async throws(FerryClientError) {
        var parameters: [String: JSONValue] = [:]
        parameters.setIfPresent("space", space.json)
        parameters.setIfPresent("name", name.json)
        _ = try await call("io.ferry.Engine.RelayDeleteCopy", parameters)
    }

    /// Removes a transport (`io.ferry.Engine.RemoveTransport`): its cursor and progress go,
    /// the data stays.
    /// - Throws: `FerryClientError.remote` with `TransportNotFound`; or a connection error.
    public func removeTransport(space: String? = nil, name: String) async throws(FerryClientError) {
        var parameters: [String: JSONValue] = ["name": .string(name)]
        parameters.setIfPresent("space", space.json)
        _ = try await call("io.ferry.Engine.RemoveTransport", parameters)
    }

    /// A space's owner id and recovery phrase (`io.ferry.Engine.OwnerPhrase`).
    public func ownerPhrase(space: String? = nil) async throws(FerryClientError) -> (owner: String, phrase: String) {
        var parameters: [String: JSONValue] = [:]
        parameters.setIfPresent("space", space.json)
        let reply = try await call("io.ferry.Engine.OwnerPhrase", parameters)
        return try decode { () throws(WireError) in (try reply.string("owner"), try reply.string("phrase")) }
    }

    /// Makes a space belong to the owner of `phrase` (`io.ferry.Engine.RestoreOwner`) and
    /// returns the owner id.
    /// - Throws: `FerryClientError.remote` with `InvalidRecoveryPhrase`; or a connection error.
    public func restoreOwner(space: String? = nil, phrase: String) async throws(FerryClientError) -> String {
        try await restoreOwnerReport(space: space, phrase: phrase).owner
    }

    /// `restoreOwner`, with the space's relay transports that hold a token of the previous owner
    /// and so must be paired again (empty when the owner did not change or there are none).
    public func restoreOwnerReport(space: String? = nil, phrase: String) async throws(FerryClientError) -> (owner: String, relaysToPairAgain: [String]) {
        var parameters: [String: JSONValue] = ["phrase": .string(phrase)]
        parameters.setIfPresent("space", space.json)
        let reply = try await call("io.ferry.Engine.RestoreOwner", parameters)
        return try decode { () throws(WireError) in
            (try reply.string("owner"), reply["relaysToPairAgain"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        }
    }

    /// Pauses (`io.ferry.Engine.Pause`) or resumes (`io.ferry.Engine.Resume`) syncing.
    public func setSyncPaused(_ paused: Bool) async throws(FerryClientError) {
        _ = try await call(paused ? "io.ferry.Engine.Pause" : "io.ferry.Engine.Resume")
    }

    /// What `exportBundle` wrote.
    public struct ExportSummary: Sendable, Hashable {
        public var spaces: Int
        public var records: Int
        public var attachments: Int
        /// Attachments the records reference whose bytes were not on the device, so not in
        /// the bundle (0 from a ferryd that does not say).
        public var attachmentsLeftOut: Int
        public var bytes: Int64
    }

    /// Writes a sealed bundle of the whole store to `path`, an absolute path the daemon can
    /// write (`io.ferry.Engine.Export`).
    /// - Throws: `FerryClientError.remote` with `BundleFailure`; or a connection error.
    public func exportBundle(to path: String) async throws(FerryClientError) -> ExportSummary {
        let reply = try await call("io.ferry.Engine.Export", ["path": .string(path)])
        return try decode { () throws(WireError) in
            ExportSummary(spaces: try reply.int("spaces"), records: try reply.int("records"),
                          attachments: try reply.int("attachments"), attachmentsLeftOut: (try? reply.int("attachmentsLeftOut")) ?? 0,
                          bytes: Int64(try reply.int("bytes")))
        }
    }

    /// What `importBundle` merged.
    public struct ImportSummary: Sendable, Hashable {
        public var applied: Int
        public var duplicates: Int
        public var lost: Int
        public var refused: Int
        /// Owners in the bundle that no space here belongs to.
        public var skippedOwners: [String]
    }

    /// Merges a bundle written by `exportBundle` (`io.ferry.Engine.Import`).
    /// - Throws: `FerryClientError.remote` with `BundleFailure`; or a connection error.
    public func importBundle(from path: String) async throws(FerryClientError) -> ImportSummary {
        let reply = try await call("io.ferry.Engine.Import", ["path": .string(path)])
        return try decode { () throws(WireError) in
            var skipped: [String] = []
            if case .array(let list)? = reply["skippedOwners"] { skipped = list.compactMap(\.stringValue) }
            return ImportSummary(applied: try reply.int("applied"), duplicates: try reply.int("duplicates"),
                                 lost: try reply.int("lost"), refused: try reply.int("refused"), skippedOwners: skipped)
        }
    }
}
