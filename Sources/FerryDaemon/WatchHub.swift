import Foundation
import Synchronization

/// Tells watchers that the change log grew. Watchers read the changes from the store at their
/// own pace, so a slow watcher costs no memory here: each holds at most one pending wake-up.
final class WatchHub: Sendable {
    private struct State {
        var last: Int64
        var waiters: [UInt64: AsyncStream<Int64>.Continuation] = [:]
        var nextID: UInt64 = 0
        var stopped = false
    }
    private let state: Mutex<State>

    init(lastSeq: Int64) {
        state = Mutex(State(last: lastSeq))
    }

    /// The greatest committed sequence number announced so far.
    var lastSeq: Int64 { state.withLock { $0.last } }

    /// Called by the store after each commit that added changes.
    func committed(_ seq: Int64) {
        let waiters = state.withLock { s -> [AsyncStream<Int64>.Continuation] in
            if seq > s.last { s.last = seq }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.yield(seq) }
    }

    /// Ends every stream of wake-ups (ferryd is stopping); streams asked for later end at once.
    func stop() {
        let waiters = state.withLock { s -> [AsyncStream<Int64>.Continuation] in
            s.stopped = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.finish() }
    }

    /// A stream of wake-ups (the newest sequence number), ending when the caller stops
    /// iterating or ferryd stops. Only the newest pending value is kept.
    func subscribe() -> AsyncStream<Int64> {
        let (stream, continuation) = AsyncStream<Int64>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { s -> UInt64? in
            if s.stopped { return nil }
            s.nextID += 1
            s.waiters[s.nextID] = continuation
            return s.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.waiters.removeValue(forKey: id) }
        }
        return stream
    }
}
