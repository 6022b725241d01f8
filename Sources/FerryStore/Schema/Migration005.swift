extension Schema {
    /// Version 5: per space, how many of its current and losing versions reference each
    /// attachment (`attachment_refs`), and an index of the attachments that are referenced but
    /// not here (`attachments_missing`). The list of missing attachments read every version of
    /// the space that references any for each page of a hundred: a device that joined a space
    /// of 100,000 records whose blobs had not come yet spent about 0.3 s of CPU a page and a
    /// thousand pages a look, and it looks again every few minutes until they come. A page now
    /// reads the missing attachments in order from their index and looks each one up among the
    /// space's references. The counts start from the versions the store holds.
    static let migration005 = """
    CREATE TABLE attachment_refs (
        sha256 TEXT NOT NULL,
        sid    INTEGER NOT NULL,
        refs   INTEGER NOT NULL,
        PRIMARY KEY (sha256, sid)
    ) WITHOUT ROWID;
    INSERT INTO attachment_refs (sha256, sid, refs)
    SELECT sha256, sid, count(*) FROM (
        SELECT j.value AS sha256, r.sid AS sid FROM records r, json_each(r.attachments) j
        WHERE r.attachments IS NOT NULL
        UNION ALL
        SELECT j.value, r.sid FROM losers l JOIN records r ON r.rid = l.rid, json_each(l.attachments) j
        WHERE l.attachments IS NOT NULL)
    GROUP BY sha256, sid;
    CREATE INDEX attachments_missing ON attachments (sha256) WHERE present = 0 AND refs > 0;
    """
}
