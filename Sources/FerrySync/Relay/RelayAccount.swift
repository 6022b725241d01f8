import FerryJSON
import FerryModel
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An owner's account on a relay, beside syncing: pairing (a device that holds a token asks for
/// a short-lived one-time code; a new device redeems it for a token of its own), the owner's
/// tokens (listing and revoking them), the usage figures, and deleting the relay's copy of the
/// owner's data.
public enum RelayAccount {
    /// What redeeming a code gave.
    public struct Grant: Sendable {
        public var owner: OwnerID
        public var token: String
        /// The token's id on the relay (for revoking it), when the relay said it.
        public var tokenID: String?
    }

    /// Asks the relay for a one-time pairing code for `owner`, with `token`.
    /// - Returns: the code and when it expires (Unix milliseconds).
    public static func code(url: URL, owner: OwnerID, token: String) async throws(TransportFailure) -> (code: String, expiresAt: Int64) {
        let session = RelayHTTP.makeSession()
        defer { session.finish() }
        let http = RelayHTTP(base: url, token: token, session: session)
        let reply = try await http.send(http.request("POST", "v1/owners/\(owner)/pairing-codes", json: .object([:])),
                                        what: "asking for a pairing code")
        guard let parsed = try? JSONParser.parse([UInt8](reply.body)), let code = parsed["code"]?.stringValue else {
            throw .unavailable("asking for a pairing code: the relay answered HTTP \(reply.status) without a code")
        }
        return (code, parsed["expiresAt"]?.intValue ?? 0)
    }

    /// Redeems `code` for a token of this device.
    public static func redeem(url: URL, code: String, device: String) async throws(TransportFailure) -> Grant {
        let session = RelayHTTP.makeSession()
        defer { session.finish() }
        let http = RelayHTTP(base: url, token: nil, session: session)
        let reply = try await http.send(http.request("POST", "v1/pair", json: .object(["code": .string(code), "device": .string(device)])),
                                        what: "redeeming the pairing code")
        guard let parsed = try? JSONParser.parse([UInt8](reply.body)), let ownerText = parsed["owner"]?.stringValue,
              let owner = ID128(hex: ownerText), let token = parsed["token"]?.stringValue else {
            throw .unavailable("redeeming the pairing code: the relay answered HTTP \(reply.status) without a token")
        }
        let id = parsed["tokenId"]?.stringValue.flatMap { Self.isTokenID($0) ? $0 : nil }
        return Grant(owner: owner, token: token, tokenID: id)
    }

    /// Whether `text` is a relay token id: 16 lowercase hex digits.
    public static func isTokenID(_ text: String) -> Bool {
        Names.isLowercaseHex(text, count: 16)
    }

    /// Revokes the owner's token `id` with `token` (another token of the owner).
    /// - Returns: false when the relay has no live token `id` of the owner (never had it, or it
    ///   was revoked already), which callers replacing their own old token count as revoked.
    @discardableResult
    public static func revoke(url: URL, owner: OwnerID, token: String, id: String,
                              what: String = "revoking the token this device used before") async throws(TransportFailure) -> Bool {
        guard isTokenID(id) else { throw .rejected("revoking a token: \(id.prefix(40)) is not a token id") }
        let session = RelayHTTP.makeSession()
        defer { session.finish() }
        let http = RelayHTTP(base: url, token: token, session: session)
        let reply = try await http.send(http.request("DELETE", "v1/owners/\(owner)/tokens/\(id)"), what: what)
        return reply.status != 404
    }

    /// One live token of an owner on a relay, as `tokens` lists it: the device it was made for.
    public struct DeviceToken: Sendable, Hashable {
        /// The token's id (16 lowercase hex digits), what `revoke` takes; never the token.
        public var id: String
        /// The device name given when it was made (pairing or the operator's admin command).
        public var device: String
        /// `owner`, `editor` or `viewer`.
        public var role: String
        /// Unix milliseconds.
        public var createdAt: Int64
        /// Unix milliseconds, updated by the relay at most once a minute; nil if never used.
        public var lastUsedAt: Int64?
        /// Whether this is the token the listing was asked with (false from a relay that does
        /// not say).
        public var current: Bool
    }

