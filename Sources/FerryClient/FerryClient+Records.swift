import FerryAPI
import FerryJSON
import FerryVarlink

extension FerryClient {
    /// Writes a new version of one record (`io.ferry.Store.Put`); a new record when `id` is
    /// nil (it gets a new upper-case UUID) or unknown. Durable when this returns.
    /// - Parameter attachments: lowercase hex SHA-256 of attachments already stored with
    ///   `putAttachment`.
    /// - Returns: the version written.
    /// - Throws: `FerryClientError.remote` with `InvalidEntity`, `InvalidID`, `InvalidPayload`,
    ///   `PayloadTooLarge`, `InvalidAttachmentReference`, `AttachmentMissing`,
    ///   `ImmutableRecord`, `SpaceNotFound` or `StorageFailure`; or a connection error.
    public func put(space: String? = nil, entity: String, id: String? = nil, payload: [String: JSONValue],
                    attachments: [String]? = nil) async throws(FerryClientError) -> WireRecord {
        var parameters: [String: JSONValue] = ["entity": .string(entity), "payload": .object(payload)]
        parameters.setIfPresent("space", space.json)
        parameters.setIfPresent("id", id.json)
        if let attachments { parameters["attachments"] = .array(attachments.map(JSONValue.string)) }
        return try await record(of: VarlinkCallMessage(method: "io.ferry.Store.Put", parameters: parameters))
    }

    /// Writes a new version of one record with its payload given as JSON text, which is sent
    /// and stored exactly as given, byte for byte (`put` sends a `JSONValue`, which keeps
    /// integers to 64 bits and other numbers as doubles, and sorts keys).
    /// - Throws: `FerryClientError.invalidArgument` when `payloadJSON` is not one JSON object
    ///   (nothing is sent); otherwise as `put`.
    public func put(space: String? = nil, entity: String, id: String? = nil, payloadJSON: String,
                    attachments: [String]? = nil) async throws(FerryClientError) -> WireRecord {
        let text = Array(payloadJSON.utf8)
        let top: JSONTopLevel
        do {
            top = try JSONParser.validate(text)
        } catch {
            throw .invalidArgument("the payload is not valid JSON (\(error)); nothing was written")
        }
        guard case .object = top else { throw .invalidArgument("the payload must be a JSON object; nothing was written") }
        var parameters: [String: JSONValue] = ["entity": .string(entity)]
        parameters.setIfPresent("space", space.json)
        parameters.setIfPresent("id", id.json)
        if let attachments { parameters["attachments"] = .array(attachments.map(JSONValue.string)) }
        var message = VarlinkCallMessage(method: "io.ferry.Store.Put", parameters: parameters)
        message.verbatimParameters["payload"] = text
        return try await record(of: message)
    }

    /// The record a write's reply holds (`payloadText` set).
    private func record(of message: VarlinkCallMessage) async throws(FerryClientError) -> WireRecord {
        guard let record = try await callForRecord(message) else { throw .malformedReply(WireError(field: "record", expected: "record")) }
        return record
    }

    /// Writes many records in one transaction (`io.ferry.Store.PutMany`): all of them, or on
    /// any error none.
    /// - Returns: the versions written, in the order of `records`.
    /// - Throws: as `put`, plus `BatchTooLarge`.
    public func putMany(space: String? = nil, _ records: [PutItem]) async throws(FerryClientError) -> [WireRecord] {
        var parameters: [String: JSONValue] = ["records": .array(records.map(\.json))]
        parameters.setIfPresent("space", space.json)
        let reply = try await call("io.ferry.Store.PutMany", parameters)
        return try decode { () throws(WireError) in
            guard let items = reply["records"]?.arrayValue else { throw WireError(field: "records", expected: "array") }
            var out: [WireRecord] = []
            out.reserveCapacity(items.count)
            for item in items { out.append(try WireRecord(json: item)) }
            return out
        }
    }

    /// Reads the current version of a record (`io.ferry.Store.Get`).
    /// - Returns: the record (a tombstone when it was deleted), or nil when it is unknown.
    /// - Throws: `FerryClientError.remote` with `InvalidEntity`, `InvalidID` or
    ///   `SpaceNotFound`; or a connection error.
    public func get(space: String? = nil, entity: String, id: String) async throws(FerryClientError) -> WireRecord? {
        var parameters: [String: JSONValue] = ["entity": .string(entity), "id": .string(id)]
        parameters.setIfPresent("space", space.json)
        return try await callForRecord(VarlinkCallMessage(method: "io.ferry.Store.Get", parameters: parameters))
    }

