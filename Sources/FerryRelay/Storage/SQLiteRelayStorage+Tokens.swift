import FerrySQLite
import FerrySync

extension SQLiteRelayStorage {
    public func addToken(_ token: NewToken, now: Int64) throws(RelayStorageError) {
        try locked("adding a token", write: true) { try insertToken(token, now: now) }
    }

    func insertToken(_ token: NewToken, now: Int64) throws {
        guard try usageUnlocked(token.owner) != nil else { throw RelayStorageError.unknownOwner(token.owner) }
        let t = try db.cached("INSERT INTO tokens(id, hash, device, created_at) VALUES (?, ?, ?, ?)")
        t.bind(1, token.id); t.bind(2, blob: token.hash); t.bind(3, token.device); t.bind(4, now)
        try t.run()
        let g = try db.cached("INSERT INTO grants(token_id, owner, role) VALUES (?, ?, ?)")
        g.bind(1, token.id); g.bind(2, blob: token.owner.bytes); g.bind(3, token.role.rawValue)
        try g.run()
    }

    public func authenticate(tokenHash: [UInt8], now: Int64) throws(RelayStorageError) -> Authenticated? {
        try locked("authenticating") {
            let s = try db.cached("""
                SELECT t.id, t.last_used_at, g.owner, g.role FROM tokens t JOIN grants g ON g.token_id = t.id
                WHERE t.hash = ? AND t.revoked_at IS NULL
                """)
            s.bind(1, blob: tokenHash)
            var id: String?
            var lastUsed: Int64?
            var grants: [OwnerID: Role] = [:]
            while try s.step() {
                id = s.text(0)
                lastUsed = s.isNull(1) ? nil : s.int64(1)
                if let ownerBytes = s.bytes(2), ownerBytes.count == 16, let role = Role(rawValue: s.text(3) ?? "") {
                    grants[OwnerID(bytes: ownerBytes)] = role
                }
            }
            s.resetKeepingBindings()
            guard let id else { return nil }
            // A write per request would serialize every reader behind the writer; a minute's
            // precision is what a listing needs.
            if lastUsed.map({ now - $0 >= 60_000 }) ?? true {
                let u = try db.cached("UPDATE tokens SET last_used_at = ? WHERE id = ?")
                u.bind(1, now); u.bind(2, id)
                try u.run()
            }
            return Authenticated(tokenID: id, grants: grants)
        }
    }

    public func tokens(of owner: OwnerID) throws(RelayStorageError) -> [TokenInfo] {
        try locked("listing tokens") {
            let s = try db.cached("""
                SELECT t.id, t.device, g.role, t.created_at, t.last_used_at FROM grants g JOIN tokens t ON t.id = g.token_id
                WHERE g.owner = ? AND t.revoked_at IS NULL ORDER BY t.created_at, t.id
                """)
            s.bind(1, blob: owner.bytes)
            defer { s.resetKeepingBindings() }
            var out: [TokenInfo] = []
            while try s.step() {
                out.append(TokenInfo(id: s.text(0) ?? "", device: s.text(1) ?? "", role: Role(rawValue: s.text(2) ?? "") ?? .viewer,
                                     createdAt: s.int64(3), lastUsedAt: s.isNull(4) ? nil : s.int64(4)))
            }
            return out
        }
    }

    public func revokeToken(_ id: String, owner: OwnerID, now: Int64) throws(RelayStorageError) -> Bool {
        try locked("revoking a token", write: true) {
            let s = try db.cached("""
                UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL
                AND EXISTS (SELECT 1 FROM grants WHERE token_id = ? AND owner = ?)
                """)
            s.bind(1, now); s.bind(2, id); s.bind(3, id); s.bind(4, blob: owner.bytes)
            try s.run()
            return db.changes > 0
        }
    }

    public func addPairingCode(hash: [UInt8], owner: OwnerID, expiresAt: Int64, now: Int64) throws(RelayStorageError) {
        try locked("adding a pairing code", write: true) {
            // Expired and used codes are of no further use: drop them on the way.
            let d = try db.cached("DELETE FROM pairing_codes WHERE expires_at < ? OR used_at IS NOT NULL")
            d.bind(1, now)
            try d.run()
            let s = try db.cached("INSERT INTO pairing_codes(hash, owner, created_at, expires_at) VALUES (?, ?, ?, ?)")
            s.bind(1, blob: hash); s.bind(2, blob: owner.bytes); s.bind(3, now); s.bind(4, expiresAt)
            try s.run()
        }
    }

    public func redeemPairingCode(hash: [UInt8], token: NewToken, now: Int64) throws(RelayStorageError) -> OwnerID? {
        try locked("redeeming a pairing code", write: true) {
            let s = try db.cached("""
                UPDATE pairing_codes SET used_at = ? WHERE hash = ? AND used_at IS NULL AND expires_at > ? RETURNING owner
                """)
            s.bind(1, now); s.bind(2, blob: hash); s.bind(3, now)
            guard try s.step(), let ownerBytes = s.bytes(0), ownerBytes.count == 16 else {
                s.resetKeepingBindings()
                return nil
            }
            s.resetKeepingBindings()
            let owner = OwnerID(bytes: ownerBytes)
            var token = token
            token.owner = owner
            try insertToken(token, now: now)
            return owner
        }
    }
}