    /// The owner's live tokens, oldest first, asked with `token`.
    public static func tokens(url: URL, owner: OwnerID, token: String) async throws(TransportFailure) -> [DeviceToken] {
        let session = RelayHTTP.makeSession()
        defer { session.finish() }
        let http = RelayHTTP(base: url, token: token, session: session)
        let reply = try await http.send(http.request("GET", "v1/owners/\(owner)/tokens"), what: "listing the owner's tokens")
        guard reply.status == 200, let parsed = try? JSONParser.parse([UInt8](reply.body)), let list = parsed["tokens"]?.arrayValue else {
            throw .unavailable("listing the owner's tokens: the relay answered HTTP \(reply.status) without a list")
        }
        return list.compactMap { entry in
            guard let id = entry["id"]?.stringValue, isTokenID(id), let created = entry["createdAt"]?.intValue else { return nil }
            return DeviceToken(id: id, device: entry["device"]?.stringValue ?? "", role: entry["role"]?.stringValue ?? "",
                               createdAt: created, lastUsedAt: entry["lastUsedAt"]?.intValue,
                               current: entry["current"]?.boolValue ?? false)
        }
    }

    /// Checks that the relay takes `token` for reading `owner`'s events (one event at most is
    /// asked for, without waiting).
    /// - Throws: `.unauthorized` when the relay refuses the token (unknown, revoked, or not for
    ///   this owner), `.unavailable` when the relay cannot be reached, else what the reply means.
    public static func checkToken(url: URL, owner: OwnerID, token: String) async throws(TransportFailure) {
        let session = RelayHTTP.makeSession()
        defer { session.finish() }
        let http = RelayHTTP(base: url, token: token, session: session)
        let reply = try await http.send(http.request("GET", "v1/owners/\(owner)/events", query: [("limit", "1")]), what: "checking the token",
                                        advice: false)
        // A relay answers 404 only for a path it does not serve: not a Ferry relay at this URL.
        if reply.status == 404 { throw .rejected("checking the token: \(url.absoluteString) answered 404; is it the URL of a Ferry relay?") }
    }

    /// The owner's usage on the relay, as the relay reports it (`events`, `bytes`, `blobs`,
    /// `blobBytes`, `quotaBytes`, `lastPushAt`).
    public static func usage(url: URL, owner: OwnerID, token: String) async throws(TransportFailure) -> [String: Int64] {
        let session = RelayHTTP.makeSession()
        defer { session.finish() }
        let http = RelayHTTP(base: url, token: token, session: session)
        let reply = try await http.send(http.request("GET", "v1/owners/\(owner)"), what: "reading the owner's usage")
        guard reply.status == 200, let parsed = try? JSONParser.parse([UInt8](reply.body)), case .object(let o) = parsed else {
            throw .unavailable("reading the owner's usage: the relay answered HTTP \(reply.status)")
        }
        var out: [String: Int64] = [:]
        for (k, v) in o { if let n = v.intValue { out[k] = n } }
        return out
    }

    /// Deletes the relay's copy of the owner's data (events and blobs); the owner and its
    /// tokens stay, so syncing can start over.
    public static func deleteCopy(url: URL, owner: OwnerID, token: String) async throws(TransportFailure) {
        let session = RelayHTTP.makeSession()
        defer { session.finish() }
        let http = RelayHTTP(base: url, token: token, session: session)
        let reply = try await http.send(http.request("DELETE", "v1/owners/\(owner)"), what: "deleting the relay's copy")
        if reply.status == 404 { throw .rejected("the relay does not know owner \(owner)") }
    }
}
