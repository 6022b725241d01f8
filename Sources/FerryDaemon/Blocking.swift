import Dispatch
import FerryModel

/// Runs blocking store work (SQLite, fsync) on a dispatch queue instead of the cooperative
/// thread pool, whose few threads must stay free for the server's tasks.
enum Blocking {
    private static let queue = DispatchQueue(label: "ferryd.store", qos: .userInitiated, attributes: .concurrent)

    static func run<T: Sendable>(_ body: @escaping @Sendable () throws(FerryError) -> T) async throws(FerryError) -> T {
        let result: Result<T, FerryError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(FerryError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}
