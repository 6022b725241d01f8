import FerryJSON
import FerryModel
import FerryStore
import FerryVarlink
import Synchronization

/// The recent changes, read from the store once and shared by every watcher, each with its
/// wire form built once. A hundred watchers cost one store read and one encoding per change,
/// not a hundred. A watcher further behind than the feed reaches reads the store itself.
final class ChangeFeed: Sendable {
    struct Item: Sendable {
        let seq: Int64
        let space: String
        let entity: String
        let wire: JSONValue
    }

    private struct State {
        /// Every change with `start < seq <= through`, at the version it had when read.
        var items: [Item] = []
        var start: Int64
        var through: Int64
    }

    private let state: Mutex<State>
    private let store: Store
    private let hub: WatchHub
    /// The most changes kept.
    static let capacity = 8192

    init(store: Store, hub: WatchHub) {
        self.store = store
        self.hub = hub
        let last = hub.lastSeq
        state = Mutex(State(start: last, through: last))
    }

    /// The changes after `cursor` (at most `limit`) that match the filters, and the position
    /// read through; nil when `cursor` is older than the feed holds.
    func page(after cursor: Int64, limit: Int, spaces: Set<String>?, entities: Set<String>?) throws(FerryError) -> (items: [Item], through: Int64)? {
        let result: Result<(items: [Item], through: Int64)?, FerryError> = state.withLock { s in
            if cursor < s.start { return .success(nil) }
            do throws(FerryError) {
                try catchUp(&s)
            } catch {
                return .failure(error)
            }
            // Binary search for the first item after the cursor.
            var lo = 0, hi = s.items.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if s.items[mid].seq <= cursor { lo = mid + 1 } else { hi = mid }
            }
            var out: [Item] = []
            var through = s.through
            var i = lo
            while i < s.items.count {
                let item = s.items[i]
                if out.count == limit { through = s.items[i - 1].seq; break }
                if (spaces?.contains(item.space) ?? true) && (entities?.contains(item.entity) ?? true) { out.append(item) }
                i += 1
            }
            return .success((out, max(through, cursor)))
        }
        return try result.get()
    }

    /// Reads what the store committed since the feed's last read.
    private func catchUp(_ s: inout State) throws(FerryError) {
        while s.through < hub.lastSeq {
            let page = try store.changes(since: s.through, limit: 1000)
            if page.through == s.through { break }
            for record in page.records {
                guard let wire = try? Wire.record(record) else { continue }
                s.items.append(Item(seq: record.seq, space: record.space, entity: record.entity, wire: wire))
            }
            s.through = page.through
        }
        if s.items.count > Self.capacity {
            let drop = s.items.count - Self.capacity
            s.start = s.items[drop - 1].seq
            s.items.removeFirst(drop)
        }
    }
}
