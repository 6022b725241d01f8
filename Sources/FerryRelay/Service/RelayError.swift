import FerryJSON

/// Everything a request can fail with. `response` maps each case to its HTTP status and JSON
/// body: the only place that decides what the wire sees.
public enum RelayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 400: malformed JSON, fields, ids, query parameters.
    case badRequest(code: String, message: String)
    /// 401: missing, unknown or revoked token; wrong, expired or used pairing code.
    case unauthorized(String)
    /// 403: a token of another owner, or without the right.
    case forbidden(String)
    /// 404: no such route.
    case notFound(path: String)
    /// 404: no such blob, token or owner.
    case missing(what: String)
    /// 405, with the methods the path takes.
    case methodNotAllowed(allowed: [String])
    /// 408: the client did not send its request in time.
    case timeout
    /// 409 `lost_data`: a pull after a cursor the relay cannot honour because it holds less than
    /// the device already read (restored from an older backup, or its data was lost; `why`
    /// says how it knows). The device starts over: pulls from the start and pushes everything
    /// again. Sent only for this; clients may rely on the code.
    case lostData(cursor: Cursor, why: CursorLoss)
    /// 409 `blob_in_use`: a blob a device stored or looked for (PUT, HEAD) within
    /// `BlobDeleteGraceSeconds` is kept, since that device may be about to push a record
    /// referencing it; it can go after `retryAfterSeconds`.
    case blobInUse(retryAfterSeconds: Int)
    /// 413: a body, a batch or a field over its limit.
    case tooLarge(String)
    /// 413: the owner's quota would be exceeded; nothing was stored.
    case quotaExceeded(quotaBytes: Int64, usedBytes: Int64, neededBytes: Int64)
    /// 414: the request target is too long.
    case uriTooLong(Int)
    /// 415: a body of the wrong media type.
    case unsupportedMediaType(String)
    /// 429: too many failed attempts; retry after the given seconds.
    case rateLimited(retryAfterSeconds: Int)
    /// 500: storage failed (the detail goes to the log, not the wire).
    case storage(String)
    /// 503: the relay is shutting down.
    case unavailable
    /// 503 from /readyz: the storage does not answer (the detail goes to the log).
    case storageUnreachable
    /// 503: the relay holds `maxConnections` connections already (waiting pulls among them);
    /// the connection is closed after the answer.
    case atCapacity(maxConnections: Int)

    public var description: String {
        switch self {
        case .badRequest(let code, let message): "\(code): \(message)"
        case .unauthorized(let m): "unauthorized: \(m)"
        case .forbidden(let m): "forbidden: \(m)"
        case .notFound(let path): "no route \(path.prefix(200))"
        case .missing(let what): "not found: \(what)"
        case .methodNotAllowed(let allowed): "method not allowed (allowed: \(allowed.joined(separator: ", ")))"
        case .timeout: "request timeout"
        case .lostData(let c, let why): "lost data: cursor \(c) \(why)"
        case .blobInUse(let s): "blob in use for \(s) s more"
        case .tooLarge(let m): "too large: \(m)"
        case .quotaExceeded(let q, let u, let n): "quota exceeded: \(u) of \(q) bytes used, \(n) more needed"
        case .uriTooLong(let n): "request target of \(n) bytes"
        case .unsupportedMediaType(let m): "unsupported media type: \(m)"
        case .rateLimited(let s): "rate limited for \(s) s"
        case .storage(let m): "storage: \(m)"
        case .unavailable: "shutting down"
        case .atCapacity(let n): "at its connection limit of \(n)"
        case .storageUnreachable: "storage unreachable"
        }
    }

    /// The HTTP response for this error: its status and `{"error": code, "message": ...}`.
    public var response: HTTPResponse {
        switch self {
        case .badRequest(let code, let message):
            return body(400, code, message)
        case .unauthorized(let message):
            return body(401, "unauthorized", message, headers: [("WWW-Authenticate", "Bearer realm=\"ferry-relay\"")])
        case .forbidden(let message):
            return body(403, "forbidden", message)
        case .notFound(let path):
            return body(404, "not_found", "no such route: \(path.prefix(200)); the API lives under /v1 (see docs/relay.openapi.yaml)")
        case .missing(let what):
            return body(404, "not_found", "\(what) does not exist")
        case .methodNotAllowed(let allowed):
            let list = allowed.contains("GET") && !allowed.contains("HEAD") ? allowed + ["HEAD"] : allowed
            return body(405, "method_not_allowed", "this route takes \(list.joined(separator: ", "))",
                        headers: [("Allow", list.joined(separator: ", "))])
        case .timeout:
            return body(408, "timeout", "the request was not received in time; send it again")
        case .lostData(let cursor, let why):
            let how = switch why {
            case .ahead(let newest): "after=\(cursor) is beyond the newest cursor this relay ever gave the owner (\(newest))"
            case .beforeRestore: "after=\(cursor) was handed out before this relay was found restored or its copy of the owner's data was deleted"
            }
            return body(409, "lost_data", "\(how): the relay holds less than this device already read (it was restored from an older backup, its data was lost, or the owner deleted the relay copy). Start over: pull from the start (no after=) and push every record again")
        case .blobInUse(let seconds):
            return body(409, "blob_in_use", "a device stored this blob or looked for it lately, and may be about to reference it: "
                        + "it is kept; ask again in \(seconds) s, after pulling what was pushed meanwhile",
                        headers: [("Retry-After", String(seconds))])
        case .tooLarge(let message):
            return body(413, "too_large", message)
        case .quotaExceeded(let quota, let used, let needed):
            return .json(413, [
                "error": "quota_exceeded",
                "message": .string("the owner's quota of \(quota) bytes would be exceeded (\(used) used, \(needed) more needed); nothing was stored. The relay's operator can raise it (ferry-relay admin set-quota OWNER BYTES)"),
                "quotaBytes": .int(quota), "usedBytes": .int(used),
            ])
        case .uriTooLong(let n):
            return body(414, "uri_too_long", "the request target is \(n) bytes; the limit is \(RequestTarget.maxBytes)")
        case .unsupportedMediaType(let message):
            return body(415, "unsupported_media_type", message)
        case .rateLimited(let seconds):
            return body(429, "rate_limited", "too many failed attempts from this address; retry in \(seconds) s",
                        headers: [("Retry-After", String(seconds))])
        case .storage:
            return body(500, "internal", "the relay could not complete the request (see its log); retry later")
        case .unavailable:
            return body(503, "unavailable", "the relay is shutting down; retry shortly", headers: [("Retry-After", "1")])
        case .storageUnreachable:
            return body(503, "unavailable", "the relay's storage does not answer (see the relay's log): check its database", headers: [("Retry-After", "5")])
        case .atCapacity(let n):
            return body(503, "unavailable", "the relay has as many connections open as it takes (MaxConnections=\(n), waiting pulls among "
                        + "them); retry shortly. Its operator can raise MaxConnections in ferry-relay.conf",
                        headers: [("Retry-After", "5"), ("Connection", "close")])
        }
    }

    private func body(_ status: Int, _ code: String, _ message: String, headers: [(String, String)] = []) -> HTTPResponse {
        .json(status, ["error": .string(code), "message": .string(message)], headers: headers)
    }
}
