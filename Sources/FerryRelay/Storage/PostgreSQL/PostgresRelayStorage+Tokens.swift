import FerryPostgres
import FerrySync

extension PostgresRelayStorage {
    public func addToken(_ token: NewToken, now: Int64) throws(RelayStorageError) {
        try run("adding a token", write: true) { db in try insertToken(db, token, now: now) }
    }

    func insertToken(_ db: PostgresConnection, _ token: NewToken, now: Int64) throws {
        let o = PostgresValue.bytes(token.owner.bytes)
        guard try db.execute("SELECT 1 FROM owners WHERE owner = $1", [o]).count > 0 else {
            throw RelayStorageError.unknownOwner(token.owner)
        }
        try db.execute("INSERT INTO tokens(id, hash, device, created_at) VALUES ($1, $2, $3, $4)",
                       [.text(token.id), .bytes(token.hash), .text(token.device), .int(now)])
        try db.execute("INSERT INTO grants(token_id, owner, role) VALUES ($1, $2, $3)", [.text(token.id), o, .text(token.role.rawValue)])
    }

    public func authenticate(tokenHash: [UInt8], now: Int64) throws(RelayStorageError) -> Authenticated? {
        try run("authenticating") { db in
            let r = try db.execute("""
                SELECT t.id, t.last_used_at, g.owner, g.role FROM tokens t JOIN grants g ON g.token_id = t.id
                WHERE t.hash = $1 AND t.revoked_at IS NULL
                """, [.bytes(tokenHash)])
            var id: String?
            var lastUsed: Int64?
            var grants: [OwnerID: Role] = [:]
            for row in 0..<r.count {
                id = r.text(row, 0)
                lastUsed = r.optionalInt64(row, 1)
                if let ownerBytes = r.bytes(row, 2), ownerBytes.count == 16, let role = Role(rawValue: r.text(row, 3) ?? "") {
                    grants[OwnerID(bytes: ownerBytes)] = role
                }
            }
            guard let id else { return nil }
            // A write per request would cost a commit each; a minute's precision is what a listing needs.
            if lastUsed.map({ now - $0 >= 60_000 }) ?? true {
                try db.execute("UPDATE tokens SET last_used_at = $1 WHERE id = $2", [.int(now), .text(id)])
            }
            return Authenticated(tokenID: id, grants: grants)
        }
    }

    public func tokens(of owner: OwnerID) throws(RelayStorageError) -> [TokenInfo] {
        try run("listing tokens") { db in
            let r = try db.execute("""
                SELECT t.id, t.device, g.role, t.created_at, t.last_used_at FROM grants g JOIN tokens t ON t.id = g.token_id
                WHERE g.owner = $1 AND t.revoked_at IS NULL ORDER BY t.created_at, t.id
                """, [.bytes(owner.bytes)])
            return (0..<r.count).map { row in
                TokenInfo(id: r.text(row, 0) ?? "", device: r.text(row, 1) ?? "", role: Role(rawValue: r.text(row, 2) ?? "") ?? .viewer,
                          createdAt: r.int64(row, 3), lastUsedAt: r.optionalInt64(row, 4))
            }
        }
    }

    public func revokeToken(_ id: String, owner: OwnerID, now: Int64) throws(RelayStorageError) -> Bool {
        try run("revoking a token") { db in
            try db.execute("""
                UPDATE tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL
                AND EXISTS (SELECT 1 FROM grants WHERE token_id = $2 AND owner = $3)
                """, [.int(now), .text(id), .bytes(owner.bytes)]).affectedRows > 0
        }
    }

    public func addPairingCode(hash: [UInt8], owner: OwnerID, expiresAt: Int64, now: Int64) throws(RelayStorageError) {
        try run("adding a pairing code", write: true) { db in
            // Expired and used codes are of no further use: drop them on the way.
            try db.execute("DELETE FROM pairing_codes WHERE expires_at < $1 OR used_at IS NOT NULL", [.int(now)])
            try db.execute("INSERT INTO pairing_codes(hash, owner, created_at, expires_at) VALUES ($1, $2, $3, $4)",
                           [.bytes(hash), .bytes(owner.bytes), .int(now), .int(expiresAt)])
        }
    }

    public func redeemPairingCode(hash: [UInt8], token: NewToken, now: Int64) throws(RelayStorageError) -> OwnerID? {
        try run("redeeming a pairing code", write: true) { db in
            // The row lock makes a second relay redeeming the same code wait, then find it used.
            let r = try db.execute("""
                UPDATE pairing_codes SET used_at = $1 WHERE hash = $2 AND used_at IS NULL AND expires_at > $1 RETURNING owner
                """, [.int(now), .bytes(hash)])
            guard r.count == 1, let ownerBytes = r.bytes(0, 0), ownerBytes.count == 16 else { return nil }
            let owner = OwnerID(bytes: ownerBytes)
            var token = token
            token.owner = owner
            try insertToken(db, token, now: now)
            return owner
        }
    }
}
