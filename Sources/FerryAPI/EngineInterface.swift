/// The definition of `io.ferry.Engine`: the daemon's state, its outbox, spaces and sync.
public enum EngineInterface {
    public static let name = "io.ferry.Engine"

    public static let definition = """
    # The Ferry daemon itself: status, outbox, spaces and sync.
    interface io.ferry.Engine

    # A space: one dataset with its own owner, keys, transports and progress.
    type Space (
      name: string,
      # "private" (this user's own) or "shared" (shared with this device).
      kind: string,
      owner: ?string,
      # When it was created, in Unix milliseconds.
      createdAt: int
    )

    # Per-transport progress and health.
    type TransportStatus (
      space: string,
      name: string,
      kind: string,
      # Progress values ("push:<name>", "cursor:<name>").
      push: ?string,
      cursor: ?string,
      # Records this transport still needs.
      pending: int,
      lastError: ?string,
      lastErrorAt: ?int,
      lastSuccessAt: ?int
    )

    # One transport's state of an outbox entry.
    type Delivery (
      transport: string,
      acknowledged: ?string,
      error: ?string,
      errorHlc: ?string
    )

    # A record some transport still needs.
    type OutboxEntry (
      space: string,
      entity: string,
      id: string,
      hlc: string,
      seq: int,
      queuedAt: int,
      deliveries: []Delivery
    )

    # The daemon's state at a glance.
    method Status() -> (
      node: string,
      version: string,
      # "idle", "syncing", "paused" or "error".
      state: string,
      records: int,
      tombstones: int,
      outbox: int,
      outboxErrors: int,
      lastSeq: int,
      attachments: int,
      attachmentBytes: int,
      spaces: []Space,
      transports: []TransportStatus,
      lastError: ?string,
      lastSuccessAt: ?int,
      startedAt: int
    )

    # The outbox: every queued record with each transport's state. errorsOnly keeps
    # the entries some transport rejected.
    method Outbox(space: ?string, errorsOnly: ?bool, limit: ?int) -> (entries: []OutboxEntry)

    # Starts a sync round now (of one space, or all) instead of waiting for the next trigger.
    method SyncNow(space: ?string) -> ()

    # The spaces on this device.
    method Spaces() -> (spaces: []Space)

    # Creates a space (kind "shared" unless given).
    method CreateSpace(name: string, kind: ?string) -> (space: Space)

    # The space name is not [a-z][a-z0-9_.-]{0,63}.
    error InvalidSpaceName (space: string, message: string)
    # A space with that name exists.
    error SpaceExists (space: string, message: string)
    # No such space.
    error SpaceNotFound (space: string, message: string)
    # A parameter has a value the method cannot use.
    error InvalidArgument (parameter: string, message: string)
    # The daemon could not read or write its files.
    error StorageFailure (message: string)
    """
}
