/// What a sync loop pair knows of its transport: shown by `Status` and `ferryctl status`.
public struct TransportHealth: Sendable {
    /// `starting`, `idle`, `pushing`, `pulling`, `backoff`, `paused`, `failed`.
    public var state = "starting"
    /// The last failure, as a sentence: what happened and what to do.
    public var lastError: String?
    /// The kind of the last failure (`unavailable`, `unauthorized`, ...).
    public var lastErrorKind: String?
    /// Unix milliseconds of the last failure and of the last round that succeeded.
    public var lastErrorAt: Int64?
    public var lastSuccessAt: Int64?
    /// Unix milliseconds of the next retry while backing off (the soonest, when both loops are).
    public var retryAt: Int64?
    /// What is wrong now: the failure of each loop (`push`, `pull`) that has not succeeded since
    /// it failed, as "push: …" / "pull: …" (both, joined by "; "); nil while both loops work.
    /// A push that keeps failing stays a problem however well the pulls go, and the other way
    /// round. `lastError` is history: the latest failure of either loop, put right or not.
    /// A push waiting unusually long for its answer shows here too, as "push: …", while no
    /// failure of the push loop stands.
    public var problem: String? {
        var current = failing.mapValues(\.text)
        if let slowPush, current["push"] == nil { current["push"] = slowPush }
        let lines = current.sorted { $0.key > $1.key }.map { "\($0.key): \($0.value)" }
        return lines.isEmpty ? nil : lines.joined(separator: "; ")
    }
    /// The failure of loop `loop` (`push` or `pull`) while it fails; nil while it works.
    public func failure(of loop: String) -> String? { failing[loop]?.text }
    /// Whether a loop fails now (its failure stands until a round of it succeeds).
    public var isFailing: Bool { !failing.isEmpty }
    /// A push on its way longer than `SyncOptions.slowPushAfter`: how long it has waited for
    /// the transport's answer and what to check. Not a failure: the push goes on waiting.
    public var slowPush: String?
    /// The loops failing now, by name (`push`, `pull`), with their failure and next retry.
    var failing: [String: (text: String, retryAt: Int64)] = [:]
    /// Envelopes pushed, envelopes pulled and applied, and envelopes refused since the start.
    public var pushed: Int64 = 0
    public var pulled: Int64 = 0
    public var refused: Int64 = 0
    /// The last refused envelope or unreadable frame, with why.
    public var lastRefusal: String?

    public init() {}
}
