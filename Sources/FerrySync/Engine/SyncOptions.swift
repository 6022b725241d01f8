/// The sync engine's timing and limits.
public struct SyncOptions: Sendable {
    /// How often a caught-up loop looks again without a hint (writes, file events, long-poll).
    public var pollInterval: Duration = .seconds(30)
    /// Pushes are at least this far apart: writes within it go in the next batch together.
    public var debounce: Duration = .milliseconds(10)
    /// How long a pull waits for an attachment blob to arrive before applying the records that
    /// reference it without it (the attachment is then missing here, and logged).
    public var attachmentWait: Duration = .seconds(120)
    /// How soon the engine looks again for the blobs of attachments that records were applied
    /// without; each look that finds none of them doubles the wait, up to `attachmentRetryMax`.
    public var attachmentRetry: Duration = .seconds(60)
    /// The longest wait between two looks for missing attachment blobs (also the wait while
    /// none is missing).
    public var attachmentRetryMax: Duration = .seconds(3600)
    /// How often the blobs of this device's attachments are checked on a transport whose
    /// blobs can vanish (`Transport.blobsCanVanish`), and put back when gone; the first check
    /// is this long after the start too.
    public var blobCheckInterval: Duration = .seconds(600)
    /// How long the blob of an attachment nothing in its space references any longer (its
    /// records deleted or edited to drop it, its losing versions pruned) stays on the space's
    /// transports before this device removes it there (`Transport.deleteBlob`); nil keeps
    /// every blob. Devices that have not applied the delete or edit yet may fetch it meanwhile.
    public var blobRetention: Duration? = .seconds(7 * 86_400)
    /// A push that has waited this long for the transport's answer is shown as what is wrong
    /// now (`TransportHealth.problem`) while it goes on waiting, instead of nothing until the
    /// transport gives up (a relay after its `RelayTimeoutSeconds`).
    public var slowPushAfter: Duration = .seconds(10)
    /// The most envelopes in one push and one pull page, whatever the transport takes
    /// (`Transport.batchLimit` decides below it).
    public var batchEnvelopes = SyncLimits.maxBatch.envelopes
    /// The most envelope bytes in one push, whatever the transport takes.
    public var batchBytes = SyncLimits.maxBatch.bytes
    /// How long a loop waits after its `attempt`th failure in a row (1 for the first).
    public var backoff: @Sendable (SyncFailure, Int) -> Duration = { Backoff.delay(after: $0, attempt: $1) }
    /// Where sealed and opened blobs are staged (on the store's file system, so that a finished
    /// attachment is moved into place, not copied).
    public var scratchDirectory: String

    public init(scratchDirectory: String) {
        self.scratchDirectory = scratchDirectory
    }
}
