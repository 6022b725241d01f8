import FerryAPI
import FerryJSON
import FerryModel
import FerryStore
import FerryVarlink
import Foundation

/// The handlers of `io.ferry.Store`: each reads its parameters (already checked against the
/// interface definition by the Varlink layer), runs the store call off the cooperative pool,
/// and maps errors in one place (`ErrorMapping`).
struct StoreAPI: Sendable {
    let store: Store
    let hub: WatchHub
    let feed: ChangeFeed
    let logger: Logger

    /// The largest attachment moved inline (base64) in one message.
    static let maxInlineAttachment = 8 << 20

    /// The most bytes of reply parameters one reply may take: Varlink's 16 MiB message cap
    /// (the server's and every client's default) less room for the envelope. A write whose
    /// reply would not fit is refused before it is written, never committed and then answered
    /// with a message the client must drop; replies without paging (Conflicts, Outbox) stop
    /// before the item that would not fit.
    static let maxReplyBytes = (16 << 20) - (64 << 10)

    var methods: [String: VarlinkMethod] {
        [
            // Writes are batched: every write that arrives in one turn of the server's event
            // loop, across all connections, commits in one transaction (group commit), on the
            // loop thread, with no hand-off to another thread.
            // Payloads are taken as the client sent them, not built, and stored byte for byte
            // (docs/protocol.md section 3.2); the store checks them, so a bad one is refused
            // with InvalidPayload and its reason.
            // The common shape of a write is read straight into PutRequests, without a JSONValue
            // per record (PutParametersDecoder); anything else takes the ordinary decoding.
            "Put": .batched(capturing: [[.key("payload")]], direct: { [maxPayloadDepth] bytes, limits in
                PutParametersDecoder.put(bytes, limits: limits, maxPayloadDepth: maxPayloadDepth)
            }) { calls in write(calls.map(putOperation)) },
            "PutMany": .batched(capturing: [[.key("records"), .anyElement, .key("payload")]], direct: { [maxPayloadDepth] bytes, limits in
                PutParametersDecoder.putMany(bytes, limits: limits, maxPayloadDepth: maxPayloadDepth)
            }) { calls in write(calls.map(putManyOperation)) },
            "Delete": .batched { calls in write(calls.map(deleteOperation)) },
            // Reads answer on the loop thread: a point lookup costs less than a hand-off.
            "Get": .inline { call throws(VarlinkError) in try get(call.parameters) },
            "List": .inline { call throws(VarlinkError) in try list(call.parameters) },
            "Conflicts": .inline { call throws(VarlinkError) in try conflicts(call.parameters) },
            "Watch": VarlinkMethod(requiresMore: true) { call, sink throws(VarlinkError) in try await watch(call.parameters, sink) },
            "PutAttachment": VarlinkMethod { call, _ throws(VarlinkError) in try await putAttachment(call.parameters) },
            "GetAttachment": VarlinkMethod { call, _ throws(VarlinkError) in try await getAttachment(call.parameters) },
            "RestoreConflict": .inline { call throws(VarlinkError) in try restoreConflict(call.parameters) },
        ]
    }

    // MARK: Writes

    /// A write ready for `Store.perform`, and how to shape its reply.
    struct PendingWrite {
        enum Reply { case one, many }
        var operation: Store.WriteOperation
        var reply: Reply
        /// Set when the write is refused before it reaches the store.
        var refusal: VarlinkError? = nil
    }

    /// A put of `payload` as the client sent it, byte for byte (docs/protocol.md section 3.2:
    /// whitespace, key order and number spelling are kept). The store checks the text again
    /// only when the message's parse found a problem in it (a duplicate key, a number out of
    /// range) or it is deeper than the store allows, and answers with its own error. A payload
    /// that did not come as text (a call made in-process) is written compactly.
    func request(entity: String, id: String?, payload: JSONValue?, attachments: [String], call: VarlinkCall) -> PutRequest {
        if let captured = call.captured, let text = captured.text(of: payload) {
            return PutRequest(entity: entity, id: id, payload: String(decoding: text, as: UTF8.self), attachments: attachments,
                              payloadIsWellFormed: captured.isWellFormed(payload, maxDepth: maxPayloadDepth))
        }
        let value = payload ?? .object([:])
        return PutRequest(entity: entity, id: id, payload: JSONWriter.string(value), attachments: attachments,
                          payloadIsWellFormed: Self.depth(of: value, limit: maxPayloadDepth) <= maxPayloadDepth)
    }

