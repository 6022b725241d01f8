import FerryJSON
import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where the relay transport's URLSession requests go (`https://` relays, and `http://` ones
/// behind a proxy): through the installed `SessionHelper` when ferryd installed one, so that a
/// trap in FoundationNetworking ends the helper and not ferryd; otherwise through a URLSession
/// in this process. Both give the same replies and the same `URLError`s.
///
/// A session has one timeout: requests are given up after `timeout` without progress.
final class RelaySession: Sendable {
    let timeout: Duration
    /// The most connections to one relay.
    static let maxConnections = 4
    /// The in-process session, made at its first use (never when a helper makes the requests).
    private let made = Mutex<URLSession?>(nil)

    /// The helper given at init; nil: the installed one, if any.
    private let helper: SessionHelper?

    /// - Parameter helper: the helper that makes this session's requests; nil: the one
    ///   `SessionHelper.install` installed, or none.
    init(timeout: Duration, helper: SessionHelper? = nil) {
        self.timeout = timeout
        self.helper = helper
    }

    private var activeHelper: SessionHelper? { helper ?? SessionHelper.installed.withLock { $0 } }

    private var local: URLSession {
        made.withLock { s in
            if let s { return s }
            let session = Self.makeURLSession(timeout: timeout)
            s = session
            return session
        }
    }

    /// Cancels the in-process session's requests and lets it go (a helper's requests end with
    /// their calls' tasks).
    func invalidate() {
        made.withLock { $0 }?.invalidateAndCancel()
    }

    /// Lets the in-process session go once its requests are done.
    func finish() {
        made.withLock { $0 }?.finishTasksAndInvalidate()
    }

    /// A URLSession for relay requests: no cookies, no cache, a few connections per relay, and
    /// requests given up after `timeout` without progress (bytes sent or received).
    /// FoundationNetworking times requests by their session's `timeoutIntervalForRequest` alone
    /// (a request's own `timeoutInterval` is not used), so a session is made per timeout.
    static func makeURLSession(timeout: Duration) -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = Double(timeout.components.seconds)
        configuration.httpMaximumConnectionsPerHost = maxConnections
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // No cache at all: FoundationNetworking reads one on a queue of its own before a
        // request starts, and a request cancelled in that window traps the process
        // ("a task that in not in the registry").
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }

    /// The body and response of `request`.
    func data(_ request: URLRequest) async throws -> (Data, URLResponse) {
        guard let helper = activeHelper else { return try await SessionCall.data(local, request) }
        var header = describe(request, op: "data")
        header["hasBody"] = .bool(request.httpBody != nil)
        let reply = try await helper.call(header, body: [UInt8](request.httpBody ?? Data()))
        return (Data(reply.body), try response(reply, request))
    }

    /// Sends the file at `file` as the body of `request`; the reply body and response.
    func upload(_ request: URLRequest, fromFile file: URL) async throws -> (Data, URLResponse) {
        guard let helper = activeHelper else { return try await SessionCall.upload(local, request, fromFile: file) }
        var header = describe(request, op: "upload")
        header["file"] = .string(file.path)
        let reply = try await helper.call(header)
        return (Data(reply.body), try response(reply, request))
    }

    /// Downloads the body of `request` into the file at `destination`; the response.
    func download(_ request: URLRequest, to destination: URL) async throws -> URLResponse {
        guard let helper = activeHelper else { return try await SessionCall.download(local, request, to: destination) }
        var header = describe(request, op: "download")
        header["to"] = .string(destination.path)
        return try response(try await helper.call(header), request)
    }

    private func describe(_ request: URLRequest, op: String) -> [String: JSONValue] {
        var headers: [String: JSONValue] = [:]
        for (name, value) in request.allHTTPHeaderFields ?? [:] { headers[name] = .string(value) }
        return ["op": .string(op), "method": .string(request.httpMethod ?? "GET"), "url": .string(request.url?.absoluteString ?? ""),
                "headers": .object(headers), "timeout": .int(timeout.components.seconds)]
    }

    /// The helper's reply as URLSession would give it, or its error.
    private func response(_ reply: SessionHelperFrame, _ request: URLRequest) throws -> URLResponse {
        if let error = reply.header["error"] {
            let code = URLError.Code(rawValue: Int(error["code"]?.intValue ?? -1)) ?? .unknown
            throw URLError(code, userInfo: [NSLocalizedDescriptionKey: error["message"]?.stringValue ?? ""])
        }
        var headers: [String: String] = [:]
        for (name, value) in reply.header["headers"]?.objectValue ?? [:] { headers[name] = value.stringValue }
        guard let status = reply.header["status"]?.intValue, let url = request.url,
              let response = HTTPURLResponse(url: url, statusCode: Int(status), httpVersion: "HTTP/1.1", headerFields: headers) else {
            throw URLError(.badServerResponse)
        }
        return response
    }
}
