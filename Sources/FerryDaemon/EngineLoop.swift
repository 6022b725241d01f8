import FerryModel
import FerryStore
import FerrySync
import FerrySystemd
import Foundation
import Synchronization

/// The engine's own loop: each turn it does real engine work (reads the store's state), keeps
/// systemd's STATUS= current and, only after that work succeeded, pings the watchdog. A hung
/// store or engine therefore stops the pings and systemd restarts the daemon.
///
/// The sync engine of a later issue runs its rounds from here.
final class EngineLoop: Sendable {
    private let store: Store
    private let logger: Logger
    private let watchdogInterval: Duration?
    /// The engine's state in one word (see `EngineState`), for STATUS=.
    private let engineState: @Sendable () -> String
    private let woken = WakeSignal()
    private let statusStale = Atomic<Bool>(false)

    init(store: Store, logger: Logger, watchdogTimeout: Duration?, engineState: @escaping @Sendable () -> String = { "idle" }) {
        self.store = store
        self.logger = logger
        self.engineState = engineState
        self.watchdogInterval = watchdogTimeout.map { $0 / 2 }
    }

    /// Asks for a turn now (SyncNow, local writes).
    func wake() { woken.signal() }

    /// Sends STATUS= again at the next turn even if it did not change (after a reload, which
    /// replaced it).
    func refreshStatus() {
        statusStale.store(true, ordering: .releasing)
        wake()
    }

    /// STATUS= text: the engine's state and what waits to be sent, for example "idle, nothing
    /// pending", "backoff, 3 changes pending" or "idle, nothing pending, 2 changes in spaces
    /// with no transport"; a count past the outbox counts' limit is "more than 100,000 changes".
    static func status(state: String, outbox: OutboxCounts) -> String {
        func changes(_ n: Int) -> String {
            n > outbox.limit ? "more than \(grouped(outbox.limit)) changes" : "\(grouped(n)) change\(n == 1 ? "" : "s")"
        }
        var text = state + (outbox.pending == 0 ? ", nothing pending" : ", \(changes(outbox.pending)) pending")
        if outbox.withoutTransport > 0 { text += ", \(changes(outbox.withoutTransport)) in spaces with no transport" }
        return text
    }

    /// `n` with its digits in groups of three: 100,000.
    static func grouped(_ n: Int) -> String {
        let digits = Array(String(n.magnitude))
        var out = n < 0 ? "-" : ""
        for (i, d) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(d)
        }
        return out
    }

    /// The least time from one turn's end to the next turn.
    static let minimumTurnSpacing = Duration.milliseconds(50)

    /// How often unreferenced attachments are looked for: a quarter of the grace period
    /// (`AttachmentGraceSeconds`), between 2 s and 15 minutes. An attachment whose last
    /// reference went while it was still within its grace is then removed within that much of
    /// the grace's end (it was removed only at the next start).
    static func sweepInterval(grace seconds: Int64) -> Duration {
        .seconds(max(2, min(seconds / 4, 900)))
    }

    /// Runs until the task is cancelled.
    func run() async {
        let tick = min(watchdogInterval ?? .seconds(1), .seconds(1))
        let sweepEvery = Self.sweepInterval(grace: store.configuration.attachmentGraceSeconds)
        var lastSweep = ContinuousClock.now
        var lastStatus = ""
        var countedAt: Int64 = -1
        var lastState = ""
        var lastCount = ContinuousClock.now - .seconds(10)
        while !Task.isCancelled {
            let store = self.store
            // The turn's own work: read the store's position (cheap, and it proves the store
            // answers). Counting the outbox counts change-log rows by seq (the backlog after
            // each space's slowest cursor, and the spaces with no transport), so that is redone
            // only when something changed, and at most every 2 seconds.
            let seq = try? await Blocking.run { () throws(FerryError) in store.lastSeq }
            if let seq {
                let state = engineState()
                if seq != countedAt || state != lastState || statusStale.load(ordering: .acquiring),
                   ContinuousClock.now - lastCount >= .seconds(2) {
                    if let outbox = try? await Blocking.run({ () throws(FerryError) in try store.outboxCounts() }) {
                        countedAt = seq
                        lastState = state
                        lastCount = ContinuousClock.now
                        let status = Self.status(state: state, outbox: outbox)
                        if status != lastStatus || statusStale.exchange(false, ordering: .acquiring) {
                            SystemdNotifier.status(status)
                            lastStatus = status
                        }
                    }
                }
                if watchdogInterval != nil { SystemdNotifier.watchdog() }
                if ContinuousClock.now - lastSweep >= sweepEvery {
                    lastSweep = .now
                    do {
                        try await Blocking.run { () throws(FerryError) in try store.sweepAttachments() }
                    } catch {
                        logger.warning("could not remove unreferenced attachments (tried again in \(sweepEvery)): \(error)")
                    }
                }
            } else {
                logger.error("the engine could not read the store's state")
            }
            // Sleep for a tick, or until woken, and no less than 50 ms: a stream of writes
            // wakes it at most 20 times a second, and an idle daemon once a tick.
            let turnEnded = ContinuousClock.now
            await woken.wait(timeout: tick)
            let spacing = Self.minimumTurnSpacing - (ContinuousClock.now - turnEnded)
            if spacing > .zero, !Task.isCancelled { try? await Task.sleep(for: spacing) }
        }
    }
}
