import Foundation
import Glibc

/// One thread that waits on epoll and runs, in order, the readiness handlers of the
/// descriptors registered with it and the jobs other threads submit with `execute`.
///
/// All connection state of a server (or of the clients sharing a loop) is touched only
/// on this thread, so none of it needs locks.
// @unchecked Sendable: `handlers`, `nextToken` and `running` are touched only on the loop
// thread (register/modify/deregister assert it); other threads reach the loop only
// through `execute`, whose job queue is a `Locked` value, and the eventfd.
final class EventLoop: @unchecked Sendable {
    private let epoll: Epoll
    private let wakeFD: Int32
    private let jobs = Locked<[@Sendable () -> Void]>([])
    private var handlers: [UInt64: EventLoopHandler] = [:]
    private var nextToken: UInt64 = 1
    private var running = true
    /// Work to run once the current turn's events and jobs are handled (loop thread only).
    private var endOfTurn: [() -> Void] = []
    private let threadID = Locked<pthread_t?>(nil)
    private let exited = Locked<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    private static let wakeToken: UInt64 = 0
    /// The longest the loop polls for events before it sleeps, in nanoseconds (0: never).
    private let maxPollNanos: UInt64
    /// How long it polls now, in nanoseconds (loop thread only; see `nextEvents`).
    private(set) var pollNanos: UInt64 = 0

