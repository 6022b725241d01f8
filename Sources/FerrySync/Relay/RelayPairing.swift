import FerryJSON
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Pairing with a relay: a device that holds a token asks for a short-lived one-time code; a
/// new device redeems the code for a token of its own.
public enum RelayPairing {
    /// What redeeming a code gave.
    public struct Grant: Sendable {
        public var owner: OwnerID
        public var token: String
    }

    /// Asks the relay for a one-time pairing code for `owner`, with `token`.
    /// - Returns: the code and when it expires (Unix milliseconds).
    public static func code(url: URL, owner: OwnerID, token: String) async throws(TransportFailure) -> (code: String, expiresAt: Int64) {
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
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
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let http = RelayHTTP(base: url, token: nil, session: session)
        let reply = try await http.send(http.request("POST", "v1/pair", json: .object(["code": .string(code), "device": .string(device)])),
                                        what: "redeeming the pairing code")
        guard let parsed = try? JSONParser.parse([UInt8](reply.body)), let ownerText = parsed["owner"]?.stringValue,
              let owner = ID128(hex: ownerText), let token = parsed["token"]?.stringValue else {
            throw .unavailable("redeeming the pairing code: the relay answered HTTP \(reply.status) without a token")
        }
        return Grant(owner: owner, token: token)
    }
}
