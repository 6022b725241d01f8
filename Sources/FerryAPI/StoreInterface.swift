/// The definition of `io.ferry.Store`, as served by `GetInterfaceDescription`. This text is the
/// contract other implementations rely on; `docs/api.md` explains it with examples.
public enum StoreInterface {
    public static let name = "io.ferry.Store"

    public static let definition = """
    # Ferry's record store: write, read, query and watch records, and move attachments.
    #
    # Every record method takes an optional space; without one it acts on the device's
    # private space ("private"). Writes are durable when the call returns. Errors carry
    # a human-readable "message" that says what to do next.
    interface io.ferry.Store

    # One version of a record.
    type Record (
      # The space the record lives in.
      space: string,
      # The entity kind, [a-z][a-z0-9_.-]{0,63}.
      entity: string,
      # The record's id: 1 to 128 Unicode code points, none of them U+0000-U+001F or
      # U+007F; compared bytewise, exactly as given.
      id: string,
      # The version stamp, YYYY-MM-DDTHH:MM:SS.sssZ-CCCC-NNNNNNNNNNNNNNNN.
      hlc: string,
      # True for a tombstone (a deleted record).
      deleted: bool,
      # The record's JSON object, exactly as written; absent for tombstones, and in the
      # records PutMany returns.
      payload: ?object,
      # Lowercase hex SHA-256 of the attachments it references.
      attachments: []string,
      # The change-log sequence number of the change that made this version current
      # (0 for a LosingVersion's record, which is not current).
      seq: int
    )

    # One record of a PutMany batch.
    type PutItem (
      entity: string,
      # Absent: a new record with a new upper-case UUID.
      id: ?string,
      payload: object,
      attachments: ?[]string
    )

    # A version that lost a merge, kept so it can be seen and restored.
    type LosingVersion (
      record: Record,
      # Where it came from: "local", "remote:<transport>" or "import:<source>".
      origin: string,
      # The stamp of the version it lost to.
      winner: string,
      # When it lost, in Unix milliseconds.
      lostAt: int
    )

    # Writes a new version of one record (a new record when id is absent or unknown).
    method Put(space: ?string, entity: string, id: ?string, payload: object, attachments: ?[]string) -> (record: Record)

    # Writes many records in one transaction: all of them, or on any error none. The
    # records come back without their payloads (the caller has them). A batch whose reply
    # would not fit in one message is refused (InvalidArgument) before it is written.
    method PutMany(space: ?string, records: []PutItem) -> (records: []Record)

    # Reads the current version of a record (a tombstone if deleted); record is absent if unknown.
    method Get(space: ?string, entity: string, id: string) -> (record: ?Record)

    # Deletes a record: writes a tombstone with a new stamp. Deleting a tombstone returns it.
    method Delete(space: ?string, entity: string, id: string) -> (record: Record)

    # Lists the records of one entity kind, a page at a time. Pass the returned next as
    # after to read the following page; stop when next is absent, not when a page is short.
    # order is "id" (default) or "stamp"; by stamp, a record changed while pages are read
    # comes again on a later page, at its new stamp. where keeps the records whose top-level
    # payload fields equal the given JSON scalars, e.g. {"done": false} (null matches a
    # field that is null, not a missing one). limit is 1 to 1000 (default 100); a page of
    # large records holds fewer (it stops at 8 MiB of record text, after at least one record).
    method List(space: ?string, entity: string, after: ?string, limit: ?int, includeDeleted: ?bool,
                where: ?object, order: ?string) -> (records: []Record, next: ?string)

    # Follows changes; call with "more". The first reply carries no record and the cursor the
    # stream starts after: since when given, else the newest change's. Then one reply per
    # changed record, with the record at its latest version and that change's cursor: what
    # changed after since comes first (each record once, at its latest change; the changes
    # it superseded are not replayed), then each change as it is made. Pass a cursor as since
    # to resume after it, across daemon restarts, with nothing skipped. spaces defaults to the
    # private space; ["*"] (alone) follows every space. A watcher that falls too far behind gets
    # ResumeFromCursor and must call again with since set to its cursor.
    method Watch(since: ?int, spaces: ?[]string, entities: ?[]string) -> (cursor: int, record: ?Record)

    # Stores a file as an attachment: data (base64, up to 8 MiB) inline, or the path of a
    # file this user can read (streamed, up to MaxAttachmentBytes in ferryd.conf: 1 GiB by
    # default). sha256, when given, must match.
    method PutAttachment(data: ?string, path: ?string, sha256: ?string) -> (sha256: string, size: int)

    # Reads an attachment: inline (base64) when it is at most maxInline bytes (0 to 8 MiB,
    # default 1 MiB), otherwise the path of the daemon's own file of it (mode 0400: read or
    # copy it, never change it). AttachmentMissing while its bytes are not here: a record from
    # another device may arrive before its attachment, which the sync engine keeps fetching;
    # Watch does not announce its arrival, so call again later.
    method GetAttachment(sha256: string, maxInline: ?int) -> (sha256: string, size: int, data: ?string, path: ?string)

    # The versions of a record that lost a merge on this device, newest first (the newest
    # ConflictHistory of them, 10 by default; as many as fit in one message). A device keeps
    # the versions that lost merges it made itself: one that only received the winner has none.
    method Conflicts(space: ?string, entity: string, id: string) -> (versions: []LosingVersion)

    # Makes a losing version current again, as a new version that wins everywhere.
    method RestoreConflict(space: ?string, entity: string, id: string, hlc: string) -> (record: Record)

    # Errors about one record of a PutMany of several carry `index`, its place in `records`
    # (from 0), and a message that starts "records[index]: ".

    # The entity name is not [a-z][a-z0-9_.-]{0,63}.
    error InvalidEntity (entity: string, message: string, index: ?int)
    # The id is empty, over 128 code points, or has a code point U+0000-U+001F or U+007F.
    error InvalidID (entity: string, id: string, message: string, index: ?int)
    # A stamp is malformed.
    error InvalidStamp (hlc: string, message: string)
    # The payload object is not acceptable: a duplicate key, a number out of range, too deep,
    # or a tombstone with one. (A payload that is not an object at all is
    # org.varlink.service.InvalidParameter "payload", as its type says.)
    error InvalidPayload (entity: string, id: string, message: string, index: ?int)
    # The payload is over the size limit.
    error PayloadTooLarge (entity: string, id: string, size: int, limit: int, message: string, index: ?int)
    # An attachment reference is not a lowercase hex SHA-256.
    error InvalidAttachmentReference (entity: string, id: string, reference: string, message: string, index: ?int)
    # The entity kind is immutable and the record exists.
    error ImmutableRecord (entity: string, id: string, message: string, index: ?int)
    # No such record.
    error NotFound (space: string, entity: string, id: string, message: string)
    # No such space.
    error SpaceNotFound (space: string, message: string)
    # A batch holds more records than allowed.
    error BatchTooLarge (count: int, limit: int, message: string)
    # A referenced attachment is not in the store.
    error AttachmentMissing (sha256: string, message: string, index: ?int)
    # Attachment bytes do not hash to the expected SHA-256.
    error AttachmentMismatch (expected: string, actual: string, message: string)
    # An attachment is over the size limit.
    error AttachmentTooLarge (size: int, limit: int, message: string)
    # No losing version with that stamp is kept.
    error ConflictNotFound (entity: string, id: string, hlc: string, message: string)
    # A parameter has a value the method cannot use (for example a bad order or filter).
    error InvalidArgument (parameter: string, message: string)
    # The watcher fell too far behind: call Watch again with since set to cursor.
    error ResumeFromCursor (cursor: int, message: string)
    # The daemon could not read or write its files.
    error StorageFailure (message: string)
    # The daemon has MaxConnections connections open: it sends this on a new one before it
    # closes it, so it answers that connection's first call, whatever the method.
    error TooManyConnections (limit: int, message: string)
    """
}
