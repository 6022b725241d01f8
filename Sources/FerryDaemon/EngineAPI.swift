import FerryAPI
import FerryJSON
import FerryModel
import FerryStore
import FerryVarlink
import Foundation

/// The handlers of `io.ferry.Engine`.
struct EngineAPI: Sendable {
    let store: Store
    let engine: EngineLoop
    let startedAt: Int64

    var methods: [String: VarlinkMethod] {
        [
            "Status": VarlinkMethod { _, _ throws(VarlinkError) in try await status() },
            "Outbox": VarlinkMethod { call, _ throws(VarlinkError) in try await outbox(call.parameters) },
            "SyncNow": VarlinkMethod { call, _ throws(VarlinkError) in try await syncNow(call.parameters) },
            "Spaces": VarlinkMethod { _, _ throws(VarlinkError) in ["spaces": .array(store.spaces().map(Self.space))] },
            "CreateSpace": VarlinkMethod { call, _ throws(VarlinkError) in try await createSpace(call.parameters) },
        ]
    }

    static func space(_ s: SpaceInfo) -> JSONValue {
        var o: [String: JSONValue] = ["name": .string(s.name), "kind": .string(s.kind.rawValue), "createdAt": .int(s.createdAt)]
        if let owner = s.ownerID { o["owner"] = .string(owner) }
        return .object(o)
    }

    func status() async throws(VarlinkError) -> [String: JSONValue] {
        let store = self.store
        let (stats, transports) = try await run { () throws(FerryError) in
            let stats = try store.stats()
            var transports: [JSONValue] = []
            for space in store.spaces() {
                for t in try store.transports(space: space.name) {
                    var o: [String: JSONValue] = ["space": .string(space.name), "name": .string(t.name), "kind": .string(t.kind),
                                                  "pending": .int(Int64(try store.pending(space: space.name, transport: t.name, limit: 100_000).count))]
                    if let v = try store.progress(space: space.name, key: "push:" + t.name) { o["push"] = .string(v) }
                    if let v = try store.progress(space: space.name, key: "cursor:" + t.name) { o["cursor"] = .string(v) }
                    transports.append(.object(o))
                }
            }
            return (stats, transports)
        }
        let health = engine.health
        var reply: [String: JSONValue] = [
            "node": .string(store.nodeID.description), "version": .string(FerryVersion.string), "state": .string(health.state),
            "records": .int(Int64(stats.records)), "tombstones": .int(Int64(stats.tombstones)),
            "outbox": .int(Int64(stats.outbox)), "outboxErrors": .int(Int64(stats.outboxErrors)), "lastSeq": .int(stats.lastSeq),
            "attachments": .int(Int64(stats.attachments)), "attachmentBytes": .int(stats.attachmentBytes),
            "spaces": .array(store.spaces().map(Self.space)), "transports": .array(transports), "startedAt": .int(startedAt),
        ]
        if let e = health.lastError { reply["lastError"] = .string(e) }
        if let t = health.lastSuccessAt { reply["lastSuccessAt"] = .int(t) }
        return reply
    }

    func outbox(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let space = p["space"]?.stringValue
        let errorsOnly = p["errorsOnly"]?.boolValue ?? false
        let limit = Int(p["limit"]?.intValue ?? 1000)
        guard (1...100_000).contains(limit) else {
            throw ErrorMapping.invalidArgument("limit", "limit is 1 to 100000", interface: EngineInterface.name)
        }
        let store = self.store
        let entries = try await run { () throws(FerryError) in try store.outbox(space: space, limit: limit) }
        var out: [JSONValue] = []
        for e in entries where !errorsOnly || e.deliveries.contains(where: { $0.error != nil }) {
            let deliveries: [JSONValue] = e.deliveries.map { d in
                var o: [String: JSONValue] = ["transport": .string(d.transport)]
                if let a = d.acknowledged { o["acknowledged"] = .string(a.text) }
                if let err = d.error { o["error"] = .string(err) }
                if let s = d.errorStamp { o["errorHlc"] = .string(s.text) }
                return .object(o)
            }
            out.append(.object([
                "space": .string(e.space), "entity": .string(e.entity), "id": .string(e.id), "hlc": .string(e.hlc.text),
                "seq": .int(e.seq), "queuedAt": .int(e.queuedAt), "deliveries": .array(deliveries),
            ]))
        }
        return ["entries": .array(out)]
    }

    func syncNow(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        if let space = p["space"]?.stringValue, !store.spaces().contains(where: { $0.name == space }) {
            throw ErrorMapping.varlink(.spaceNotFound(String(space.prefix(80))), interface: EngineInterface.name)
        }
        engine.wake()
        return [:]
    }

    func createSpace(_ p: [String: JSONValue]) async throws(VarlinkError) -> [String: JSONValue] {
        let name = p["name"]?.stringValue ?? ""
        let kindName = p["kind"]?.stringValue ?? "shared"
        guard let kind = SpaceInfo.Kind(rawValue: kindName) else {
            throw ErrorMapping.invalidArgument("kind", "kind is \"private\" or \"shared\"", interface: EngineInterface.name)
        }
        let store = self.store
        let info = try await run { () throws(FerryError) in try store.createSpace(name: name, kind: kind) }
        return ["space": Self.space(info)]
    }

    private func run<T: Sendable>(_ body: @escaping @Sendable () throws(FerryError) -> T) async throws(VarlinkError) -> T {
        do { return try await Blocking.run(body) } catch { throw ErrorMapping.varlink(error, interface: EngineInterface.name) }
    }
}
