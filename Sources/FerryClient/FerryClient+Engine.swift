import FerryAPI
import FerryJSON

extension FerryClient {
    /// The daemon's state at a glance (`io.ferry.Engine.Status`).
    /// - Throws: a connection error, or `FerryClientError.remote` with `StorageFailure`.
    public func status() async throws(FerryClientError) -> FerryStatus {
        let reply = try await call("io.ferry.Engine.Status")
        return try decode { () throws(WireError) in try FerryStatus(json: reply) }
    }

    /// The outbox (`io.ferry.Engine.Outbox`): queued records with each transport's state.
    /// - Parameters:
    ///   - space: one space; nil for all of them.
    ///   - errorsOnly: keep only entries some transport rejected.
    ///   - limit: at most this many entries; nil for the daemon's default.
    /// - Throws: `FerryClientError.remote` with `SpaceNotFound` or `InvalidArgument`; or a
    ///   connection error.
    public func outbox(space: String? = nil, errorsOnly: Bool = false,
                       limit: Int? = nil) async throws(FerryClientError) -> [OutboxEntry] {
        try await outboxPage(space: space, errorsOnly: errorsOnly, limit: limit).entries
    }

    /// The outbox as `outbox` gives it, and whether entries were left out (past `limit`, or
    /// past what fits in one reply).
    public func outboxPage(space: String? = nil, errorsOnly: Bool = false,
                           limit: Int? = nil) async throws(FerryClientError) -> (entries: [OutboxEntry], more: Bool) {
        var parameters: [String: JSONValue] = [:]
        parameters.setIfPresent("space", space.json)
        if errorsOnly { parameters["errorsOnly"] = .bool(true) }
        parameters.setIfPresent("limit", limit.map { .int(Int64($0)) })
        let reply = try await call("io.ferry.Engine.Outbox", parameters)
        return try decode { () throws(WireError) in
            var out: [OutboxEntry] = []
            for entry in try reply.objects("entries") { out.append(try OutboxEntry(json: entry)) }
            return (out, reply["more"]?.boolValue ?? false)
        }
    }

    /// Starts a sync round now (`io.ferry.Engine.SyncNow`) of one space, or of all when
    /// `space` is nil. Returns once the round is started, not when it ends.
    /// - Throws: `FerryClientError.remote` with `SpaceNotFound`; or a connection error.
    public func syncNow(space: String? = nil) async throws(FerryClientError) {
        var parameters: [String: JSONValue] = [:]
        parameters.setIfPresent("space", space.json)
        _ = try await call("io.ferry.Engine.SyncNow", parameters)
    }

    /// The spaces on this device (`io.ferry.Engine.Spaces`).
    /// - Throws: a connection error, or `FerryClientError.remote` with `StorageFailure`.
    public func spaces() async throws(FerryClientError) -> [FerrySpace] {
        let reply = try await call("io.ferry.Engine.Spaces")
        return try decode { () throws(WireError) in
            var out: [FerrySpace] = []
            for space in try reply.objects("spaces") { out.append(try FerrySpace(json: space)) }
            return out
        }
    }

    /// Creates a space (`io.ferry.Engine.CreateSpace`).
    /// - Parameter kind: `"private"` or `"shared"`; nil for the daemon's default (`"shared"`).
    /// - Returns: the new space.
    /// - Throws: `FerryClientError.remote` with `InvalidSpaceName` or `SpaceExists`; or a
    ///   connection error.
    public func createSpace(name: String, kind: String? = nil) async throws(FerryClientError) -> FerrySpace {
        var parameters: [String: JSONValue] = ["name": .string(name)]
        parameters.setIfPresent("kind", kind.json)
        let reply = try await call("io.ferry.Engine.CreateSpace", parameters)
        return try decode { () throws(WireError) in try FerrySpace(json: reply.object("space")) }
    }

    /// What the daemon says about itself (`org.varlink.service.GetInfo`): its version and
    /// interfaces. Cheap: it touches no storage.
    /// - Throws: a connection error.
    public func serviceInfo() async throws(FerryClientError) -> ServiceInfo {
        let reply = try await call("org.varlink.service.GetInfo")
        return try decode { () throws(WireError) in try ServiceInfo(json: reply) }
    }
}
