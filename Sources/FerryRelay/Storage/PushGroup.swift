import FerrySync
import Foundation

/// Group commit for pushes: concurrent pushes wait in a queue; the first to find no commit
/// running becomes the leader and hands every queued push to `commit` at once (one
/// transaction, one sync to disk), then wakes the others with their results. The one owner of
/// the queue; `commit` runs on the leader's thread.
final class PushGroup: @unchecked Sendable {
    // @unchecked: `queue`, `leading` and every job's `result` are only touched with `condition`
    // locked (a job's result is set by the leader inside `commit`, before the condition is
    // broadcast, and read by its submitter after).
    final class Job: @unchecked Sendable {
        let owner: OwnerID
        let events: [IncomingEvent]
        let quota: Int64
        let now: Int64
        var result: Result<[PushOutcome], RelayStorageError>?

        init(owner: OwnerID, events: [IncomingEvent], quota: Int64, now: Int64) {
            self.owner = owner
            self.events = events
            self.quota = quota
            self.now = now
        }
    }

    private let condition = NSCondition()
    private var queue: [Job] = []
    private var leading = false
    /// The most pushes one transaction takes.
    let maxGroup = 64

    /// Queues `job` and returns its result once the transaction holding it ended.
    func submit(_ job: Job, commit: ([Job]) -> Void) throws(RelayStorageError) -> [PushOutcome] {
        condition.lock()
        queue.append(job)
        while job.result == nil {
            if leading {
                condition.wait()
                continue
            }
            leading = true
            let group = Array(queue.prefix(maxGroup))
            queue.removeFirst(group.count)
            condition.unlock()
            commit(group)
            condition.lock()
            leading = false
            condition.broadcast()
        }
        condition.unlock()
        return try job.result!.get()
    }
}
