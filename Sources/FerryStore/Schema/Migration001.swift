extension Schema {
    /// Version 1: spaces, records, change log, outbox, transports, progress, losing versions,
    /// attachments and engine state.
    static let migration001 = """
    -- Engine state: node id, clock, schema-independent settings ('setting:<name>').
    CREATE TABLE engine_state (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID;

    -- A space is one dataset with its own owner, keys, transports and progress.
    CREATE TABLE spaces (
        sid        INTEGER PRIMARY KEY,
        name       TEXT NOT NULL UNIQUE,
        kind       TEXT NOT NULL CHECK (kind IN ('private', 'shared')),
        owner_id   TEXT,
        created_at INTEGER NOT NULL -- unix milliseconds
    );

    -- The current version of every record. Tombstones stay (deleted = 1, payload NULL) so that
    -- their stamps keep older versions from coming back.
    CREATE TABLE records (
        rid         INTEGER PRIMARY KEY,
        sid         INTEGER NOT NULL REFERENCES spaces(sid),
        entity      TEXT NOT NULL,
        id          TEXT NOT NULL,
        hlc         TEXT NOT NULL,
        deleted     INTEGER NOT NULL,
        payload     TEXT,
        attachments TEXT,          -- JSON array of lowercase hex SHA-256, NULL when none
        seq         INTEGER NOT NULL -- the change-log sequence number of the latest change
    );
    CREATE UNIQUE INDEX records_by_key ON records (sid, entity, id);
    -- List(order: stamp) pages through this without sorting.
    CREATE INDEX records_by_stamp ON records (sid, entity, hlc, id);

    -- The local change log: one row per applied change, local or remote, in a strictly
    -- increasing sequence that notifications resume from. origin: 'local', 'remote:<t>', 'import:<s>'.
    CREATE TABLE changes (
        seq    INTEGER PRIMARY KEY,
        rid    INTEGER NOT NULL,
        sid    INTEGER NOT NULL,
        origin TEXT NOT NULL
    );

    -- The durable outbox: one entry per record with a version some transport still needs.
    -- What is sent is always built from the record's current version.
    CREATE TABLE outbox (
        rid       INTEGER PRIMARY KEY,
        sid       INTEGER NOT NULL,
        hlc       TEXT NOT NULL,      -- the version that must reach every transport
        seq       INTEGER NOT NULL,   -- when it was (re)queued; the order of sending
        queued_at INTEGER NOT NULL  -- unix milliseconds
    );
    CREATE INDEX outbox_by_space ON outbox (sid, seq);

    -- Per transport: what it acknowledged, or the error it rejected a version with.
    CREATE TABLE outbox_delivery (
        rid        INTEGER NOT NULL,
        transport  TEXT NOT NULL,
        acked_hlc  TEXT,
        error      TEXT,
        error_hlc  TEXT,
        updated_at INTEGER NOT NULL, -- unix milliseconds
        PRIMARY KEY (rid, transport)
    ) WITHOUT ROWID;

    -- The transports configured per space.
    CREATE TABLE transports (
        sid        INTEGER NOT NULL REFERENCES spaces(sid),
        name       TEXT NOT NULL,
        kind       TEXT NOT NULL,
        config     TEXT NOT NULL,
        created_at INTEGER NOT NULL, -- unix milliseconds
        PRIMARY KEY (sid, name)
    ) WITHOUT ROWID;

    -- Per-space and per-transport progress: 'push:<transport>', 'cursor:<transport>', ...
    CREATE TABLE progress (
        sid        INTEGER NOT NULL,
        key        TEXT NOT NULL,
        value      TEXT NOT NULL,
        updated_at INTEGER NOT NULL, -- unix milliseconds
        PRIMARY KEY (sid, key)
    ) WITHOUT ROWID;

    -- Versions that lost a merge, kept (bounded per record) so a user can see and restore them.
    CREATE TABLE losers (
        lid         INTEGER PRIMARY KEY,
        rid         INTEGER NOT NULL,
        hlc         TEXT NOT NULL,
        deleted     INTEGER NOT NULL,
        payload     TEXT,
        attachments TEXT,
        origin      TEXT NOT NULL,
        winner_hlc  TEXT NOT NULL,
        lost_at     INTEGER NOT NULL -- unix milliseconds
    );
    CREATE INDEX losers_by_record ON losers (rid, lid);
    CREATE UNIQUE INDEX losers_once ON losers (rid, hlc);

    -- Attachment metadata; the bytes are files named by their SHA-256 under attachments/.
    -- refs counts the current and losing versions that reference it; present = 0 while a
    -- referenced attachment has not been fetched yet.
    CREATE TABLE attachments (
        sha256     TEXT PRIMARY KEY,
        size       INTEGER NOT NULL,
        refs       INTEGER NOT NULL,
        present    INTEGER NOT NULL,
        touched_at INTEGER NOT NULL -- unix seconds of the last upload or reference
    ) WITHOUT ROWID;
    """
}
