import FerrySQLite

/// The relay's SQLite schema as numbered migrations, applied in order and recorded in
/// `PRAGMA user_version`.
enum RelaySchema {
    static let migrations: [String] = [
        // 1: owners, tokens and grants, events, blobs, pairing codes.
        """
        CREATE TABLE owners (
            owner BLOB PRIMARY KEY,
            quota_bytes INTEGER,
            next_seq INTEGER NOT NULL DEFAULT 1,
            events INTEGER NOT NULL DEFAULT 0,
            event_bytes INTEGER NOT NULL DEFAULT 0,
            blobs INTEGER NOT NULL DEFAULT 0,
            blob_bytes INTEGER NOT NULL DEFAULT 0,
            last_push_at INTEGER,
            created_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE tokens (
            id TEXT PRIMARY KEY,
            hash BLOB NOT NULL UNIQUE,
            device TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            last_used_at INTEGER,
            revoked_at INTEGER
        );
        -- What each token may do on which owner: one row per (token, owner), so member roles
        -- (editor, viewer) and tokens spanning owners fit without a schema change.
        CREATE TABLE grants (
            token_id TEXT NOT NULL REFERENCES tokens(id),
            owner BLOB NOT NULL REFERENCES owners(owner),
            role TEXT NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
            PRIMARY KEY (token_id, owner)
        ) WITHOUT ROWID;
        CREATE INDEX grants_by_owner ON grants(owner);
        -- The current version of each stream; seq grows per owner and is never reused. (Keyed
        -- by `oid` instead of `owner` since version 3.)
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            owner BLOB NOT NULL,
            seq INTEGER NOT NULL,
            event BLOB NOT NULL,
            stream BLOB NOT NULL,
            stamp BLOB NOT NULL,
            deleted INTEGER NOT NULL,
            stored_at INTEGER NOT NULL,
            data BLOB NOT NULL,
            UNIQUE (owner, seq),
            UNIQUE (owner, stream),
            UNIQUE (owner, event)
        );
        CREATE INDEX events_tombstones ON events(stored_at) WHERE deleted = 1;
        CREATE TABLE blobs (
            owner BLOB NOT NULL,
            key TEXT NOT NULL,
            size INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (owner, key)
        ) WITHOUT ROWID;
        CREATE TABLE pairing_codes (
            hash BLOB PRIMARY KEY,
            owner BLOB NOT NULL REFERENCES owners(owner),
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            used_at INTEGER
        ) WITHOUT ROWID;
        """,
        // 2: the owner's cursor offset: cursors on the wire are seq + cursor_offset. Raised past
        // every cursor handed out before when a pull shows the relay was restored from an older
        // backup, so every such cursor is refused from then on (RelayStorage.pull).
        """
        ALTER TABLE owners ADD COLUMN cursor_offset INTEGER NOT NULL DEFAULT 0;
        """,
        // 3: events keyed by a small integer per owner (`oid`) instead of the 16-byte owner id:
        // every index entry of `events` starts with the owner, so the three unique indexes
        // shrink by 15 bytes an entry and compare one integer instead of 16 equal bytes, which
        // makes a push about a quarter cheaper. The owner id stays in `owners` (and `blobs`,
        // `grants`, `pairing_codes`).
        """
        ALTER TABLE owners ADD COLUMN oid INTEGER;
        UPDATE owners SET oid = numbered.n
          FROM (SELECT owner, row_number() OVER (ORDER BY owner) AS n FROM owners) AS numbered
          WHERE numbered.owner = owners.owner;
        CREATE UNIQUE INDEX owners_by_oid ON owners(oid);
        CREATE TABLE events_by_oid (
            id INTEGER PRIMARY KEY,
            oid INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            event BLOB NOT NULL,
            stream BLOB NOT NULL,
            stamp BLOB NOT NULL,
            deleted INTEGER NOT NULL,
            stored_at INTEGER NOT NULL,
            data BLOB NOT NULL,
            UNIQUE (oid, seq),
            UNIQUE (oid, stream),
            UNIQUE (oid, event)
        );
        INSERT INTO events_by_oid (id, oid, seq, event, stream, stamp, deleted, stored_at, data)
          SELECT e.id, o.oid, e.seq, e.event, e.stream, e.stamp, e.deleted, e.stored_at, e.data
          FROM events e JOIN owners o ON o.owner = e.owner ORDER BY e.id;
        DROP TABLE events;
        ALTER TABLE events_by_oid RENAME TO events;
        CREATE INDEX events_tombstones ON events(stored_at) WHERE deleted = 1;
        """,
        // 4: when a device last stored each blob or looked for it (unix milliseconds): a
        // request to remove a blob used within BlobDeleteGraceSeconds is refused.
        """
        ALTER TABLE blobs ADD COLUMN used_at INTEGER NOT NULL DEFAULT 0;
        UPDATE blobs SET used_at = created_at;
        """,
    ]

    /// The version the migrations lead to.
    static var latestVersion: Int { migrations.count }

    /// Brings `db` to the latest version.
    /// - Throws: `RelaySchemaTooNew` for a database of a newer ferry-relay (left as it is), or
    ///   SQLite's error.
    static func migrate(_ db: Database) throws {
        let current = Int(try db.scalarInt("PRAGMA user_version") ?? 0)
        if current > latestVersion { throw RelaySchemaTooNew(found: current, known: latestVersion) }
        try db.execute("PRAGMA journal_mode=WAL")
        guard current < migrations.count else { return }
        try db.transaction {
            for (index, sql) in migrations.enumerated() where index >= current {
                try db.execute(sql)
            }
            try db.execute("PRAGMA user_version = \(migrations.count)")
        }
    }
}