    /// Deletes a record (`io.ferry.Store.Delete`): writes a tombstone with a new stamp.
    /// Deleting a tombstone returns it unchanged.
    /// - Returns: the tombstone.
    /// - Throws: `FerryClientError.remote` with `NotFound` for an unknown record (see
    ///   `FerryClientError.isNotFound`), `ImmutableRecord`, `SpaceNotFound`, ...
    public func delete(space: String? = nil, entity: String, id: String) async throws(FerryClientError) -> WireRecord {
        var parameters: [String: JSONValue] = ["entity": .string(entity), "id": .string(id)]
        parameters.setIfPresent("space", space.json)
        let reply = try await call("io.ferry.Store.Delete", parameters)
        return try decode { () throws(WireError) in try reply.record("record") }
    }

    /// Lists one page of the records of one entity kind (`io.ferry.Store.List`).
    /// - Parameters:
    ///   - after: the `next` of the previous page; nil for the first page.
    ///   - limit: 1 to 1000; nil for the daemon's default (100).
    ///   - includeDeleted: also list tombstones.
    ///   - where: keeps records whose payload fields equal these JSON scalars
    ///     (`PayloadFilter` builds it from `field=value` text).
    ///   - order: by id (the default) or by stamp.
    /// - Returns: the page; its `next` is nil on the last page.
    /// - Throws: `FerryClientError.remote` with `InvalidArgument` (a bad limit, order or
    ///   filter), `InvalidEntity` or `SpaceNotFound`; or a connection error.
    public func list(space: String? = nil, entity: String, after: String? = nil, limit: Int? = nil,
                     includeDeleted: Bool = false, where filter: [String: JSONValue]? = nil,
                     order: ListOrder? = nil) async throws(FerryClientError) -> ListPage {
        var parameters: [String: JSONValue] = ["entity": .string(entity)]
        parameters.setIfPresent("space", space.json)
        parameters.setIfPresent("after", after.json)
        parameters.setIfPresent("limit", limit.map { .int(Int64($0)) })
        if includeDeleted { parameters["includeDeleted"] = .bool(true) }
        if let filter, !filter.isEmpty { parameters["where"] = .object(filter) }
        parameters.setIfPresent("order", order.map { .string($0.rawValue) })
        let message = VarlinkCallMessage(method: "io.ferry.Store.List", parameters: parameters)
        let (reply, captured) = try await call(message, capturing: [WireRecord.payloadPath(.key("records"), .anyElement)])
        return try decode { () throws(WireError) in
            var page = try ListPage(json: reply)
            for i in page.records.indices { try page.records[i].resolvePayload(from: captured) }
            return page
        }
    }

    /// The versions of a record that lost a merge, newest first (`io.ferry.Store.Conflicts`).
    /// - Throws: `FerryClientError.remote` with `NotFound` for an unknown record, or
    ///   `SpaceNotFound`; or a connection error.
    public func conflicts(space: String? = nil, entity: String, id: String) async throws(FerryClientError) -> [LosingVersion] {
        var parameters: [String: JSONValue] = ["entity": .string(entity), "id": .string(id)]
        parameters.setIfPresent("space", space.json)
        let message = VarlinkCallMessage(method: "io.ferry.Store.Conflicts", parameters: parameters)
        let (reply, captured) = try await call(message, capturing: [WireRecord.payloadPath(.key("versions"), .anyElement, .key("record"))])
        return try decode { () throws(WireError) in
            var out: [LosingVersion] = []
            for version in try reply.objects("versions") {
                var losing = try LosingVersion(json: version)
                try losing.record.resolvePayload(from: captured)
                out.append(losing)
            }
            return out
        }
    }

    /// Makes a losing version current again, as a new version that wins everywhere
    /// (`io.ferry.Store.RestoreConflict`).
    /// - Parameter hlc: the stamp of the losing version, as `conflicts` lists it.
    /// - Returns: the new current version.
    /// - Throws: `FerryClientError.remote` with `ConflictNotFound` when no losing version
    ///   with that stamp is kept, `NotFound`, `InvalidStamp`, ...; or a connection error.
    public func restoreConflict(space: String? = nil, entity: String, id: String,
                                hlc: String) async throws(FerryClientError) -> WireRecord {
        var parameters: [String: JSONValue] = ["entity": .string(entity), "id": .string(id), "hlc": .string(hlc)]
        parameters.setIfPresent("space", space.json)
        return try await record(of: VarlinkCallMessage(method: "io.ferry.Store.RestoreConflict", parameters: parameters))
    }
}
