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

    # One transport of a space: its configuration, progress and health.
    type TransportStatus (
      space: string,
      name: string,
      # "folder" (a synced folder) or "relay".
      kind: string,
      # The folder's path or the relay's URL.
      location: ?string,
      # Progress values ("push:<name>", "cursor:<name>").
      push: ?string,
      cursor: ?string,
      # Records this transport still needs.
      pending: int,
      # The sync loops: "starting", "idle", "pushing", "pulling", "backoff", "paused" or
      # "failed" (the transport could not be started: see lastError).
      state: ?string,
      # The last failure (put right since or not), as a sentence that says what to do, and
      # its kind ("unavailable", "unauthorized", "quota", "rate-limited", "rejected",
      # "too-large", "host-lost-data", "local", or "waiting": a pulled record's attachment
      # blob is not there yet, or not whole).
      lastError: ?string,
      lastErrorKind: ?string,
      lastErrorAt: ?int,
      lastSuccessAt: ?int,
      # When the next retry is due while backing off (Unix milliseconds).
      retryAt: ?int,
      # What is wrong now: the failure of each sync loop that has not succeeded since it
      # failed ("push: ...", "pull: ..."); absent while both work.
      problem: ?string,
      # Envelopes pushed and pulled since ferryd started, and envelopes or frames refused
      # (another owner, a wrong key, tampering, corruption), with the last refusal.
      pushed: ?int,
      pulled: ?int,
      refused: ?int,
      lastRefusal: ?string,
      # The transport's own account: "ok", "unavailable", "read-only", "corrupt-frames", ...
      # with a message when something is wrong, and figures such as "devices" and "bytes".
      transportState: ?string,
      transportMessage: ?string,
      details: ?[string]string
    )

    # One transport's state of an outbox entry.
    type Delivery (
      transport: string,
      acknowledged: ?string,
      error: ?string,
      errorHlc: ?string,
      # Set while the transport takes nothing at all (its pushes fail as a whole, for example
      # a relay over its quota): why, as the transport's "push: ..." problem says it.
      held: ?string
    )

    # A record some transport still needs (or that one refused, or of a space with no transport).
    type OutboxEntry (
      space: string,
      entity: string,
      id: string,
      hlc: string,
      seq: int,
      # When the version was written: the time in its stamp, Unix milliseconds.
      queuedAt: int,
      deliveries: []Delivery
    )

    # A device that can reach a space owner's data on a relay: one live token of the owner.
    type RelayDevice (
      # The token's id (16 hex digits), what RelayRevoke takes; never the token itself.
      id: string,
      # The name the device gave when it paired (or the operator gave the token).
      device: string,
      # owner, editor or viewer.
      role: string,
      # Unix milliseconds.
      createdAt: int,
      # Unix milliseconds; the relay updates it at most once a minute.
      lastUsedAt: ?int,
      # The token this device uses for the space.
      thisDevice: bool
    )

    # The daemon's state at a glance.
    method Status() -> (
      node: string,
      version: string,
      # From the transports: "idle", "syncing" (one pushes or pulls), "backoff" (one retries
      # after a failure), "failed" (one could not start) or "paused".
      state: string,
      records: int,
      tombstones: int,
      # Outbox entries, and how many of them are in spaces with no transport (kept for the
      # first one added to the space).
      outbox: int,
      outboxWithoutTransport: ?int,
      outboxErrors: int,
      lastSeq: int,
      attachments: int,
      attachmentBytes: int,
      # Attachments a record references whose bytes have not arrived (still looked for).
      attachmentsMissing: ?int,
      spaces: []Space,
      transports: []TransportStatus,
      # The latest failure of any transport ("NAME: kind: what happened") and when, and the
      # latest success of any.
      lastError: ?string,
      lastErrorAt: ?int,
      lastSuccessAt: ?int,
      startedAt: int
    )

    # The outbox: every queued record with each transport's state. errorsOnly keeps
    # the entries some transport rejected, and those waiting for a transport that takes
    # nothing now (its pushes fail as a whole: their delivery says why in held). At most
    # limit entries (1 to 100000, default 1000), fewer when more would not fit in one
    # message; more is true when entries were left out.
    method Outbox(space: ?string, errorsOnly: ?bool, limit: ?int) -> (entries: []OutboxEntry, more: ?bool)

    # Starts a sync round now (of one space, or all) instead of waiting for the next trigger.
    # While syncing is paused (Pause) it starts nothing and fails with SyncPaused.
    method SyncNow(space: ?string) -> ()

    # The transports of one space, or of every space.
    method Transports(space: ?string) -> (transports: []TransportStatus)

    # Adds a transport to a space (default: the private space) and queues every record of
    # the space for it. kind "folder": location is the absolute path of an existing directory
    # that a file-sync tool keeps in sync between devices. kind "relay": location is the
    # relay's URL (http or https), with either a pairing code from another device of the
    # owner (RelayPairingCode) or a token the relay's operator created. Adding an existing
    # name again replaces its configuration; one declared in ferryd.conf is changed there
    # (TransportDeclared), since a reload would change it back. warning: what could not be
    # checked now (a token, when the relay cannot be reached); the transport is added anyway.
    method AddTransport(space: ?string, name: string, kind: string, location: string, code: ?string, token: ?string) -> (transport: TransportStatus, warning: ?string)

    # A short-lived, one-time code another device redeems with AddTransport(kind: "relay",
    # code) to get a relay token of its own for this space's owner. name picks the relay
    # transport when the space has several.
    method RelayPairingCode(space: ?string, name: ?string) -> (code: string, expiresAt: int)

    # What the space's relay holds for its owner: events and bytes stored, blobs, the quota
    # and the last push (Unix milliseconds).
    method RelayUsage(space: ?string, name: ?string) -> (owner: string, url: string, events: ?int, bytes: ?int, blobs: ?int, blobBytes: ?int, quotaBytes: ?int, lastPushAt: ?int)

    # The devices that can reach the space owner's data on the relay (its live tokens), oldest
    # first, this device's own marked.
    method RelayDevices(space: ?string, name: ?string) -> (owner: string, url: string, devices: []RelayDevice)

    # Revokes another device's relay token (id from RelayDevices): the relay refuses it from
    # its next request on, so that device stops syncing through the relay until it pairs
    # again. This device's own token is refused (InvalidArgument): RemoveTransport stops this
    # device syncing through the relay. An id the relay has no live token of the owner for is
    # InvalidArgument too.
    method RelayRevoke(space: ?string, name: ?string, id: string) -> ()

    # Deletes the relay's copy of the space owner's data ("remove my data from the server").
    # The data on this device stays. Remove the transport as well to stop syncing through the
    # relay; adding it again uploads everything.
    method RelayDeleteCopy(space: ?string, name: ?string) -> ()

    # Removes a transport: its cursor and progress are dropped; the data stays. A transport
    # declared in ferryd.conf ([Transport NAME]) is not removed (TransportDeclared): a reload
    # would bring it back, so it goes by deleting its section there.
    method RemoveTransport(space: ?string, name: string) -> ()

    # The recovery phrase of a space's owner: whoever has it can read and write the space's
    # synced data. Keys leave the device only this way.
    method OwnerPhrase(space: ?string) -> (owner: string, phrase: string)

    # Makes a space belong to the owner of a recovery phrase (another device's). The records
    # already here are kept and queued for upload under the new owner. relaysToPairAgain names
    # the space's relay transports when the owner changed: each holds a token of the previous
    # owner, so pair it again (AddTransport with a code from a device of the new owner).
    method RestoreOwner(space: ?string, phrase: string) -> (owner: string, relaysToPairAgain: ?[]string)

    # Pauses every sync loop; local reads and writes go on and the outbox keeps growing.
    # Kept across restarts.
    method Pause() -> ()

    # Resumes syncing after Pause.
    method Resume() -> ()

    # Writes a sealed bundle of every space (records, tombstones and attachments, each space
    # sealed under its owner's keys) to path (an absolute path; replaced if it exists).
    # attachmentsLeftOut counts attachments its records reference whose bytes are not on this
    # device (not arrived yet, or found gone or damaged here and set aside): not in the bundle.
    method Export(path: string) -> (spaces: int, records: int, attachments: int, attachmentsLeftOut: int, bytes: int)

    # Merges a bundle written by Export with the merge rules. A space is imported when this
    # device has a space with the bundle's owner (restore it first with RestoreOwner).
    method Import(path: string) -> (applied: int, duplicates: int, lost: int, refused: int, skippedOwners: []string)

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
    # No transport of that name in the space.
    error TransportNotFound (space: string, name: string, message: string)
    # The transport is declared in the config file (file): remove it there, then reload.
    error TransportDeclared (space: string, name: string, file: string, message: string)
    # Syncing is paused, so SyncNow starts nothing: Resume first.
    error SyncPaused (message: string)
    # The recovery phrase has a typo or is not a Ferry recovery phrase.
    error InvalidRecoveryPhrase (message: string)
    # The relay refused or could not be reached.
    error RelayFailure (message: string)
    # A bundle could not be written or read.
    error BundleFailure (path: string, message: string)
    # A parameter has a value the method cannot use.
    error InvalidArgument (parameter: string, message: string)
    # The daemon could not read or write its files.
    error StorageFailure (message: string)
    """
}
