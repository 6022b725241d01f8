import FerryModel
import Foundation

/// The spaces and transports of a store, cached in memory for both connections.
///
/// The writer is the only one that changes it, after the change committed; readers take
/// snapshots. `@unchecked Sendable`: all state is behind `lock`.
final class Catalog: @unchecked Sendable {
    struct Space {
        var sid: Int64
        var info: SpaceInfo
        var transports: [TransportInfo]
    }

    private let lock = NSLock()
    private var byName: [String: Space] = [:]
    private var nameBySID: [Int64: String] = [:]

    func load(_ spaces: [Space]) {
        lock.lock(); defer { lock.unlock() }
        byName = Dictionary(uniqueKeysWithValues: spaces.map { ($0.info.name, $0) })
        nameBySID = Dictionary(uniqueKeysWithValues: spaces.map { ($0.sid, $0.info.name) })
    }

    func space(named name: String) -> Space? {
        lock.lock(); defer { lock.unlock() }
        return byName[name]
    }

    /// The space's id, or `spaceNotFound`.
    func sid(_ name: String) throws(FerryError) -> Int64 {
        guard let space = space(named: name) else { throw .spaceNotFound(name.clipped(to: 80)) }
        return space.sid
    }

    func name(of sid: Int64) -> String {
        lock.lock(); defer { lock.unlock() }
        return nameBySID[sid] ?? "?"
    }

    func all() -> [SpaceInfo] {
        lock.lock(); defer { lock.unlock() }
        return byName.values.map(\.info).sorted { $0.name < $1.name }
    }

    func transports(of sid: Int64) -> [TransportInfo] {
        lock.lock(); defer { lock.unlock() }
        guard let name = nameBySID[sid] else { return [] }
        return byName[name]?.transports ?? []
    }

    func update(_ name: String, _ change: (inout Space) -> Void) {
        lock.lock(); defer { lock.unlock() }
        guard var space = byName[name] else { return }
        change(&space)
        byName[name] = space
    }

    func insert(_ space: Space) {
        lock.lock(); defer { lock.unlock() }
        byName[space.info.name] = space
        nameBySID[space.sid] = space.info.name
    }
}
