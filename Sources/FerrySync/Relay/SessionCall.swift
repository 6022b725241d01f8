import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP request through a `URLSession`, awaited, and cancelled when the awaiting task is.
///
/// URLSession's own async methods (`data(for:)`, `upload(for:fromFile:)`, `download(for:)`) can
/// deadlock in swift-corelibs-foundation when the task awaiting one is cancelled just as its
/// request completes: the cancellation handler cancels the URLSession task synchronously on
/// the session's queue while holding the Swift task's status lock, and the session's queue,
/// finishing the request, waits for that same lock to resume the task (seen here: a ferryd
/// whose relay long-poll was cancelled at stop never exited). These calls use the
/// completion-handler API instead and cancel the request from another thread, outside the lock.
enum SessionCall {
    /// The body and response of `request`.
    static func data(_ session: URLSession, _ request: URLRequest) async throws -> (Data, URLResponse) {
        try await run { completion in
            session.dataTask(with: request) { data, response, error in
                completion(Result { () throws -> (Data, URLResponse) in
                    if let error { throw error }
                    guard let response else { throw URLError(.badServerResponse) }
                    return (data ?? Data(), response)
                })
            }
        }
    }

    /// Sends the file at `file` as the body of `request`; the reply body and response.
    /// FoundationNetworking's upload from a file (`uploadTask(with:fromFile:)`) traps, ending the
    /// process, when the server resets the connection while the body is being sent ("'try!' ...
    /// libcurl.Easy Code=43"), so it is never used: a file of at most `inMemoryUpTo` bytes is
    /// sent from memory, a larger one streamed from an `InputStream` of the file (a body
    /// stream, sent with `Transfer-Encoding: chunked`); both fail with the reset instead.
    static func upload(_ session: URLSession, _ request: URLRequest, fromFile file: URL,
                       inMemoryUpTo: Int = 64 << 20) async throws -> (Data, URLResponse) {
        let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? Int.max
        let body = size <= inMemoryUpTo ? try Data(contentsOf: file) : nil
        var streamed = request
        if body == nil {
            guard size != Int.max, let stream = InputStream(url: file) else { throw URLError(.fileDoesNotExist) }
            // Sent chunked (FoundationNetworking would send a Content-Length given here beside
            // Transfer-Encoding: chunked, which proxies may refuse).
            streamed.httpBodyStream = stream
        }
        return try await run { completion in
            let handler: @Sendable (Data?, URLResponse?, (any Error)?) -> Void = { data, response, error in
                completion(Result { () throws -> (Data, URLResponse) in
                    if let error { throw error }
                    guard let response else { throw URLError(.badServerResponse) }
                    return (data ?? Data(), response)
                })
            }
            if let body { return session.uploadTask(with: request, from: body, completionHandler: handler) }
            return session.dataTask(with: streamed, completionHandler: handler)
        }
    }

    /// Downloads the body of `request` into the file at `destination` (replacing it); the
    /// response. The file is there whatever the status; the caller decides what it is worth.
    static func download(_ session: URLSession, _ request: URLRequest, to destination: URL) async throws -> URLResponse {
        try await run { completion in
            session.downloadTask(with: request) { location, response, error in
                // The session removes its temporary file once this handler returns.
                completion(Result { () throws -> URLResponse in
                    if let error { throw error }
                    guard let location, let response else { throw URLError(.badServerResponse) }
                    try? FileManager.default.removeItem(at: destination)
                    try FileManager.default.moveItem(at: location, to: destination)
                    return response
                })
            }
        }
    }

    /// Makes the session task (whose completion handler must call the given function exactly
    /// once), runs it, and cancels it if the awaiting task is cancelled.
    private static func run<T: Sendable>(
        _ make: (@escaping @Sendable (Result<T, any Error>) -> Void) -> URLSessionTask
    ) async throws -> T {
        let state = State()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let task = make { continuation.resume(with: $0) }
                state.started(task)
                task.resume()
            }
        } onCancel: {
            state.cancel()
        }
    }

    /// The session task of one call and whether the call was cancelled, under a lock.
    private final class State: @unchecked Sendable {
        // @unchecked: `task` and `cancelled` are only touched with `lock` held.
        private let lock = NSLock()
        private var task: URLSessionTask?
        private var cancelled = false

        func started(_ task: URLSessionTask) {
            lock.lock()
            self.task = task
            let cancelNow = cancelled
            lock.unlock()
            if cancelNow { Self.cancelLater(task) }
        }

        func cancel() {
            lock.lock()
            cancelled = true
            let task = self.task
            lock.unlock()
            if let task { Self.cancelLater(task) }
        }

        /// Cancels from another thread: never while the cancelled Swift task's lock is held.
        private static func cancelLater(_ task: URLSessionTask) {
            DispatchQueue.global().async { task.cancel() }
        }
    }
}
