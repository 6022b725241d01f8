import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import FerryJSON

/// The HTTP side of the relay transport: one request to `ferry-relay`'s `/v1` API, its status
/// mapped to a `TransportFailure` in this one place (docs/relay.openapi.yaml):
/// 401 and 403 unauthorized (the advice for a 401 depends on whether a token or a pairing code
/// was refused), 409 `lost_data` host lost data (the relay holds less than this device read:
/// restored from an older backup), 413 `quota_exceeded` quota, any other 413 too large (the
/// relay's `too_large`, or a proxy's body limit), 429 rate limited with `Retry-After`, other 4xx
/// (another 409 too) rejected, 5xx and network errors unavailable.
/// The bearer token is sent, never logged or put in an error.
///
/// Requests to an `http://` relay go through `HTTP1Client` (keep-alive connections of its own,
/// blocking I/O off the cooperative pool), the others through `session` (URLSession, which has
/// the TLS; in ferryd's https helper process, see `RelaySession`). Blob transfers from and to
/// files (`putBlob`, `getBlob`) go the same ways, with a longer timeout
/// (`RelayTransport.blobHTTP`).
struct RelayHTTP: Sendable {
    let base: URL
    let token: String?
    let session: RelaySession
    /// For an `http://` base, the client `send` and `sendUnlessTimedOut` use instead of
    /// `session`, with the session's timeout; nil for `https://`, and when the environment
    /// names a proxy (see `namesProxy`).
    let client: HTTP1Client?
    /// The process's environment: which proxy a request goes through (`proxy(for:environment:)`).
    let environment: [String: String]

    /// The largest reply body read into memory (a page of envelopes).
    static let maxReplyBytes = 64 << 20

    struct Reply: Sendable {
        var status: Int
        var body: Data
        var headers: [String: String]

        /// The relay's error body (`{"error": code, "message": ...}`), when the body is one.
        var errorBody: JSONValue? { try? JSONParser.parse([UInt8](body.prefix(64 << 10))) }
        /// The `Retry-After` header in whole seconds.
        var retryAfter: Duration? {
            headers["retry-after"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }.map { .seconds($0) }
        }
    }

    /// A session for relay requests, given up after `timeout` without progress (see
    /// `RelaySession`).
    static func makeSession(timeout: Duration = RelayTransport.defaultTimeout) -> RelaySession {
        RelaySession(timeout: timeout)
    }

    /// - Parameter environment: the process's environment, for the proxy variables.
    init(base: URL, token: String?, session: RelaySession, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.base = base
        self.token = token
        self.session = session
        self.environment = environment
        client = Self.namesProxy(environment) ? nil
            : try? HTTP1Client(base: base, timeout: session.timeout, maxIdle: RelaySession.maxConnections,
                               maxBodyBytes: Self.maxReplyBytes)
    }

    /// Whether `environment` names a proxy that libcurl (so URLSession) would send `http://`
    /// requests through: `http_proxy` (curl reads only the lower-case one for http), `all_proxy`
    /// or `ALL_PROXY`. `HTTP1Client` connects only directly, so then every request stays on
    /// URLSession, which goes through the proxy and honours `no_proxy` as before.
    static func namesProxy(_ environment: [String: String]) -> Bool {
        ["http_proxy", "all_proxy", "ALL_PROXY"].contains { !(environment[$0] ?? "").trimmingCharacters(in: .whitespaces).isEmpty }
    }

    /// Closes the idle connections of `client` (URLSession's are the session's own).
    func close() {
        client?.close()
    }

