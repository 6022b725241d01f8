/// The part of a server connection's state that handler tasks need: how many reply
/// bytes are queued but not yet written, and whether the peer is gone or too slow.
///
/// The event loop writes and reports progress (`didWrite`, `markClosed`); sinks reserve
/// space (`reserve`) from handler tasks. The lock inside `Locked` is the single owner.
final class ConnectionOutputState: Sendable {
    /// The cap on queued bytes; one message may always go out when nothing is queued.
    let limit: Int
    /// The server-wide cap this connection's queue also counts against: past it, the queue
    /// gets no room beyond its fair share.
    let budget: BufferBudget

    private struct Waiter {
        var id: UInt64
        var bytes: Int
        var continuation: CheckedContinuation<Result<Void, VarlinkSinkError>, Never>
    }

    private struct State {
        var queued = 0
        var closed = false
        var tooSlow = false
        var waiter: Waiter?
        var nextWaiterID: UInt64 = 0
    }

    private let state = Locked(State())

    init(limit: Int, budget: BufferBudget = .unlimited) {
        self.limit = limit
        self.budget = budget
    }

    var isClosed: Bool { state.withLock { $0.closed } }
    var isTooSlow: Bool { state.withLock { $0.tooSlow } }
    var queuedBytes: Int { state.withLock { $0.queued } }

    /// Reserves room for `bytes` of streamed reply, waiting up to `grace` for the peer to
    /// read. On success the bytes count as queued and the caller must deliver them.
    func reserve(_ bytes: Int, grace: Duration) async -> Result<Void, VarlinkSinkError> {
        enum Immediate { case done(Result<Void, VarlinkSinkError>), wait }
        let immediate: Immediate = state.withLock { state in
            if state.closed { return .done(.failure(.peerGone)) }
            if state.tooSlow { return .done(.failure(.peerTooSlow(limit: limit))) }
            if state.waiter == nil && fits(bytes, queued: state.queued) {
                take(bytes, &state)
                return .done(.success(()))
            }
            return .wait
        }
        if case let .done(result) = immediate { return result }

        let id = state.withLock { state -> UInt64 in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        let timer = Task { [self] in
            try? await Task.sleep(for: grace)
            if !Task.isCancelled { expire(id) }
        }
        let result = await withCheckedContinuation { continuation in
            let early: Result<Void, VarlinkSinkError>? = state.withLock { state in
                if state.closed { return .failure(.peerGone) }
                if state.tooSlow || state.waiter != nil { return .failure(.peerTooSlow(limit: limit)) }
                if fits(bytes, queued: state.queued) {
                    take(bytes, &state)
                    return .success(())
                }
                state.waiter = Waiter(id: id, bytes: bytes, continuation: continuation)
                return nil
            }
            if let early { continuation.resume(returning: early) }
        }
        timer.cancel()
        return result
    }

    /// Counts bytes queued without asking (a call's final reply, an error): one message
    /// per call, so the buffer stays bounded by the limit plus one message.
    /// Reserves room without waiting: nil when it fits (and is now reserved), or why not.
    func tryReserve(_ bytes: Int) -> VarlinkSinkError? {
        state.withLock { state in
            if state.closed { return .peerGone }
            if state.tooSlow { return .peerTooSlow(limit: limit) }
            guard state.waiter == nil, fits(bytes, queued: state.queued) else {
                return .peerTooSlow(limit: limit)
            }
            take(bytes, &state)
            return nil
        }
    }

    func addUnconditionally(_ bytes: Int) {
        state.withLock { state in
            if !state.closed { take(bytes, &state) }
        }
    }

    /// Called by the event loop after writing `bytes`; wakes a waiting sink if its
    /// reply now fits.
    func didWrite(_ bytes: Int) {
        let resumed: CheckedContinuation<Result<Void, VarlinkSinkError>, Never>? = state.withLock { state in
            guard !state.closed else { return nil }
            take(-bytes, &state)
            guard let waiter = state.waiter, fits(waiter.bytes, queued: state.queued) else {
                return nil
            }
            take(waiter.bytes, &state)
            state.waiter = nil
            return waiter.continuation
        }
        resumed?.resume(returning: .success(()))
    }

    /// The connection is closed: fail the waiting sink and all later reservations.
    func markClosed() {
        let resumed = state.withLock { state in
            state.closed = true
            take(-state.queued, &state)   // nothing queued will be written now
            let waiter = state.waiter
            state.waiter = nil
            return waiter?.continuation
        }
        resumed?.resume(returning: .failure(.peerGone))
    }

    private func expire(_ id: UInt64) {
        let resumed = state.withLock { state -> CheckedContinuation<Result<Void, VarlinkSinkError>, Never>? in
            guard let waiter = state.waiter, waiter.id == id else { return nil }
            state.waiter = nil
            state.tooSlow = true
            return waiter.continuation
        }
        resumed?.resume(returning: .failure(.peerTooSlow(limit: limit)))
    }

    private func fits(_ bytes: Int, queued: Int) -> Bool {
        queued == 0 || (queued + bytes <= limit && budget.allows(own: queued, more: bytes))
    }

    /// Counts `bytes` more queued (negative: written), here and in the server's budget.
    private func take(_ bytes: Int, _ state: inout State) {
        state.queued += bytes
        budget.add(bytes)
    }
}
