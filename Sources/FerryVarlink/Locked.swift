import Foundation

/// A value guarded by a lock: the single owner of a piece of state that more than one
/// thread touches (an event-loop thread and the tasks that run method handlers).
///
/// Every read and write goes through `withLock`, so the value is never seen half-updated.
// @unchecked Sendable: `value` is only ever touched inside `lock.withLock`, which orders
// all accesses; the stored value itself is required to be Sendable.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value and returns what it returns.
    func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
