import Glibc

/// The one wrapper through which this module makes system calls.
///
/// It retries calls interrupted by a signal (`EINTR`) and turns a `-1` return into a
/// `SystemCallError` that names the call, so no caller repeats that dance.
enum Syscall {
    /// Runs `body` until it does not fail with `EINTR`.
    ///
    /// - Returns: the call's non-negative result.
    /// - Throws: `SystemCallError` naming `call` when `body` returns -1 with any other errno.
    @discardableResult
    static func run<Result: BinaryInteger>(
        _ call: @autoclosure () -> String, _ body: () -> Result
    ) throws(SystemCallError) -> Result {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = errno
            if code == EINTR { continue }
            throw SystemCallError(call: call(), errno: code)
        }
    }

    /// Closes `fd` once. `close` is never retried on Linux: the descriptor is released
    /// even when the call reports `EINTR`, and a retry could close a reused number.
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }
}
