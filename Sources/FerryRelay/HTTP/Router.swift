import FerrySync

/// Resolves a method and a path to an `Endpoint`. Pure: the route table of the wire API.
public enum Router {
    /// The endpoint for `method` on `path`.
    /// - Throws: `RelayError.notFound` for a path outside the API, `.methodNotAllowed` (with the
    ///   allowed methods) for a known path, `.badRequest` for an owner id that is not 32
    ///   lowercase hex digits, a blob key that is not 64, or a token id that is not 16.
    public static func resolve(method: String, path: String) throws(RelayError) -> Endpoint {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let parts = Array(segments)
        func allow(_ methods: [String], _ pick: (String) -> Endpoint?) throws(RelayError) -> Endpoint {
            // HEAD is answered wherever GET is.
            let m = method == "HEAD" && methods.contains("GET") && !methods.contains("HEAD") ? "GET" : method
            if methods.contains(m), let endpoint = pick(m) { return endpoint }
            throw .methodNotAllowed(allowed: methods)
        }
        if parts == ["healthz"] { return try allow(["GET"]) { _ in .health } }
        if parts == ["readyz"] { return try allow(["GET"]) { _ in .ready } }
        if parts == ["metrics"] { return try allow(["GET"]) { _ in .metrics } }
        if parts == ["v1", "pair"] { return try allow(["POST"]) { _ in .pair } }
        guard parts.count >= 3, parts[0] == "v1", parts[1] == "owners" else { throw .notFound(path: path) }
        let owner = try ownerID(String(parts[2]))
        let rest = parts.dropFirst(3)
        switch rest.first {
        case nil:
            return try allow(["GET", "DELETE"]) { $0 == "GET" ? .ownerInfo(owner) : .deleteOwner(owner) }
        case "events" where rest.count == 1:
            return try allow(["GET", "POST"]) { $0 == "GET" ? .pullEvents(owner) : .pushEvents(owner) }
        case "blobs" where rest.count >= 2:
            // Everything after blobs/ is the key, slashes included, so `../x` is a bad key (400)
            // rather than an unknown route.
            let key = rest.dropFirst().joined(separator: "/")
            guard isBlobKey(key) else {
                throw .badRequest(code: "bad_blob_key", message: "a blob key is 64 lowercase hex digits (the keyed hash a device names a sealed blob by)")
            }
            return try allow(["PUT", "GET", "HEAD", "DELETE"]) { m in
                switch m {
                case "PUT": .putBlob(owner, key: key)
                case "GET": .getBlob(owner, key: key)
                case "HEAD": .headBlob(owner, key: key)
                default: .deleteBlob(owner, key: key)
                }
            }
        case "pairing-codes" where rest.count == 1:
            return try allow(["POST"]) { _ in .createPairingCode(owner) }
        case "tokens" where rest.count == 1:
            return try allow(["GET"]) { _ in .listTokens(owner) }
        case "tokens" where rest.count == 2:
            let id = String(rest.last!)
            guard TokenID.isValid(id) else {
                throw .badRequest(code: "bad_token_id", message: "a token id is 16 lowercase hex digits")
            }
            return try allow(["DELETE"]) { _ in .revokeToken(owner, id: id) }
        default:
            throw .notFound(path: path)
        }
    }

    /// The owner id in a path: exactly 32 lowercase hex digits.
    static func ownerID(_ text: String) throws(RelayError) -> OwnerID {
        guard text.utf8.count == 32, text.utf8.allSatisfy(isLowerHex), let id = OwnerID(hex: text) else {
            throw .badRequest(code: "bad_owner", message: "an owner id is 32 lowercase hex digits")
        }
        return id
    }

    /// True for exactly 64 lowercase hex digits.
    public static func isBlobKey(_ key: String) -> Bool {
        key.utf8.count == 64 && key.utf8.allSatisfy(isLowerHex)
    }

    static func isLowerHex(_ c: UInt8) -> Bool {
        (48...57).contains(c) || (97...102).contains(c)
    }
}
