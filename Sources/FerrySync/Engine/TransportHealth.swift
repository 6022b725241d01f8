/// What a sync loop pair knows of its transport: shown by `Status` and `ferryctl status`.
public struct TransportHealth: Sendable, Hashable {
    /// `starting`, `idle`, `pushing`, `pulling`, `backoff`, `paused`, `failed`.
    public var state = "starting"
    /// The last failure, as a sentence: what happened and what to do.
    public var lastError: String?
    /// The kind of the last failure (`unavailable`, `unauthorized`, ...).
    public var lastErrorKind: String?
    /// Unix milliseconds of the last failure and of the last round that succeeded.
    public var lastErrorAt: Int64?
    public var lastSuccessAt: Int64?
    /// Unix milliseconds of the next retry while backing off.
    public var retryAt: Int64?
    /// Envelopes pushed, envelopes pulled and applied, and envelopes refused since the start.
    public var pushed: Int64 = 0
    public var pulled: Int64 = 0
    public var refused: Int64 = 0
    /// The last refused envelope or unreadable frame, with why.
    public var lastRefusal: String?

    public init() {}
}
