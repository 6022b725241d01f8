import FerryPostgres

/// The relay's PostgreSQL schema as numbered migrations, applied in order at start and recorded
/// in `relay_schema`. The same tables as `RelaySchema` (SQLite), plus `blob_chunks`: with
/// PostgreSQL the relays sharing a database need not share a file system, so blob bytes live in
/// the database too.
enum PostgresRelaySchema {
    /// `pg_advisory_xact_lock` key serializing migrations of relays that start at once ("ferryrly").
    static let migrationLock: Int64 = 0x6665_7272_7972_6C79

    static let migrations: [String] = [
        // 1: owners, tokens and grants, events, blobs and their bytes, pairing codes.
        """
        CREATE TABLE owners (
            owner BYTEA PRIMARY KEY,
            quota_bytes BIGINT,
            next_seq BIGINT NOT NULL DEFAULT 1,
            events BIGINT NOT NULL DEFAULT 0,
            event_bytes BIGINT NOT NULL DEFAULT 0,
            blobs BIGINT NOT NULL DEFAULT 0,
            blob_bytes BIGINT NOT NULL DEFAULT 0,
            last_push_at BIGINT,
            created_at BIGINT NOT NULL
        );
        CREATE TABLE tokens (
            id TEXT PRIMARY KEY,
            hash BYTEA NOT NULL UNIQUE,
            device TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            last_used_at BIGINT,
            revoked_at BIGINT
        );
        CREATE TABLE grants (
            token_id TEXT NOT NULL REFERENCES tokens(id),
            owner BYTEA NOT NULL REFERENCES owners(owner),
            role TEXT NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
            PRIMARY KEY (token_id, owner)
        );
        CREATE INDEX grants_by_owner ON grants(owner);
        -- The current version of each stream; seq grows per owner and is never reused (taken
        -- from owners.next_seq while the push holds the owner's row lock).
        CREATE TABLE events (
            id BIGSERIAL PRIMARY KEY,
            owner BYTEA NOT NULL,
            seq BIGINT NOT NULL,
            event BYTEA NOT NULL,
            stream BYTEA NOT NULL,
            stamp BYTEA NOT NULL,
            deleted BOOLEAN NOT NULL,
            stored_at BIGINT NOT NULL,
            data BYTEA NOT NULL,
            UNIQUE (owner, seq),
            UNIQUE (owner, stream),
            UNIQUE (owner, event)
        );
        -- Sealed envelopes do not compress: store them out of line without trying.
        ALTER TABLE events ALTER COLUMN data SET STORAGE EXTERNAL;
        CREATE INDEX events_tombstones ON events(stored_at) WHERE deleted;
        CREATE TABLE blobs (
            owner BYTEA NOT NULL,
            key TEXT NOT NULL,
            size BIGINT NOT NULL,
            created_at BIGINT NOT NULL,
            PRIMARY KEY (owner, key)
        );
        -- Blob bytes in pieces of at most PostgresBlobStore.chunkBytes, by byte offset.
        CREATE TABLE blob_chunks (
            owner BYTEA NOT NULL,
            key TEXT NOT NULL,
            start BIGINT NOT NULL,
            data BYTEA NOT NULL,
            PRIMARY KEY (owner, key, start)
        );
        ALTER TABLE blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
        CREATE TABLE pairing_codes (
            hash BYTEA PRIMARY KEY,
            owner BYTEA NOT NULL REFERENCES owners(owner),
            created_at BIGINT NOT NULL,
            expires_at BIGINT NOT NULL,
            used_at BIGINT
        );
        """,
        // 2: the owner's cursor offset, as in SQLite's migration 2.
        """
        ALTER TABLE owners ADD COLUMN cursor_offset BIGINT NOT NULL DEFAULT 0;
        """,
        // 3: events keyed by (owner, seq), which a push deletes replaced rows by, instead of a
        // BIGSERIAL id used for nothing else: one index and one nextval fewer per stored event.
        """
        ALTER TABLE events DROP CONSTRAINT events_pkey, DROP COLUMN id, DROP CONSTRAINT events_owner_seq_key,
            ADD PRIMARY KEY (owner, seq);
        """,
        // 4: when a device last stored each blob or looked for it, as in SQLite's migration 4.
        """
        ALTER TABLE blobs ADD COLUMN used_at BIGINT NOT NULL DEFAULT 0;
        UPDATE blobs SET used_at = created_at;
        """,
    ]

    /// The version the migrations lead to.
    static var latestVersion: Int { migrations.count }

    /// Brings the database to the latest version. Idempotent, and safe when several relays start
    /// at once: the whole migration runs in one transaction under an advisory lock.
    /// - Throws: `RelaySchemaTooNew` for a database of a newer ferry-relay (left as it is), or
    ///   PostgreSQL's error.
    static func migrate(_ db: PostgresConnection) throws {
        try db.transaction {
            try db.execute("SELECT pg_advisory_xact_lock($1)", [.int(migrationLock)])
            try db.execute("CREATE TABLE IF NOT EXISTS relay_schema (version BIGINT NOT NULL)")
            let current = Int(try db.execute("SELECT COALESCE(MAX(version), 0)::bigint FROM relay_schema").int64(0, 0))
            if current > latestVersion { throw RelaySchemaTooNew(found: current, known: latestVersion) }
            guard current < migrations.count else { return }
            for (index, sql) in migrations.enumerated() where index >= current {
                try db.executeScript(sql)
            }
            try db.execute("DELETE FROM relay_schema")
            try db.execute("INSERT INTO relay_schema(version) VALUES ($1)", [.int(Int64(migrations.count))])
        }
    }
}
