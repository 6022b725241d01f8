import Dispatch

/// Runs blocking store work (SQLite, fsync) on a dispatch queue instead of the cooperative
/// thread pool, whose few threads must stay free for the server's and the sync engine's tasks.
public enum Blocking {
    private static let queue = DispatchQueue(label: "ferry.blocking", qos: .userInitiated, attributes: .concurrent)

    public static func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            queue.async {
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
