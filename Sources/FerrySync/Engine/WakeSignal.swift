import Synchronization

/// Wakes one waiting task: a signal sent while nobody waits is kept (once) for the next wait.
/// Used by the sync loops and the engine loop to sleep until local writes, SyncNow or a
/// timeout, with no wakeups in between.
public final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    public init() {}

    /// Wakes the waiter, or the next wait if none is waiting.
    public func signal() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if let w = s.waiter { s.waiter = nil; return w }
            s.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Returns when signalled, after `timeout`, or when the task is cancelled. One waiter at a
    /// time.
    public func wait(timeout: Duration) async {
        if state.withLock({ s in
            if s.pending { s.pending = false; return true }
            return false
        }) { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await Task.sleep(for: timeout)
                self.resumeWaiterOnly()
            }
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                        let resumeNow = self.state.withLock { s -> Bool in
                            if s.pending || Task.isCancelled { s.pending = false; return true }
                            s.waiter = c
                            return false
                        }
                        if resumeNow { c.resume() }
                    }
                } onCancel: {
                    self.resumeWaiterOnly()
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// Takes a signal sent while nobody waited: whether there was one (it is gone now).
    public func take() -> Bool {
        state.withLock { s in
            defer { s.pending = false }
            return s.pending
        }
    }

    /// Ends a wait without leaving a pending signal behind (timeouts and cancellation).
    private func resumeWaiterOnly() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }
}
