import Dispatch

/// Runs blocking store work (SQLite, fsync, file I/O) on a dispatch thread instead of the
/// cooperative thread pool, whose few threads must stay free for the server's and the sync
/// engine's tasks.
///
/// Each call gets a serial queue of its own, which libdispatch serves from its overcommit pool:
/// a thread is there as soon as one is needed. A concurrent queue is served by at most one
/// thread per CPU on Linux, adding one a second beyond that, so a few calls that block for long
/// (a read from a folder on a stalled network mount) would hold every other one, store writes
/// included, back by seconds.
public enum Blocking {
    public static func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            DispatchQueue(label: "ferry.blocking").async {
                do throws(E) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}
