extension Schema {
    /// Version 6: attachment blobs to remove from transports (`blob_deletions`). When the last
    /// current or losing version of a space that references an attachment goes (a delete, an
    /// edit that drops it, a loser pruned), each transport of the space gets a row; the engine
    /// removes the blob from that transport once the row is older than the blob retention and
    /// the transport's pull has caught up, and drops the row. A new reference in the space drops
    /// its rows at once, so a blob still in use is never removed by this device.
    static let migration006 = """
    CREATE TABLE blob_deletions (
        sid       INTEGER NOT NULL,
        sha256    TEXT NOT NULL,
        transport TEXT NOT NULL,
        since     INTEGER NOT NULL, -- unix seconds the space's last reference went
        PRIMARY KEY (sid, sha256, transport)
    ) WITHOUT ROWID;
    """
}