    func url(_ path: String, query: [(String, String)] = []) -> URL {
        var components = URLComponents(url: base.appendingPathComponent(path), resolvingAgainstBaseURL: false)!
        if !query.isEmpty { components.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) } }
        return components.url!
    }

    func request(_ method: String, _ path: String, query: [(String, String)] = [], json: JSONValue? = nil) -> URLRequest {
        var r = URLRequest(url: url(path, query: query))
        r.httpMethod = method
        if let token { r.setValue("Bearer " + token, forHTTPHeaderField: "Authorization") }
        if let json {
            r.setValue("application/json", forHTTPHeaderField: "Content-Type")
            r.httpBody = Data(JSONWriter.serialize(json))
        }
        return r
    }

    /// Sends `request`; returns the reply of a 2xx or 404 status, throws the mapped failure
    /// for anything else (with what to do, unless `advice` is false: then the caller says it).
    /// Answers 2xx and 404 replies, and those of the statuses in `passing`; throws the failure
    /// any other status means.
    func send(_ request: URLRequest, what: String, advice: Bool = true, passing: Set<Int> = []) async throws(TransportFailure) -> Reply {
        guard let reply = try await sendUnlessTimedOut(request, what: what, advice: advice, passing: passing) else {
            throw .unavailable(timedOut(what))
        }
        return reply
    }

    /// `send`, but nil when the request timed out (no progress for the session's timeout), for
    /// a caller that tries again with less.
    func sendUnlessTimedOut(_ request: URLRequest, what: String, advice: Bool = true,
                            passing: Set<Int> = []) async throws(TransportFailure) -> Reply? {
        let reply: Reply
        if let client {
            let response: HTTP1Response
            do {
                response = try await client.send(Self.http1(request))
            } catch {
                if Task.isCancelled || error == .cancelled { throw .unavailable("\(what): cancelled") }
                if error == .timedOut { return nil }
                throw .unavailable(unreachable(what, error))
            }
            reply = Reply(status: response.status, body: Data(response.body), headers: response.headers)
        } else {
            let data: Data
            let response: URLResponse
            do {
                (data, response) = try await session.data(request)
            } catch {
                if Task.isCancelled { throw .unavailable("\(what): cancelled") }
                if (error as? URLError)?.code == .timedOut { return nil }
                throw .unavailable(unreachable(what, error))
            }
            guard let http = response as? HTTPURLResponse else { throw .unavailable("\(what): not an HTTP reply") }
            var headers: [String: String] = [:]
            for (k, v) in http.allHeaderFields {
                if let k = k as? String, let v = v as? String { headers[k.lowercased()] = v }
            }
            reply = Reply(status: http.statusCode, body: data.count > Self.maxReplyBytes ? Data() : data, headers: headers)
        }
        if (200..<300).contains(reply.status) || reply.status == 404 || passing.contains(reply.status) { return reply }
        throw Self.failure(reply, what: what, base: base, sentToken: token != nil, advice: advice)
    }

    /// `request` (made by `request(_:_:query:json:)`) for `HTTP1Client`: its method, the path
    /// and query of its URL as they are encoded there, its headers and body.
    static func http1(_ request: URLRequest) -> HTTP1Request {
        var target = "/"
        if let url = request.url, let components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            if let query = components.percentEncodedQuery { target += "?" + query }
        }
        let headers = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        let method = request.httpMethod ?? "GET"
        // A push may go twice (the relay keeps each event once, and says `duplicate`); a pairing
        // code redeemed twice could not be.
        let push = method == "POST" && target.hasSuffix("/events")
        return HTTP1Request(method: method, target: target, headers: headers, body: request.httpBody, idempotent: push ? true : nil)
    }

    /// What a request that timed out says.
    func timedOut(_ what: String) -> String {
        "\(what): the relay at \(base.absoluteString) did not answer for \(session.timeout.components.seconds) s; "
            + "the link may be slow or stalled, or ferry-relay stuck: check the network and the relay (RelayTimeoutSeconds in ferryd.conf sets the wait)"
    }

    /// What a request that got no HTTP reply says: the network's reason in words, and what to
    /// check: the proxy it went through, if any, else the URL and the network. A reason that
    /// says what to do itself (a certificate, an https:// URL for a plain relay) is not told
    /// to check the network, and the relay was reached then.
    func unreachable(_ what: String, _ error: any Error) -> String {
        let proxy = Self.proxy(for: base, environment: environment)
        let reason = Self.reason(error, throughProxy: proxy != nil)
        if Self.advises(reason) { return "\(what): the relay at \(base.absoluteString): \(reason)" }
        if let proxy {
            return "\(what): cannot reach the relay at \(base.absoluteString) through the proxy \(proxy) (from the environment's "
                + "proxy variables): \(reason); check the proxy, or name the relay's host in no_proxy to connect directly"
        }
        return "\(what): cannot reach the relay at \(base.absoluteString): \(reason); check the URL and the network"
    }

    /// Whether `reason` says what to do itself.
    static func advises(_ reason: String) -> Bool {
        ["update-ca-certificates", "renew it", "its URL starts with http://", "use the name it is for"].contains { reason.contains($0) }
    }

    /// The proxy libcurl sends a request to `url` through, as the environment names it
    /// (without any user and password in it), or nil for a direct connection: `https_proxy`
    /// or `HTTPS_PROXY` for https, `http_proxy` for http, else `all_proxy` or `ALL_PROXY`;
    /// none when `no_proxy` (or `NO_PROXY`) names the host, a domain it is in, or `*`.
    static func proxy(for url: URL, environment: [String: String]) -> String? {
        let scheme = url.scheme?.lowercased() ?? "http"
        let names = scheme == "https" ? ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] : ["http_proxy", "all_proxy", "ALL_PROXY"]
        guard let proxy = names.lazy.compactMap({ environment[$0]?.trimmingCharacters(in: .whitespaces) }).first(where: { !$0.isEmpty }) else {
            return nil
        }
        let host = (url.host ?? "").lowercased()
        let exempt = (environment["no_proxy"] ?? environment["NO_PROXY"] ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces).lowercased().drop(while: { $0 == "." })
        }
        if exempt.contains(where: { $0 == "*" || (!$0.isEmpty && (host == $0 || host.hasSuffix("." + $0))) }) { return nil }
        // Never show a password the variable may hold.
        guard var components = URLComponents(string: proxy.contains("://") ? proxy : "http://" + proxy) else { return "(unreadable)" }
        components.user = nil
        components.password = nil
        return components.string ?? "(unreadable)"
    }

    /// A network failure in words (FoundationNetworking on Linux describes them only by number;
    /// for the ones it does not name it passes libcurl's own text, which is used then).
    /// - Parameter throughProxy: the request went to a proxy: a refused connection is the
    ///   proxy's, not ferry-relay's.
    static func reason(_ error: any Error, throughProxy: Bool = false) -> String {
        if let e = error as? HTTP1ClientError { return reason(e) }
        guard let e = error as? URLError else { return "\(error)" }
        let detail = ((e as NSError).userInfo[NSLocalizedDescriptionKey] as? String)?
            .trimmingCharacters(in: .whitespacesAndNewlines).prefix(400)
        // libcurl's certificate failures come through under other codes on Linux.
        if let detail, detail.localizedCaseInsensitiveContains("certificate has expired")
            || detail.localizedCaseInsensitiveContains("certificate is not yet valid") {
            return "its TLS certificate is out of its validity dates (\(detail)); the relay's operator must renew it, or check this machine's clock"
        }
        // An https:// URL for a server that answers plain HTTP: OpenSSL reads its answer as a
        // TLS record of an unknown version.
        if let detail, detail.localizedCaseInsensitiveContains("wrong version number") {
            return "it does not answer TLS there (\(detail)): if the relay serves plain HTTP (no [TLS] and no TLS proxy in front), "
                + "its URL starts with http://"
        }
        if let detail, detail.localizedCaseInsensitiveContains("subject name") || detail.localizedCaseInsensitiveContains("does not match target host") {
            return "its TLS certificate is for another name (\(detail)): use the name it is for in the relay's URL, "
                + "or have the relay's operator add this one to the certificate"
        }
        // A connection cut during the TLS handshake (OpenSSL's SSL_ERROR_SYSCALL).
        if let detail, detail.contains("SSL_ERROR_SYSCALL") {
            return "the connection broke during the TLS handshake (\(detail)); something between (a proxy, a firewall) may cut it"
        }
        if let detail, detail.localizedCaseInsensitiveContains("SSL certificate problem")
            || detail.localizedCaseInsensitiveContains("certificate verify failed") {
            return untrustedCertificate(String(detail))
        }
        switch e.code {
        case .timedOut: return "no answer in time"
        case .cannotConnectToHost:
            return "the connection was refused" + (throughProxy ? "" : " (is ferry-relay running and listening there?)")
        case .cannotFindHost, .dnsLookupFailed: return "its host name does not resolve"
        case .networkConnectionLost: return "the connection was lost"
        case .notConnectedToInternet: return "this machine has no network"
        case .secureConnectionFailed: return "the TLS handshake failed"
        case .serverCertificateUntrusted, .serverCertificateHasUnknownRoot, .serverCertificateHasBadDate, .serverCertificateNotYetValid:
            return untrustedCertificate(detail.map(String.init))
        case .badServerResponse, .cannotParseResponse:
            // libcurl's "Empty reply from server": the connection closed before any answer.
            if detail?.localizedCaseInsensitiveContains("empty reply") == true {
                return "the connection was closed before any answer (the relay, or something between, dropped it)"
            }
            return "the answer is not HTTP" + (detail.map { " (\($0))" } ?? "")
        case .unsupportedURL, .badURL:
            // libcurl's "Received HTTP/0.9 when not allowed": bytes that are not an HTTP answer.
            if let detail, detail.contains("HTTP/0.9") { return "the answer is not HTTP (\(detail))" }
            return "the URL is not an http or https URL"
        default:
            // Mostly a connection that broke mid-request ("Send failure: Broken pipe",
            // "Recv failure: Connection reset by peer").
            if let detail, !detail.isEmpty, !detail.hasPrefix("The operation could not be completed") {
                return "the connection failed: \(detail)"
            }
            return "the connection failed (network error \(e.code.rawValue))"
        }
    }

    /// `HTTP1Client`'s failures in the words of URLSession's same failures above.
    static func reason(_ error: HTTP1ClientError) -> String {
        switch error {
        case .timedOut: return "no answer in time"
        case .connectFailed(let code) where code == ECONNREFUSED:
            return "the connection was refused (is ferry-relay running and listening there?)"
        case .connectFailed(let code) where code == ENETUNREACH: return "this machine has no network"
        case .connectFailed(let code): return "the connection failed: \(HTTP1ClientError.text(code))"
        case .unresolvable: return "its host name does not resolve"
        case .connectionFailed(let sending, let code):
            return "the connection failed: \(HTTP1ClientError.text(code)) (\(sending ? "sending the request" : "reading the answer"))"
        case .closedBeforeAnswer: return "the connection was closed before any answer (the relay, or something between, dropped it)"
        case .closedMidAnswer: return "the connection was lost (closed in the middle of the answer)"
        case .notHTTP(.bodyTooLarge(let limit)): return "its answer is over the \(limit >> 20) MiB a reply may have"
        case .notHTTP(let why): return "the answer is not HTTP (\(why))"
        case .unsupportedURL: return "the URL is not an http or https URL"
        case .invalidRequest: return "a request header holds a line break"
        case .cancelled: return "cancelled"
        case .system(let call, let code): return "the connection failed: \(call): \(HTTP1ClientError.text(code))"
        case .file(let call, let path, let code): return "cannot \(call) \(path): \(HTTP1ClientError.text(code))"
        }
    }

    /// An untrusted relay certificate, with how to trust a self-signed or private one: ferryd
    /// uses the system's trust store.
    static func untrustedCertificate(_ detail: String?) -> String {
        "its TLS certificate is not trusted here" + (detail.map { " (\($0))" } ?? "")
            + "; for a self-signed or private certificate, add it (or its CA) to this machine's trust store: "
            + "copy it to /usr/local/share/ca-certificates/NAME.crt and run 'sudo update-ca-certificates', then 'ferryctl sync'"
    }

    /// The failure a non-success reply means. `sentToken` tells what a 401 refused: this
    /// device's token (pair the device again), or without one the pairing code being redeemed
    /// (make a new code). The relay's own message is quoted as what happened; the advice, said
    /// once, is added here, where the ferryctl commands are known (unless `advice` is false).
    static func failure(_ reply: Reply, what: String, base: URL, sentToken: Bool = true, advice: Bool = true) -> TransportFailure {
        let parsed = reply.errorBody
        let code = parsed?["error"]?.stringValue ?? ""
        let message = parsed?["message"]?.stringValue
        let text = "\(what): the relay answered \(reply.status)\(code.isEmpty ? "" : " (\(code))")\(message.map { ": " + $0 } ?? "")"
        if !advice {
            switch reply.status {
            case 401, 403: return .unauthorized(text)
            default: break
            }
        }
        switch reply.status {
        case 401 where sentToken:
            return .unauthorized(text + "; pair this device again ('ferryctl relay pair' on a device "
                + "still syncing through the relay, then 'ferryctl transport add NAME relay URL --code CODE' here), "
                + "or ask the relay's operator for a new token ('ferry-relay admin create-owner --owner OWNER')")
        case 401:
            return .unauthorized(text + "; make a new code with 'ferryctl relay pair' on a device already syncing through the relay "
                + "and use it before it expires")
        case 403:
            return .unauthorized(text + "; the token has no right to this owner's data: pair this device with a code from a device "
                + "of this owner ('ferryctl relay pair' there, then 'ferryctl transport add NAME relay URL --code CODE' here)")
        // The engine says what it does about it (it starts the transport over).
        case 409 where code == "lost_data": return .hostLostData(text)
        case 413 where code == "quota_exceeded":
            return .quotaExceeded(text + "; once the quota is raised (or the owner's data shrinks), 'ferryctl sync' sends what waits at once")
        case 413: return .tooLarge(text)
        case 429:
            return .rateLimited(retryAfter: reply.retryAfter, text)
        case 400..<500: return .rejected(text)
        case 300..<400:
            // Not followed: the token would go wherever it points.
            let target = reply.headers["location"].map { " to \($0)" } ?? ""
            return .unavailable(text + "; the relay's address redirects\(target): use the address it names "
                + "('ferryctl transport add NAME relay URL' with it)")
        default: return .unavailable(text)
        }
    }
}
