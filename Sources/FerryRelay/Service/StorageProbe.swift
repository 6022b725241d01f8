import Dispatch
import Synchronization

/// Asks the storage for its event count with a deadline, one question at a time, for the
/// answers that must come even when the database stalls (`/readyz`, `/metrics`): a stopped or
/// unreachable PostgreSQL leaves a query waiting for as long as it lasts, and a load balancer's
/// probe must get its 503 in time. While a question is still unanswered, the next one fails at
/// once instead of waiting for another thread too; the question's thread ends when the storage
/// answers.
final class StorageProbe: Sendable {
    private let storage: any RelayStorage
    private let asking = Mutex(false)
    /// How long a probe waits for the answer.
    let timeout: Duration

    /// Why no count came.
    enum Failure: Error, CustomStringConvertible {
        case storage(RelayStorageError)
        /// No answer within the timeout (or the question before is still unanswered).
        case noAnswer(Duration)

        var description: String {
            switch self {
            case .storage(let error): "\(error)"
            case .noAnswer(let timeout): "no answer within \(timeout.components.seconds) s (the database stalls or cannot be reached)"
            }
        }
    }

    init(storage: any RelayStorage, timeout: Duration = .seconds(2)) {
        self.storage = storage
        self.timeout = timeout
    }

    /// The number of events stored, or why it did not come in time.
    func totalEvents() -> Result<Int64, Failure> {
        let started = asking.withLock { busy -> Bool in
            if busy { return false }
            busy = true
            return true
        }
        guard started else { return .failure(.noAnswer(timeout)) }
        let answer = Answer()
        DispatchQueue.global().async { [self] in
            let result: Result<Int64, Failure>
            do throws(RelayStorageError) {
                result = .success(try storage.totalEvents())
            } catch {
                result = .failure(.storage(error))
            }
            answer.value.withLock { $0 = result }
            asking.withLock { $0 = false }
            answer.done.signal()
        }
        let parts = timeout.components
        let deadline = DispatchTime.now() + .seconds(Int(parts.seconds)) + .nanoseconds(Int(parts.attoseconds / 1_000_000_000))
        guard answer.done.wait(timeout: deadline) == .success else { return .failure(.noAnswer(timeout)) }
        return answer.value.withLock { $0 } ?? .failure(.noAnswer(timeout))
    }

    /// One question's answer, handed from the thread that asks the storage.
    private final class Answer: Sendable {
        let value = Mutex<Result<Int64, Failure>?>(nil)
        let done = DispatchSemaphore(value: 0)
    }
}
