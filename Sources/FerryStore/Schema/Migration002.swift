extension Schema {
    /// Version 2: the change log keeps one row per record, its latest change (protocol.md
    /// section 10). Rows an earlier version kept for superseded changes go; readers skipped
    /// them anyway.
    static let migration002 = """
    DELETE FROM changes WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.rid = changes.rid AND r.seq = changes.seq);
    """
}
