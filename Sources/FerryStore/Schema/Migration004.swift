extension Schema {
    /// Version 4: indexes of the current and losing versions that reference attachments, and of
    /// tombstones. The periodic check for attachment blobs a transport lost pages through a
    /// space's records by rid; without an index SQLite took the space's stamp index and sorted
    /// every record of the space for each page of a thousand (a store of 200,000 records spent
    /// seconds of CPU on each check, one of a million would spend many minutes). Now a page is
    /// read in order, the list of missing attachments reads only the versions that reference
    /// some, and a write adds an entry only for a version that has attachments. Status counted
    /// live records and tombstones by reading every record twice (0.2 s a million, at each
    /// `ferryctl status`); it now counts all records from the key index and tombstones from
    /// theirs.
    static let migration004 = """
    CREATE INDEX records_with_attachments ON records (sid) WHERE attachments IS NOT NULL;
    CREATE INDEX losers_with_attachments ON losers (rid) WHERE attachments IS NOT NULL;
    CREATE INDEX records_tombstones ON records (sid) WHERE deleted = 1;
    """
}
