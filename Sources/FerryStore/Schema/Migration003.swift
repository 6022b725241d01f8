extension Schema {
    /// Version 3: each transport's push progress is a cursor into the change log instead of a
    /// row per queued record (protocol.md section 11, "The outbox"). A local write no longer
    /// writes an outbox row and its index entry, and a push no longer deletes them.
    ///
    /// `sent`: every change with a seq up to it is on the transport or not needed there.
    /// `since`: the seq when the transport was added or last started over; a change it
    /// delivered itself (origin `remote:<name>`) after that is never sent back to it.
    /// A transport's cursor starts before the first entry of the old outbox it still needed,
    /// so nothing it lacked is skipped (records it had past that are sent again, which every
    /// transport answers as duplicates). Acknowledgements are in the cursors now; refusals stay.
    static let migration003 = """
    ALTER TABLE transports ADD COLUMN sent INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE transports ADD COLUMN since INTEGER NOT NULL DEFAULT 0;
    UPDATE transports SET sent = coalesce(
        (SELECT min(o.seq) - 1 FROM outbox o JOIN records r ON r.rid = o.rid
         WHERE o.sid = transports.sid
           AND NOT EXISTS (SELECT 1 FROM outbox_delivery d WHERE d.rid = o.rid AND d.transport = transports.name
                           AND (d.acked_hlc >= r.hlc OR d.error_hlc >= r.hlc))),
        (SELECT max(seq) FROM changes),
        0),
      -- What version 2 still had queued for a transport may have come from it before it
      -- started over (or from a namesake it replaced): nothing before now is skipped for it.
      since = coalesce((SELECT max(seq) FROM changes), 0);
    DELETE FROM outbox_delivery WHERE error IS NULL;
    DROP TABLE outbox;
    """
}
