import FerrySync
import Foundation
import Glibc

/// Parks long-poll pulls until their owner gets a push or their wait ends, without a thread per
/// waiter: a waiter is a `resume` closure (the server glue's `MHD_resume_connection` for a
/// suspended connection) plus a deadline, and one timer thread serves every deadline.
///
/// A waiter registers with the owner's generation read before it queried storage; a push bumps
/// the generation after its commit. A waiter whose generation is stale is refused at once, so a
/// push between the query and the registration is never missed.
///
/// `@unchecked Sendable`: all state is guarded by `condition`, which the timer thread waits on.
public final class LongPollHub: @unchecked Sendable {
    private struct Waiter {
        var owner: OwnerID
        var deadline: ContinuousClock.Instant
        /// The waiting client's socket (-1: none), looked at by `resumeDisconnected`.
        var fd: Int32
        var resume: @Sendable () -> Void
    }

    private let condition = NSCondition()
    private var generations: [OwnerID: UInt64] = [:]
    private var waiters: [UInt64: Waiter] = [:]
    private var byOwner: [OwnerID: Set<UInt64>] = [:]
    private var nextID: UInt64 = 0
    /// Added to every owner's generation: `wakeAll` moves them all at once.
    private var epoch: UInt64 = 0
    private var state: State = .idle

    private enum State { case idle, running, stopped }

    public init() {}

    /// Starts the timer thread (once).
    public func start() {
        condition.lock()
        defer { condition.unlock() }
        guard state == .idle else { return }
        state = .running
        let thread = Thread { [self] in timerLoop() }
        thread.name = "ferry-relay-longpoll"
        thread.start()
    }

    /// The owner's generation: read it before querying storage, pass it to `wait`.
    public func generation(_ owner: OwnerID) -> UInt64 {
        condition.lock(); defer { condition.unlock() }
        return generations[owner, default: 0] &+ epoch
    }

    /// Parks a waiter until a push to `owner` or `deadline`, then calls `resume` once (from the
    /// pushing thread or the timer thread).
    /// - Returns: false, without keeping `resume`, when the owner's generation moved past
    ///   `generation` (or the hub stopped): the caller queries again instead of waiting.
    public func wait(owner: OwnerID, generation: UInt64, deadline: ContinuousClock.Instant, fd: Int32 = -1,
                     resume: @escaping @Sendable () -> Void) -> Bool {
        condition.lock(); defer { condition.unlock() }
        guard state != .stopped, generations[owner, default: 0] &+ epoch == generation else { return false }
        nextID += 1
        waiters[nextID] = Waiter(owner: owner, deadline: deadline, fd: fd, resume: resume)
        byOwner[owner, default: []].insert(nextID)
        condition.broadcast()
        return true
    }

    /// Records a push to `owner` (after its commit) and wakes its waiters.
    public func notify(_ owner: OwnerID) {
        condition.lock()
        generations[owner, default: 0] &+= 1
        let ids = byOwner.removeValue(forKey: owner) ?? []
        let woken = ids.compactMap { waiters.removeValue(forKey: $0)?.resume }
        condition.unlock()
        for resume in woken { resume() }
    }

    /// Wakes every waiter, moving every owner's generation (a relay that may have missed pushes
    /// made elsewhere, such as after its PostgreSQL listener reconnected).
    public func wakeAll() {
        condition.lock()
        epoch &+= 1
        let woken = waiters.values.map(\.resume)
        waiters.removeAll()
        byOwner.removeAll()
        condition.unlock()
        for resume in woken { resume() }
    }

    /// Resumes the waiters whose client closed its end (or whose socket failed): a parked
    /// connection is not watched by the server, so without this it would hold its place (and
    /// count against MaxConnections) until its deadline. Returns how many.
    @discardableResult
    public func resumeDisconnected() -> Int {
        condition.lock()
        let watched = waiters.compactMap { id, w in w.fd >= 0 ? (id, w.fd) : nil }
        condition.unlock()
        guard !watched.isEmpty else { return 0 }
        var polls = watched.map { pollfd(fd: $0.1, events: Self.pollRDHup, revents: 0) }
        guard poll(&polls, nfds_t(polls.count), 0) > 0 else { return 0 }
        let gone = Set(zip(watched, polls).compactMap { entry, p in
            p.revents & (Self.pollRDHup | Int16(POLLHUP | POLLERR | POLLNVAL)) != 0 ? entry.0 : nil
        })
        condition.lock()
        var woken: [@Sendable () -> Void] = []
        for id in gone {
            guard let w = waiters.removeValue(forKey: id) else { continue }
            byOwner[w.owner]?.remove(id)
            if byOwner[w.owner]?.isEmpty == true { byOwner.removeValue(forKey: w.owner) }
            woken.append(w.resume)
        }
        condition.unlock()
        for resume in woken { resume() }
        return woken.count
    }

    /// Linux's POLLRDHUP (the peer closed its end), which Glibc's module leaves out (_GNU_SOURCE).
    private static let pollRDHup: Int16 = 0x2000

    /// True once `shutdown` ran: nothing waits any more.
    public var isStopped: Bool {
        condition.lock(); defer { condition.unlock() }
        return state == .stopped
    }

    /// How many waiters are parked.
    public var waitingCount: Int {
        condition.lock(); defer { condition.unlock() }
        return waiters.count
    }

    /// Wakes every waiter and refuses new ones (shutdown).
    public func shutdown() {
        condition.lock()
        state = .stopped
        let woken = waiters.values.map(\.resume)
        waiters.removeAll()
        byOwner.removeAll()
        condition.broadcast()
        condition.unlock()
        for resume in woken { resume() }
    }

    private func timerLoop() {
        condition.lock()
        while state == .running {
            let now = ContinuousClock.now
            var expired: [@Sendable () -> Void] = []
            var earliest: ContinuousClock.Instant?
            for (id, w) in waiters {
                if w.deadline <= now {
                    expired.append(w.resume)
                    waiters.removeValue(forKey: id)
                    byOwner[w.owner]?.remove(id)
                    if byOwner[w.owner]?.isEmpty == true { byOwner.removeValue(forKey: w.owner) }
                } else if earliest.map({ w.deadline < $0 }) ?? true {
                    earliest = w.deadline
                }
            }
            if !expired.isEmpty {
                condition.unlock()
                for resume in expired { resume() }
                condition.lock()
                continue
            }
            if let earliest {
                let seconds = Double((earliest - now).components.seconds) + Double((earliest - now).components.attoseconds) / 1e18
                _ = condition.wait(until: Date().addingTimeInterval(seconds))
            } else {
                condition.wait()
            }
        }
        condition.unlock()
    }
}