    var maxPayloadDepth: Int { store.configuration.limits.maxPayloadDepth }

    /// The nesting depth of `value` (an object or array counts 1), counting no further than
    /// `limit + 1`.
    static func depth(of value: JSONValue, limit: Int) -> Int {
        switch value {
        case .object(let o):
            if limit <= 0 { return 1 }
            var deepest = 0
            for v in o.values {
                switch v {
                case .object, .array: deepest = max(deepest, depth(of: v, limit: limit - 1))
                default: continue
                }
                if deepest >= limit { break }
            }
            return 1 + deepest
        case .array(let a):
            if limit <= 0 { return 1 }
            var deepest = 0
            for v in a {
                switch v {
                case .object, .array: deepest = max(deepest, depth(of: v, limit: limit - 1))
                default: continue
                }
                if deepest >= limit { break }
            }
            return 1 + deepest
        default:
            return 0
        }
    }

    func putOperation(_ call: VarlinkCall) -> PendingWrite {
        if let direct = call.direct as? PutParametersDecoder.Parameters {
            return PendingWrite(operation: .put(space: direct.space ?? Store.privateSpace, direct.requests), reply: .one)
        }
        let p = call.parameters
        let request = request(entity: p["entity"]?.stringValue ?? "", id: p["id"]?.stringValue,
                              payload: p["payload"], attachments: p.stringArray("attachments"), call: call)
        return PendingWrite(operation: .put(space: p.space, [request]), reply: .one)
    }

    func putManyOperation(_ call: VarlinkCall) -> PendingWrite {
        let space: String
        var requests: [PutRequest] = []
        if let direct = call.direct as? PutParametersDecoder.Parameters {
            space = direct.space ?? Store.privateSpace
            requests = direct.requests
        } else {
            let p = call.parameters
            space = p.space
            let items = p["records"]?.arrayValue ?? []
            requests.reserveCapacity(items.count)
            for item in items {
                let o = item.objectValue ?? [:]
                requests.append(request(entity: o["entity"]?.stringValue ?? "", id: o["id"]?.stringValue,
                                        payload: o["payload"], attachments: o.stringArray("attachments"), call: call))
            }
        }
        var pending = PendingWrite(operation: .put(space: space, requests), reply: .many)
        if Self.putManyReplyBytes(space: space, requests) > Self.maxReplyBytes {
            pending.refusal = ErrorMapping.invalidArgument(
                "records", "the reply to these \(requests.count) records would exceed Varlink's 16 MiB message cap: write them in smaller batches")
        }
        return pending
    }

    /// An upper bound on the bytes of PutMany's reply to `requests` (records without payloads),
    /// known before anything is written: the fixed fields at their longest, each id as it will
    /// be escaped (a generated one is a 36-character UUID; 64 are allowed), each attachment
    /// reference, entity and space (valid names, never escaped).
    static func putManyReplyBytes(space: String, _ requests: [PutRequest]) -> Int {
        // {"attachments":[],"deleted":false,"entity":"","hlc":"<46>","id":"","seq":<19>,"space":""},
        let fixed = 147
        var total = #"{"records":[]}"#.utf8.count
        for r in requests {
            let id = r.id.map { id in id.utf8.count + id.utf8.count(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) } ?? 64
            total += fixed + id + r.entity.utf8.count + space.utf8.count + r.attachments.count * 67
        }
        return total
    }

    func deleteOperation(_ call: VarlinkCall) -> PendingWrite {
        let p = call.parameters
        return PendingWrite(operation: .delete(space: p.space, entity: p["entity"]?.stringValue ?? "", id: p["id"]?.stringValue ?? ""),
                            reply: .one)
    }

