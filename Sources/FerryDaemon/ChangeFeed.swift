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
        let key: Key
        /// The reply every watcher gets for this change, encoded once.
        let reply: VarlinkEncodedReply
    }

    /// A record: its space, and its entity and id (the record's own strings, nothing joined)
    /// compared by their bytes, as the store compares them (space names are ASCII).
    struct Key: Hashable, Sendable {
        let space: String
        let record: RecordKey

        init(space: String, entity: String, id: String) {
            self.space = space
            record = RecordKey(entity: entity, id: id)
        }

        var entity: String { record.entity }
        var id: String { record.id }
    }

    /// Why a watcher left live mode.
    enum LiveEnd: Sendable {
        /// Its connection had no room for a change: it goes back to reading at its own pace
        /// (waiting for room, and told to resume if that takes too long) from `cursor`.
        case fellBehind(cursor: Int64)
        /// The client left (or the call was cancelled).
        case gone(cursor: Int64)
        /// ferryd is stopping: the watcher is told to resume from `cursor` once it is back.
        case stopping(cursor: Int64)
    }

    /// A watcher in live mode: changes are pushed to it from the committing thread.
    private struct Live {
        var sink: VarlinkReplySink
        var spaces: Set<String>?
        var entities: Set<String>?
        var cursor: Int64
        var end: CheckedContinuation<LiveEnd, Never>
    }

    private struct State {
        /// From `head` on: every change with `start < seq <= through`, at the version it had
        /// when read. The items before `head` were dropped; they are released together once
        /// they are as many as the rest, or hold a quarter of the byte budget, so dropping
        /// moves each kept item about once, instead of the whole feed at every commit.
        var items: [Item] = []
        var head = 0
        var start: Int64
        var through: Int64
        /// The encoded size of the items from `head` on, and of those before it.
        var bytes = 0
        var droppedBytes = 0
        /// Per record: the seq of its newest item. An older item of the record is superseded: a
        /// page leaves it out, as the store's change log does. Records with no item left keep
        /// their entry until it is rebuilt (past twice `capacity` entries): an entry is only
        /// read for an item in the feed, and the newest item of a record is dropped last.
        var latest: [Key: Int64] = [:]
        var live: [UInt64: Live] = [:]
        var nextLiveID: UInt64 = 0
        var stopping = false
        /// How many changes the feed has read from the store, for tests.
        var changesRead = 0
    }

    private let state: Mutex<State>
    private let store: Store
    private let hub: WatchHub
    /// The most changes kept, and the most bytes of them: a burst of large records must not
    /// hold gigabytes (8,192 records of 1 MiB); watchers further behind read the store.
    static let capacity = 8192
    static let maxBytes = 32 << 20

    init(store: Store, hub: WatchHub) {
        self.store = store
        self.hub = hub
        let last = hub.lastSeq
        state = Mutex(State(start: last, through: last))
    }

    /// The changes after `cursor` (at most `limit`) that match the filters, and the position
    /// read through; nil when `cursor` is older than the feed holds. A record changed several
    /// times after `cursor` comes once, at its newest change (as `Store.changes` gives it).
    func page(after cursor: Int64, limit: Int, spaces: Set<String>?, entities: Set<String>?) throws(FerryError) -> (items: [Item], through: Int64)? {
        let result: Result<(items: [Item], through: Int64)?, FerryError> = state.withLock { s in
            if cursor < s.start { return .success(nil) }
            do throws(FerryError) {
                try catchUp(&s)
            } catch {
                return .failure(error)
            }
            // Reading on may have let the changes after the cursor fall out of the feed.
            if cursor < s.start { return .success(nil) }
            // Binary search for the first item after the cursor.
            var lo = s.head, hi = s.items.count
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
                if s.latest[item.key] == item.seq && (spaces?.contains(item.space) ?? true) && (entities?.contains(item.entity) ?? true) {
                    out.append(item)
                }
                i += 1
            }
            return .success((out, max(through, cursor)))
        }
        return try result.get()
    }

    /// Puts a caught-up watcher in live mode until it falls behind or leaves: from then on
    /// each change is pushed to it by the thread that committed it (`publish`), with no task
    /// to wake. Returns at once with `.fellBehind` when changes after `cursor` exist.
    func live(sink: VarlinkReplySink, after cursor: Int64, spaces: Set<String>?, entities: Set<String>?) async -> LiveEnd {
        let id = state.withLock { s -> UInt64 in
            s.nextLiveID += 1
            return s.nextLiveID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<LiveEnd, Never>) in
                let immediate: LiveEnd? = state.withLock { s in
                    if Task.isCancelled { return .gone(cursor: cursor) }
                    if s.stopping { return .stopping(cursor: cursor) }
                    do { try catchUp(&s) } catch { return .fellBehind(cursor: cursor) }
                    if s.through != cursor { return .fellBehind(cursor: cursor) }
                    s.live[id] = Live(sink: sink, spaces: spaces, entities: entities, cursor: cursor, end: continuation)
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let entry = state.withLock { $0.live.removeValue(forKey: id) }
            entry?.end.resume(returning: .gone(cursor: entry?.cursor ?? cursor))
        }
    }

    /// ferryd is stopping: every live watcher ends at once with `.stopping` (and so does one
    /// that would go live from now on), instead of holding the shutdown until its grace ends.
    func stop() {
        let ended = state.withLock { s -> [Live] in
            s.stopping = true
            defer { s.live = [:] }
            return Array(s.live.values)
        }
        for entry in ended { entry.end.resume(returning: .stopping(cursor: entry.cursor)) }
    }

    /// Whether `stop` was called.
    var isStopping: Bool { state.withLock { $0.stopping } }

    /// Pushes what was just committed to every live watcher. Called after each commit, on
    /// the committing thread (ferryd's event loop for API writes, so the changes are written
    /// to the watchers' sockets right there). The commit's own changes are taken as they are
    /// when the feed holds everything before them; otherwise the feed reads the store.
    func publish(_ commit: CommittedChanges? = nil) {
        state.withLock { s in
            guard !s.live.isEmpty else { return }
            if let commit { take(commit, into: &s) }
            do { try catchUp(&s) } catch { return }
            for (id, entry) in s.live {
                var lo = s.head, hi = s.items.count
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if s.items[mid].seq <= entry.cursor { lo = mid + 1 } else { hi = mid }
                }
                var cursor = entry.cursor
                var ended: LiveEnd?
                // Its next change fell out of the feed already (a burst larger than the feed
                // holds came in one commit): it reads the rest from the store at its own pace.
                if entry.cursor < s.start {
                    s.live.removeValue(forKey: id)
                    entry.end.resume(returning: .fellBehind(cursor: entry.cursor))
                    continue
                }
                // The watcher's changes go to its connection together; `seqs[k]` is the
                // position reached once reply k is sent (past the changes it filters out).
                var replies: [VarlinkEncodedReply] = []
                var seqs: [Int64] = []
                let everything = entry.spaces == nil && entry.entities == nil
                if everything { replies.reserveCapacity(s.items.count - lo); seqs.reserveCapacity(s.items.count - lo) }
                for i in lo..<s.items.count {
                    if everything || ((entry.spaces?.contains(s.items[i].space) ?? true) && (entry.entities?.contains(s.items[i].entity) ?? true)) {
                        replies.append(s.items[i].reply)
                        seqs.append(s.items[i].seq)
                    }
                }
                let (sent, error) = replies.isEmpty ? (0, nil) : entry.sink.sendNow(replies)
                if let error {
                    // Up to just before the first change that was not sent (changes are read
                    // after a cursor); `sent` is less than `seqs.count` whenever there is an error.
                    cursor = seqs[sent] - 1
                    if case .peerTooSlow = error { ended = .fellBehind(cursor: cursor) } else { ended = .gone(cursor: cursor) }
                } else {
                    cursor = s.through
                }
                if let ended {
                    s.live.removeValue(forKey: id)
                    entry.end.resume(returning: ended)
                } else {
                    s.live[id]?.cursor = max(cursor, s.through)
                }
            }
        }
    }

    /// How many changes the feed has read from the store since it was made.
    var changesRead: Int { state.withLock { $0.changesRead } }

    /// Reads what the store committed since the feed's last read. A backlog longer than the
    /// feed holds (writes while nobody watched: the feed reads only for watchers) is read
    /// from its last `capacity` changes on: the feed could not keep the rest, so reading them
    /// would only hold every watcher and writer for as long as a whole import takes to encode.
    private func catchUp(_ s: inout State) throws(FerryError) {
        let last = hub.lastSeq
        if last - s.through > Int64(Self.capacity) {
            let from = last - Int64(Self.capacity)
            s.items.removeAll(keepingCapacity: true)
            s.head = 0
            s.bytes = 0
            s.droppedBytes = 0
            s.latest.removeAll(keepingCapacity: true)
            s.start = from
            s.through = from
        }
        while s.through < hub.lastSeq {
            let page = try store.changes(since: s.through, limit: 1000)
            if page.through == s.through { break }
            s.changesRead += page.records.count
            for record in page.records {
                let item = Self.item(record)
                s.bytes += item.reply.size
                s.items.append(item)
                s.latest[item.key] = item.seq
            }
            s.through = page.through
            trim(&s)   // page by page, so a long backlog never sits in memory whole
        }
    }

    /// Takes the changes of `commit` into the feed when it holds everything before them (as
    /// `publish` does with live watchers); otherwise the feed reads them from the store later.
    func take(_ commit: CommittedChanges) {
        state.withLock { s in take(commit, into: &s) }
    }

    private func take(_ commit: CommittedChanges, into s: inout State) {
        if commit.after == s.through { append(commit, to: &s) }
    }

    /// Adds the changes of the commit right after `s.through`, as the store would give them:
    /// a record changed several times in the commit comes once, at its newest change.
    private func append(_ commit: CommittedChanges, to s: inout State) {
        let first = s.items.count
        var superseded: Set<Int64> = []
        for record in commit.records {
            let item = Self.item(record)
            if let older = s.latest.updateValue(item.seq, forKey: item.key), older > commit.after {
                superseded.insert(older)
            }
            s.bytes += item.reply.size
            s.items.append(item)
        }
        if !superseded.isEmpty {
            var kept = Array(s.items[s.head..<first])
            for item in s.items[first...] {
                if superseded.contains(item.seq) { s.bytes -= item.reply.size } else { kept.append(item) }
            }
            s.items = kept
            s.head = 0
            s.droppedBytes = 0
        }
        s.through = commit.through
        trim(&s)
    }

    /// A change with its reply encoded.
    private static func item(_ record: Record) -> Item {
        Item(seq: record.seq, space: record.space, entity: record.entity,
             key: Key(space: record.space, entity: record.entity, id: record.id), reply: Wire.change(record))
    }

    /// Drops the oldest changes beyond `capacity` or `maxBytes`.
    private func trim(_ s: inout State) {
        let count = s.items.count - s.head
        var drop = max(0, count - Self.capacity)
        var bytes = s.bytes
        for i in s.head..<(s.head + drop) { bytes -= s.items[i].reply.size }
        while bytes > Self.maxBytes && drop < count {
            bytes -= s.items[s.head + drop].reply.size
            drop += 1
        }
        guard drop > 0 else { return }
        s.start = s.items[s.head + drop - 1].seq
        s.head += drop
        s.droppedBytes += s.bytes - bytes
        s.bytes = bytes
        if s.head >= s.items.count - s.head || s.droppedBytes >= Self.maxBytes / 4 {
            s.items.removeFirst(s.head)
            s.head = 0
            s.droppedBytes = 0
        }
        if s.latest.count > 2 * Self.capacity {
            // Room for the entries until the next rebuild, so it never grows (a resize moved
            // every entry, about 2% of a syncing daemon's time).
            var latest: [Key: Int64] = [:]
            latest.reserveCapacity(2 * Self.capacity + 1)
            for item in s.items[s.head...] { latest[item.key] = item.seq }
            s.latest = latest
        }
    }
}
