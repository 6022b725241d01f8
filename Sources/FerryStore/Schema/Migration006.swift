extension Schema {
    /// Version 6: attachment blobs to remove from transports (`blob_deletions`), and per space
    /// the count of current versions that reference each attachment (`attachment_refs.current`,
    /// besides `refs`, which counts losing versions too). When the last current version of a
    /// space that references an attachment goes (a delete, an edit that drops it), each
    /// transport of the space gets a row; the engine removes the blob from that transport once
    /// the row is older than the blob retention and the transport's pull has caught up, and
    /// drops the row. A new current reference in the space drops its rows at once, so a blob in
    /// use is never removed by this device. Losing versions do not keep blobs on transports:
    /// they are this device's history, whose bytes stay here. Attachments that only losing
    /// versions referenced when the store was upgraded are noted now.
    static let migration006 = """
    CREATE TABLE blob_deletions (
        sid       INTEGER NOT NULL,
        sha256    TEXT NOT NULL,
        transport TEXT NOT NULL,
        since     INTEGER NOT NULL, -- unix seconds the space's last current reference went
        PRIMARY KEY (sid, sha256, transport)
    ) WITHOUT ROWID;
    ALTER TABLE attachment_refs ADD COLUMN current INTEGER NOT NULL DEFAULT 0;
    UPDATE attachment_refs SET current = c.n
    FROM (SELECT j.value AS sha256, r.sid AS sid, count(*) AS n FROM records r, json_each(r.attachments) j
          WHERE r.attachments IS NOT NULL GROUP BY 1, 2) AS c
    WHERE c.sha256 = attachment_refs.sha256 AND c.sid = attachment_refs.sid;
    INSERT INTO blob_deletions (sid, sha256, transport, since)
    SELECT a.sid, a.sha256, t.name, CAST(unixepoch() AS INTEGER) FROM attachment_refs a JOIN transports t ON t.sid = a.sid
    WHERE a.current = 0;
    """
}