    /// Runs a turn's writes in one transaction and shapes each reply (written straight to
    /// bytes: Put echoes the stored payload text, PutMany no payloads).
    func write(_ pending: [PendingWrite]) -> [Result<VarlinkReplyParameters, VarlinkError>] {
        var results = store.perform(pending.filter { $0.refusal == nil }.map(\.operation)).makeIterator()
        return pending.map { item in
            if let refusal = item.refusal { return .failure(refusal) }
            switch results.next()! {
            case .failure(let error):
                if case .storage = error { logger.error(error.description) }
                return .failure(ErrorMapping.varlink(error))
            case .success(let records):
                if logger.isEnabled(.debug) {
                    for r in records { logger.debug(r.deleted ? "delete" : "put", ["entity": r.entity, "id": r.id, "space": r.space]) }
                }
                var bytes: [UInt8] = []
                bytes.reserveCapacity(records.count * (item.reply == .one ? 400 : 200))
                if item.reply == .one, let first = records.first {
                    JSONWriter.appendRaw(#"{"record":"#, to: &bytes)
                    Wire.append(first, payloadText: first.payload, to: &bytes)
                } else {
                    JSONWriter.appendRaw(#"{"records":["#, to: &bytes)
                    for (i, r) in records.enumerated() {
                        if i > 0 { bytes.append(UInt8(ascii: ",")) }
                        Wire.append(r, payloadText: nil, to: &bytes)
                    }
                    bytes.append(UInt8(ascii: "]"))
                }
                bytes.append(UInt8(ascii: "}"))
                return .success(.json(bytes))
            }
        }
    }

    // MARK: Reads

    func get(_ p: [String: JSONValue]) throws(VarlinkError) -> VarlinkReplyParameters {
        let space = p.space, entity = p["entity"]?.stringValue ?? "", id = p["id"]?.stringValue ?? ""
        let record = try now { () throws(FerryError) in
            try RecordVersion.validate(entity: entity, id: id)
            return try store.get(space: space, entity: entity, id: id)
        }
        guard let record else { return .values([:]) }
        var bytes = Array(#"{"record":"#.utf8)
        Wire.append(record, payloadText: record.payload, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
        return .json(bytes)
    }

    func list(_ p: [String: JSONValue]) throws(VarlinkError) -> VarlinkReplyParameters {
        let space = p.space, entity = p["entity"]?.stringValue ?? ""
        let after = p["after"]?.stringValue
        let limit = Int(p["limit"]?.intValue ?? 100)
        guard (1...1000).contains(limit) else { throw ErrorMapping.invalidArgument("limit", "limit is 1 to 1000") }
        let includeDeleted = p["includeDeleted"]?.boolValue ?? false
        var order = Store.ListOrder.id
        if let name = p["order"]?.stringValue {
            guard let o = Store.ListOrder(rawValue: name) else {
                throw ErrorMapping.invalidArgument("order", "order is \"id\" or \"stamp\", not \"\(name.prefix(40))\"")
            }
            order = o
        }
        var filters: [(field: String, value: FilterValue)] = []
        for (field, value) in (p["where"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
            let filter: FilterValue
            switch value {
            case .null: filter = .null
            case .bool(let b): filter = .bool(b)
            case .int(let i): filter = .int(i)
            case .double(let d): filter = .double(d)
            case .string(let s): filter = .string(s)
            case .array, .object:
                throw ErrorMapping.invalidArgument("where", "where matches payload fields against JSON scalars; \(field) is an \(value.typeName)")
            }
            filters.append((field, filter))
        }
        if filters.count > 16 { throw ErrorMapping.invalidArgument("where", "at most 16 fields in where") }
        let matching = filters, ordering = order
        let page: Store.Page
        do {
            page = try store.list(space: space, entity: entity, after: after, limit: limit, includeDeleted: includeDeleted,
                                  order: ordering, where: matching)
        } catch {
            // The cursor is what is wrong: say so about `after`.
            if case .invalidStamp(_, let reason) = error { throw ErrorMapping.invalidArgument("after", reason) }
            if case .storage = error { logger.error(error.description) }
            throw ErrorMapping.varlink(error)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(page.records.count * 400 + 64)
        if let next = page.next {
            bytes += Array(#"{"next":"#.utf8)
            JSONWriter.appendString(next, to: &bytes)
            bytes += Array(#","records":["#.utf8)
        } else {
            bytes += Array(#"{"records":["#.utf8)
        }
        for (i, r) in page.records.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            Wire.append(r, payloadText: r.payload, to: &bytes)
        }
        bytes += Array("]}".utf8)
        return .json(bytes)
    }

    /// Streams changes after a cursor: read from the change log at the watcher's own pace and
    /// woken by commits, so nothing is skipped and memory stays bounded; a watcher that does
    /// not read its replies ends with ResumeFromCursor.
    func watch(_ p: [String: JSONValue], _ sink: VarlinkReplySink) async throws(VarlinkError) -> [String: JSONValue] {
        var spaces: Set<String>? = [Store.privateSpace]
        if let list = p["spaces"]?.arrayValue {
            // An empty list would follow nothing, for ever.
            guard !list.isEmpty else {
                throw ErrorMapping.invalidArgument("spaces", "spaces is empty, which matches no change; leave it out for the private space, or [\"*\"] for all")
            }
            let names = list.compactMap(\.stringValue)
            if names.contains("*") && names.count > 1 {
                throw ErrorMapping.invalidArgument("spaces", "\"*\" follows every space, present and future: give it alone, or list the spaces to follow")
            }
            spaces = names.contains("*") ? nil : Set(names)
        }
        if let names = spaces {
            for name in names where !store.spaces().contains(where: { $0.name == name }) {
                throw ErrorMapping.varlink(.spaceNotFound(name.clipped(to: 80)))
            }
        }
        let entities = p["entities"]?.arrayValue.map { Set($0.compactMap(\.stringValue)) }
        if let entities {
            guard !entities.isEmpty else {
                throw ErrorMapping.invalidArgument("entities", "entities is empty, which matches no change; leave it out to follow every entity kind")
            }
            for entity in entities where !Names.isValidName(entity) { throw ErrorMapping.varlink(.invalidEntity(entity.clipped(to: 80))) }
        }
        let wakeups = hub.subscribe()   // before reading, so no commit falls between
        var cursor = p["since"]?.intValue ?? hub.lastSeq
        if cursor < 0 { throw ErrorMapping.invalidArgument("since", "since is a cursor from an earlier reply (0 or more)") }
        // A cursor this store never handed out (another store's, or this one was restored from
        // an older backup): following on from it would skip the changes up to it for good.
        let newest = hub.lastSeq
        if cursor > newest {
            throw ErrorMapping.invalidArgument("since", "cursor \(cursor) is beyond this store's newest change (\(newest)): it is "
                + "from another store, or this one was restored from an older backup; read everything again (since 0, or List) "
                + "and follow on from the cursor that gives")
        }
        let filterSpaces = spaces
        do {
            try await sink.send(["cursor": .int(cursor)])
            var iterator = wakeups.makeAsyncIterator()
            while !Task.isCancelled {
                let from = cursor
                // Recent changes come from the shared feed; a watcher further behind reads the store.
                let shared = try now { () throws(FerryError) in
                    try feed.page(after: from, limit: 500, spaces: filterSpaces, entities: entities)
                }
                if let shared {
                    for item in shared.items {
                        try await sink.send(item.reply)
                        cursor = item.seq
                    }
                    cursor = max(cursor, shared.through)
                    if shared.items.count == 500 { continue }
                    // Caught up: changes are pushed from here on, until it falls behind.
                    switch await feed.live(sink: sink, after: cursor, spaces: filterSpaces, entities: entities) {
                    case .fellBehind(let at):
                        cursor = at
                        continue
                    case .gone(let at):
                        cursor = at
                        return ["cursor": .int(cursor)]
                    case .stopping(let at):
                        throw Self.stopping(at: at)
                    }
                } else {
                    let page = try await run { () throws(FerryError) in
                        try store.changes(since: from, spaces: filterSpaces, entities: entities, limit: 500)
                    }
                    for record in page.records {
                        try await sink.send(Wire.change(record))
                        cursor = record.seq
                    }
                    cursor = page.through
                    if page.through > from { continue }   // there may be more: read again
                }
                guard await iterator.next() != nil else { break }
            }
            if feed.isStopping { throw Self.stopping(at: cursor) }
        } catch VarlinkSinkError.peerTooSlow {
            logger.notice("watcher too slow; told it to resume from cursor \(cursor)")
            throw VarlinkError(StoreInterface.name + ".ResumeFromCursor", parameters: [
                "cursor": .int(cursor),
                "message": .string("this watcher fell too far behind: call Watch again with since=\(cursor)"),
            ])
        } catch let error as VarlinkError {
            throw error
        } catch {
            // The peer went away or the call was cancelled: nothing to answer.
        }
        return ["cursor": .int(cursor)]
    }

    /// What a watcher is told when ferryd stops: where to resume.
    static func stopping(at cursor: Int64) -> VarlinkError {
        VarlinkError(StoreInterface.name + ".ResumeFromCursor", parameters: [
            "cursor": .int(cursor),
            "message": .string("ferryd is stopping: call Watch again with since=\(cursor) once it is back"),
        ])
    }

    // MARK: Attachments

    func putAttachment(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let expected = p["sha256"]?.stringValue
        if let expected, !Names.isSHA256Hex(expected) {
            throw ErrorMapping.invalidArgument("sha256", "sha256 is 64 lowercase hex digits")
        }
        let info: Store.AttachmentInfo
        switch (p["data"]?.stringValue, p["path"]?.stringValue) {
        case (let data?, nil):
            guard data.utf8.count <= (StoreAPI.maxInlineAttachment / 3 + 1) * 4 else {
                throw ErrorMapping.invalidArgument("data", "data is base64 of at most \(StoreAPI.maxInlineAttachment) bytes; pass a path for larger files")
            }
            guard let bytes = Data(base64Encoded: data) else {
                throw ErrorMapping.invalidArgument("data", "data is not valid base64 (standard alphabet, with padding)")
            }
            // The text's length bounds the bytes only to a multiple of 3: this is the exact cap.
            guard bytes.count <= StoreAPI.maxInlineAttachment else {
                throw ErrorMapping.invalidArgument("data", "data is base64 of at most \(StoreAPI.maxInlineAttachment) bytes; pass a path for larger files")
            }
            let array = [UInt8](bytes)
            info = try await run { () throws(FerryError) in try store.putAttachment(array, expectedSHA256: expected) }
        case (nil, let path?):
            guard path.hasPrefix("/") else { throw ErrorMapping.invalidArgument("path", "path must be absolute") }
            // The caller's file: what is wrong with it is the caller's to fix, not a storage failure.
            var st = stat()
            guard stat(path, &st) == 0 else {
                throw ErrorMapping.invalidArgument("path", "cannot read \(path): \(String(cString: strerror(errno))); pass an existing file ferryd may read")
            }
            guard st.st_mode & S_IFMT == S_IFREG else {
                throw ErrorMapping.invalidArgument("path", "\(path) is not a regular file; pass a file")
            }
            let limit = store.configuration.maxAttachmentBytes
            if Int(st.st_size) > limit { throw ErrorMapping.varlink(.attachmentTooLarge(size: Int(st.st_size), limit: limit)) }
            guard access(path, R_OK) == 0 else {
                throw ErrorMapping.invalidArgument("path", "ferryd cannot read \(path): \(String(cString: strerror(errno))); "
                    + "make it readable by ferryd's user, or send the bytes as data")
            }
            info = try await run { () throws(FerryError) in try store.putAttachment(fromFile: path, expectedSHA256: expected) }
        default:
            throw ErrorMapping.invalidArgument("data", "pass exactly one of data (base64) or path")
        }
        return ["sha256": .string(info.sha256), "size": .int(Int64(info.size))]
    }

    func getAttachment(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let sha = p["sha256"]?.stringValue ?? ""
        guard Names.isSHA256Hex(sha) else { throw ErrorMapping.invalidArgument("sha256", "sha256 is 64 lowercase hex digits") }
        let maxInline = Int(p["maxInline"]?.intValue ?? 1 << 20)
        guard (0...StoreAPI.maxInlineAttachment).contains(maxInline) else {
            throw ErrorMapping.invalidArgument("maxInline", "maxInline is 0 to \(StoreAPI.maxInlineAttachment)")
        }
        guard let path = store.attachmentPath(sha) else {
            // Referenced here and not arrived (or set aside just now), or not known at all.
            let known = try? store.attachment(sha)
            let awaited = (known ?? nil).map { $0.references > 0 } ?? false
            throw ErrorMapping.varlink(awaited ? .attachmentMissing(sha256: sha) : .attachmentUnknown(sha256: sha))
        }
        // Read-only before its path goes out (a store written before files were made 0400).
        _ = chmod(path, 0o400)
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        var reply: [String: JSONValue] = ["sha256": .string(sha), "size": .int(Int64(size))]
        if size <= maxInline {
            let bytes = try await run { () throws(FerryError) in try store.readAttachment(sha, maxBytes: maxInline) }
            reply["data"] = .string(Data(bytes).base64EncodedString())
        } else {
            reply["path"] = .string(path)
        }
        return reply
    }

    // MARK: Conflicts

    func conflicts(_ p: [String: JSONValue]) throws(VarlinkError) -> VarlinkReplyParameters {
        let space = p.space, entity = p["entity"]?.stringValue ?? "", id = p["id"]?.stringValue ?? ""
        let spaceName = space
        let losers = try now { () throws(FerryError) in try store.conflicts(space: space, entity: entity, id: id) }
        // Conflicts has no paging: the newest versions that fit in one message (all of them at
        // the default ConflictHistory of 10 and payloads of at most 1 MiB). Payloads as stored.
        var bytes = Array(#"{"versions":["#.utf8)
        var first = true
        for loser in losers {
            var version = Array(#"{"lostAt":"#.utf8)
            JSONWriter.appendInteger(loser.lostAt, to: &version)
            JSONWriter.appendRaw(#","origin":"#, to: &version)
            JSONWriter.appendString(loser.origin.description, to: &version)
            JSONWriter.appendRaw(#","record":"#, to: &version)
            let record = Record(space: spaceName, version: loser.version, seq: 0)
            Wire.append(record, payloadText: record.payload, to: &version)
            JSONWriter.appendRaw(#","winner":""#, to: &version)
            loser.winner.appendText(to: &version)
            JSONWriter.appendRaw(#""}"#, to: &version)
            if bytes.count + version.count + 3 > Self.maxReplyBytes { break }
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            bytes += version
        }
        JSONWriter.appendRaw("]}", to: &bytes)
        return .json(bytes)
    }

    /// Runs on the event loop, as the other writes do (one small transaction), so that its
    /// reply can carry the payload as stored.
    func restoreConflict(_ p: [String: JSONValue]) throws(VarlinkError) -> VarlinkReplyParameters {
        let space = p.space, entity = p["entity"]?.stringValue ?? "", id = p["id"]?.stringValue ?? ""
        let hlcText = p["hlc"]?.stringValue ?? ""
        let record = try now { () throws(FerryError) in
            let stamp = try Stamp(parsing: hlcText)
            return try store.restoreConflict(space: space, entity: entity, id: id, stamp: stamp)
        }
        var bytes = Array(#"{"record":"#.utf8)
        Wire.append(record, payloadText: record.payload, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
        return .json(bytes)
    }

    // MARK: Helpers

    /// Runs store work right here (on the event loop), mapping errors to the wire.
    private func now<T>(_ body: () throws(FerryError) -> T) throws(VarlinkError) -> T {
        do {
            return try body()
        } catch {
            if case .storage = error { logger.error(error.description) }
            throw ErrorMapping.varlink(error)
        }
    }

    private func run<T: Sendable>(_ body: @escaping @Sendable () throws(FerryError) -> T) async throws(VarlinkError) -> T {
        do {
            return try await Blocking.run(body)
        } catch {
            if case .storage = error { logger.error(error.description) }
            throw ErrorMapping.varlink(error)
        }
    }
}

/// Store values in their wire form.
enum Wire {
    /// Appends a record's wire form as JSON, keys in canonical (sorted) order. `payloadText` is
    /// the stored payload, valid JSON text by the store's rules, written as it is; nil leaves
    /// the payload out.
    static func append(_ r: Record, payloadText: String?, to out: inout [UInt8]) {
        JSONWriter.appendRaw(#"{"attachments":["#, to: &out)
        for (i, a) in r.attachments.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONWriter.appendString(a, to: &out)
        }
        JSONWriter.appendRaw(r.deleted ? #"],"deleted":true,"entity":"# : #"],"deleted":false,"entity":"#, to: &out)
        JSONWriter.appendString(r.entity, to: &out)
        JSONWriter.appendRaw(#","hlc":""#, to: &out)
        r.hlc.appendText(to: &out)
        JSONWriter.appendRaw(#"","id":"#, to: &out)
        JSONWriter.appendString(r.id, to: &out)
        if let payloadText, !r.deleted {
            JSONWriter.appendRaw(#","payload":"#, to: &out)
            out.append(contentsOf: payloadText.utf8)
        }
        JSONWriter.appendRaw(#","seq":"#, to: &out)
        JSONWriter.appendInteger(r.seq, to: &out)
        JSONWriter.appendRaw(#","space":"#, to: &out)
        JSONWriter.appendString(r.space, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// A change as `Watch` sends it, `{"cursor":seq,"record":{...}}`, the payload as stored.
    static func change(_ record: Record) -> VarlinkEncodedReply {
        VarlinkEncodedReply(capacity: 200 + (record.payload?.utf8.count ?? 0)) { bytes in
            bytes += #"{"cursor":"#.utf8
            JSONWriter.appendInteger(record.seq, to: &bytes)
            bytes += #","record":"#.utf8
            append(record, payloadText: record.payload, to: &bytes)
            bytes.append(UInt8(ascii: "}"))
        }
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// The `space` parameter, or the private space.
    var space: String { self["space"]?.stringValue ?? Store.privateSpace }

    func stringArray(_ key: String) -> [String] {
        self[key]?.arrayValue?.compactMap(\.stringValue) ?? []
    }
}