    /// Creates the epoll instance and the wake-up eventfd and starts the loop thread.
    ///
    /// - Parameter busyPoll: the longest the loop polls for the next event before it sleeps in
    ///   `epoll_wait`. Waking a sleeping thread costs tens of microseconds where an idle CPU
    ///   halts (virtual machines especially), so while events come within this long of each
    ///   other (a client making one call after another), polling answers them sooner. How
    ///   long it polls adapts as Linux's halt polling does: it grows while events come within
    ///   `busyPoll` of each other and shrinks to nothing when they do not, so an idle or quiet
    ///   loop does not poll. While it polls, the thread yields to any other thread waiting for
    ///   its CPU. Zero turns it off.
    /// - Throws: `SystemCallError` from `epoll_create1`, `eventfd` or `epoll_ctl`.
    init(name: String, busyPoll: Duration = .zero) throws(SystemCallError) {
        let parts = busyPoll.components
        maxPollNanos = busyPoll <= .zero ? 0 : UInt64(parts.seconds) * 1_000_000_000 + UInt64(parts.attoseconds / 1_000_000_000)
        epoll = try Epoll()
        wakeFD = try Syscall.run("eventfd") {
            LinuxFunctions.eventfd(0, LinuxFunctions.eventfdCloexec | LinuxFunctions.eventfdNonblock)
        }
        do {
            try epoll.add(wakeFD, events: LinuxFunctions.epollIn, token: Self.wakeToken)
        } catch {
            Syscall.close(wakeFD)
            throw error
        }
        let thread = Thread { [self] in
            threadID.withLock { $0 = pthread_self() }
            // Named for top -H, perf and /proc (Linux keeps 15 bytes of a thread's name).
            _ = LinuxFunctions.setThreadName(pthread_self(), String(decoding: name.utf8.prefix(15), as: UTF8.self))
            run()
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    deinit {
        Syscall.close(wakeFD)
    }

    /// True when called on the loop thread.
    var inLoop: Bool {
        guard let id = threadID.withLock({ $0 }) else { return false }
        return pthread_equal(id, pthread_self()) != 0
    }

    /// Runs `job` on the loop thread, after the jobs submitted before it.
    func execute(_ job: @escaping @Sendable () -> Void) {
        let wasEmpty = jobs.withLock { queue in
            queue.append(job)
            return queue.count == 1
        }
        if wasEmpty {
            var one: UInt64 = 1
            _ = withUnsafeBytes(of: &one) { write(wakeFD, $0.baseAddress, 8) }
        }
    }

    /// Runs `job` on the loop thread after every event and job of the current turn was
    /// handled: where work collected during the turn is done at once. Loop thread only.
    func atEndOfTurn(_ job: @escaping () -> Void) {
        precondition(inLoop, "EventLoop.atEndOfTurn called off the loop thread")
        endOfTurn.append(job)
    }

    /// Starts delivering `events` on `fd` to `handler`. Loop thread only.
    /// - Returns: the token identifying the registration.
    func register(_ fd: Int32, events: UInt32, handler: EventLoopHandler) throws(SystemCallError) -> UInt64 {
        precondition(inLoop, "EventLoop.register called off the loop thread")
        let token = nextToken
        nextToken += 1
        try epoll.add(fd, events: events, token: token)
        handlers[token] = handler
        return token
    }

    /// Changes the events watched for a registration. Loop thread only.
    func modify(_ fd: Int32, token: UInt64, events: UInt32) throws(SystemCallError) {
        precondition(inLoop, "EventLoop.modify called off the loop thread")
        try epoll.modify(fd, events: events, token: token)
    }

    /// Stops watching a descriptor without forgetting its handler (epoll reports a
    /// hang-up even when no events are requested, so a hung-up socket that is still in
    /// use must leave the interest list). Loop thread only.
    func pause(_ fd: Int32, token: UInt64) throws(SystemCallError) {
        precondition(inLoop, "EventLoop.pause called off the loop thread")
        try epoll.remove(fd)
    }

    /// Forgets a registration and closes its descriptor; events still pending for it
    /// are dropped. Loop thread only.
    func deregisterAndClose(_ fd: Int32, token: UInt64) {
        precondition(inLoop, "EventLoop.deregisterAndClose called off the loop thread")
        handlers[token] = nil
        try? epoll.remove(fd)
        Syscall.close(fd)
    }

    /// Stops the loop after the jobs already submitted; returns once the thread exited.
    /// Handlers still registered are dropped (their descriptors are not closed).
    func shutdown() async {
        execute { [self] in running = false }
        await withCheckedContinuation { continuation in
            let done = exited.withLock { state -> Bool in
                if state.done { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func run() {
        while running {
            let events: [Epoll.Event]
            do {
                events = try nextEvents()
            } catch {
                // epoll_wait fails only for programming errors (EBADF, EINVAL): give up
                // the loop loudly rather than spin.
                fatalError("event loop: \(error)")
            }
            for event in events {
                if event.token == Self.wakeToken {
                    runJobs()
                } else if let handler = handlers[event.token] {
                    // A handler may deregister itself (dropping the dictionary's reference)
                    // while it runs; keep it alive until it returns.
                    withExtendedLifetime(handler) { handler.handleEvents(event.events) }
                }
            }
            while !endOfTurn.isEmpty {
                let jobs = endOfTurn
                endOfTurn.removeAll()
                for job in jobs { job() }
            }
        }
        handlers.removeAll()
        let waiters = exited.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.done = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The first poll time after none, in nanoseconds.
    private static let pollGrowStart: UInt64 = 25_000

    /// The next events: those ready now; else those that come while the loop polls for
    /// `pollNanos`; else the first to come while the thread sleeps.
    ///
    /// After a sleep, the time waited (polling and sleeping) adjusts `pollNanos`: a wait within
    /// the longest poll time doubles it (up to that), since a longer poll would have caught the
    /// event; a longer wait halves it, down to no polling. The time measured includes the
    /// thread's own wake-up, which polling saves.
    private func nextEvents() throws(SystemCallError) -> [Epoll.Event] {
        guard maxPollNanos > 0 else { return try epoll.wait(timeoutMilliseconds: -1) }
        let ready = try epoll.wait(timeoutMilliseconds: 0)
        if !ready.isEmpty { return ready }
        let start = Self.monotonicNanos()
        if pollNanos > 0 {
            let until = start + pollNanos
            repeat {
                // A thread waiting for this CPU (a client preparing its next call) runs first:
                // polling only fills time the CPU would otherwise halt in.
                sched_yield()
                let events = try epoll.wait(timeoutMilliseconds: 0)
                if !events.isEmpty { return events }
            } while Self.monotonicNanos() < until
        }
        let events = try epoll.wait(timeoutMilliseconds: -1)
        let waited = Self.monotonicNanos() - start
        if waited > maxPollNanos {
            pollNanos = pollNanos / 2 < Self.pollGrowStart ? 0 : pollNanos / 2
        } else if pollNanos < maxPollNanos {
            pollNanos = min(maxPollNanos, pollNanos == 0 ? Self.pollGrowStart : pollNanos * 2)
        }
        return events
    }

    private static func monotonicNanos() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    private func runJobs() {
        var counter: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &counter) { read(wakeFD, $0.baseAddress, 8) }
        let batch = jobs.withLock { queue -> [@Sendable () -> Void] in
            defer { queue.removeAll(keepingCapacity: true) }
            return queue
        }
        for job in batch { job() }
    }
}
