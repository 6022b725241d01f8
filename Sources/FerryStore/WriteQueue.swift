import Foundation

/// Group commit: concurrent writers hand their work to whichever of them arrives first (the
/// leader), which runs everything queued in one transaction and wakes the others.
///
/// With one writer there is no hand-off at all: the caller runs its own work. With many, one
/// commit (one fsync) serves them all. Only the leader touches the write connection, and there is
/// at most one leader at a time, which is what makes `Writer` single-owner.
final class WriteQueue: @unchecked Sendable {
    // @unchecked: `pending` and `leading` are only touched with `lock` held; `writer` only by the
    // current leader.
    final class Job {
        let work: (Writer) throws -> Void
        var failure: (any Error)?
        /// Set (under the lock) when this job's thread must take over as leader.
        var lead = false
        let done = DispatchSemaphore(value: 0)
        init(_ work: @escaping (Writer) throws -> Void) { self.work = work }
    }

    private let lock = NSLock()
    private var pending: [Job] = []
    private var leading = false
    private let writer: Writer

    init(writer: Writer) {
        self.writer = writer
    }

    /// Runs `work` inside a write transaction, possibly together with other writers' work, and
    /// returns once that transaction committed. Throws what `work` threw (then nothing of it was
    /// written) or the commit's error (then nothing of the batch was written).
    ///
    /// A leader runs one batch and then hands leadership to the next waiting writer, so no
    /// caller is held up by a stream of later writers.
    func submit(_ work: @escaping (Writer) throws -> Void) throws {
        let job = Job(work)
        lock.lock()
        pending.append(job)
        if leading {
            lock.unlock()
            job.done.wait()
            lock.lock()
            let mustLead = job.lead
            lock.unlock()
            if !mustLead {
                if let failure = job.failure { throw failure }
                return
            }
            lock.lock()
        } else {
            leading = true
        }
        let batch = pending
        pending.removeAll(keepingCapacity: true)
        lock.unlock()
        writer.runBatch(batch)
        lock.lock()
        let next = pending.first
        if let next { next.lead = true } else { leading = false }
        lock.unlock()
        for other in batch where other !== job { other.done.signal() }
        next?.done.signal()
        if let failure = job.failure { throw failure }
    }
}
