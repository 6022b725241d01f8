import FerryJSON
import FerrySync
import Foundation

extension RelayService {
    /// `GET /v1/owners/{owner}`.
    func ownerInfo(_ owner: OwnerID) throws(RelayError) -> HTTPResponse {
        let usage: OwnerUsage?
        do { usage = try storage.usage(owner) } catch { throw storageFailure(error) }
        guard let usage else { throw .missing(what: "the owner") }
        var object: [String: JSONValue] = [
            "owner": .string(owner.description), "events": .int(usage.events), "bytes": .int(usage.eventBytes),
            "blobs": .int(usage.blobs), "blobBytes": .int(usage.blobBytes),
            "quotaBytes": .int(usage.quotaOverride ?? configuration.defaultQuotaBytes),
        ]
        if let last = usage.lastPushAt { object["lastPushAt"] = .int(last) }
        return .json(200, .object(object))
    }

    /// `DELETE /v1/owners/{owner}`: the relay copy goes; the owner and its tokens stay. Every
    /// cursor handed out before is refused from then on (409 `lost_data`), and waiting pulls are
    /// woken to hear it, so devices still syncing here start over and fill the relay again.
    func deleteOwner(_ owner: OwnerID) throws(RelayError) -> HTTPResponse {
        let keys: [String]
        do { keys = try storage.deleteOwnerData(owner) } catch { throw storageFailure(error) }
        blobs.remove(owner, keys: keys)
        hub.notify(owner)
        logger.notice("deleted the relay copy of an owner's data", ["owner": owner.description, "blobs": String(keys.count)])
        return HTTPResponse(status: 204)
    }

    /// `GET /v1/owners/{owner}/tokens`: `current` marks the token of the request (`caller`), so a
    /// device can tell its own from the others it may revoke.
    func listTokens(_ owner: OwnerID, caller: String?) throws(RelayError) -> HTTPResponse {
        let tokens: [TokenInfo]
        do { tokens = try storage.tokens(of: owner) } catch { throw storageFailure(error) }
        return .json(200, ["tokens": .array(tokens.map { t in
            var o: [String: JSONValue] = ["id": .string(t.id), "device": .string(t.device), "role": .string(t.role.rawValue),
                                          "createdAt": .int(t.createdAt)]
            if let last = t.lastUsedAt { o["lastUsedAt"] = .int(last) }
            if t.id == caller { o["current"] = .bool(true) }
            return .object(o)
        })])
    }

    /// `DELETE /v1/owners/{owner}/tokens/{id}`.
    func revokeToken(_ owner: OwnerID, id: String) throws(RelayError) -> HTTPResponse {
        let revoked: Bool
        do { revoked = try storage.revokeToken(id, owner: owner, now: now()) } catch { throw storageFailure(error) }
        guard revoked else { throw .missing(what: "token \(id)") }
        logger.notice("revoked a token", ["owner": owner.description, "token_id": id])
        return HTTPResponse(status: 204)
    }

    /// `POST /v1/owners/{owner}/pairing-codes`.
    func createPairingCode(_ owner: OwnerID) throws(RelayError) -> HTTPResponse {
        let code = PairingCode(random: random)
        let t = now()
        let expiresAt = t + Int64(configuration.pairingCodeLifetimeSeconds) * 1000
        do { try storage.addPairingCode(hash: code.hash, owner: owner, expiresAt: expiresAt, now: t) } catch {
            throw storageFailure(error)
        }
        return .json(201, ["code": .string(code.display), "expiresAt": .int(expiresAt)])
    }

    /// `POST /v1/pair`: a code for a token. Failures count against the remote address.
    func pair(body: RequestBody, remote: String) throws(RelayError) -> HTTPResponse {
        if let wait = pairingFailures.retryAfter(remote) { throw .rateLimited(retryAfterSeconds: wait) }
        let request = try PairRequest.parse(body.bytes)
        let token = AccessToken(random: random)
        let id = TokenID.make(random: random)
        let owner: OwnerID?
        if let code = PairingCode(typed: request.code) {
            let placeholder = OwnerID(high: 0, low: 0)
            do {
                owner = try storage.redeemPairingCode(
                    hash: code.hash, token: NewToken(id: id, hash: token.hash, owner: placeholder, role: .owner, device: request.device),
                    now: now())
            } catch { throw storageFailure(error) }
        } else {
            owner = nil
        }
        guard let owner else {
            pairingFailures.recordFailure(remote)
            logger.notice("a pairing attempt failed", ["remote": remote])
            throw .unauthorized("the pairing code is wrong, expired or already used")
        }
        logger.notice("paired a device", ["owner": owner.description, "token_id": id])
        return .json(200, ["owner": .string(owner.description), "token": .string(token.text), "tokenId": .string(id)])
    }
}

/// The body of `POST /v1/pair`: `{"code": "...", "device": "name"}`. Pure.
public struct PairRequest: Sendable, Equatable {
    public var code: String
    public var device: String
    public static let maxDeviceBytes = 64

    /// - Throws: `RelayError.badRequest` for other shapes, a code over 64 characters, or a device
    ///   name that is empty, over 64 bytes or holds control characters.
    public static func parse(_ bytes: [UInt8]) throws(RelayError) -> PairRequest {
        let value = try WireJSON.parseObject(bytes, maxBytes: 4096)
        guard let object = value.objectValue else { throw WireJSON.shape("the body must be a JSON object") }
        for key in object.keys where key != "code" && key != "device" {
            throw WireJSON.shape("unknown member \"\(key.prefix(40))\"; the body is {\"code\": ..., \"device\": ...}")
        }
        guard let code = object["code"]?.stringValue, code.utf8.count <= 64 else {
            throw WireJSON.shape("\"code\" must be the pairing code as a string")
        }
        guard let device = object["device"]?.stringValue, DeviceName.isValidName(device) else {
            throw WireJSON.shape("\"device\" must be a name of 1 to \(maxDeviceBytes) bytes without control characters")
        }
        return PairRequest(code: code, device: device)
    }
}

/// Device names shown in token listings.
public enum DeviceName {
    /// 1 to 64 UTF-8 bytes without control characters.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= PairRequest.maxDeviceBytes
            && !name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}
