/// How long a sync loop waits after consecutive failures, by failure kind: exponential from a
/// base, capped, with full jitter in its upper half so that devices that failed together do not
/// retry together. Pure apart from the random source passed in.
public enum Backoff {
    /// The delay before attempt `attempt` (1 for the first retry) after `failure`.
    public static func delay(after failure: SyncFailure, attempt: Int,
                             random: (ClosedRange<Double>) -> Double = { Double.random(in: $0) }) -> Duration {
        let (base, cap): (Double, Double)
        switch failure {
        case .transport(.rateLimited(let retryAfter, _)):
            if let retryAfter { return retryAfter + .milliseconds(Int(random(0...250))) }
            (base, cap) = (5, 300)
        case .transport(.unauthorized): (base, cap) = (60, 3600)
        case .transport(.quotaExceeded): (base, cap) = (60, 3600)
        // Short: a host that is back (a relay restarted, a network that returned) should be
        // used again within seconds, and a failed connection attempt costs next to nothing.
        case .transport(.unavailable): (base, cap) = (1, 30)
        case .transport(.rejected): (base, cap) = (30, 3600)
        // Only what cannot be split (a blob over the host's limit); a batch is pushed in halves.
        case .transport(.tooLarge): (base, cap) = (30, 3600)
        // Only when starting over failed locally; the engine otherwise starts over at once.
        case .transport(.hostLostData): (base, cap) = (1, 60)
        case .local: (base, cap) = (1, 60)
        case .waitingForAttachment: (base, cap) = (0.5, 10)
        }
        let exponent = Double(min(max(attempt - 1, 0), 20))
        let ceiling = min(cap, base * pow2(exponent))
        let seconds = ceiling / 2 + random(0...1) * ceiling / 2
        return .milliseconds(Int(seconds * 1000))
    }

    private static func pow2(_ e: Double) -> Double {
        var v = 1.0
        for _ in 0..<Int(e) { v *= 2 }
        return v
    }
}

/// Why one round of a sync loop failed.
public enum SyncFailure: Error, Sendable, CustomStringConvertible {
    /// The transport failed.
    case transport(TransportFailure)
    /// This device's store failed (disk full, I/O error).
    case local(String)
    /// Records need an attachment that has not reached the transport yet.
    case waitingForAttachment(String)

    public var description: String {
        switch self {
        case .transport(let f): f.description
        case .local(let m): "local: \(m)"
        case .waitingForAttachment(let sha): "waiting for attachment \(sha.prefix(12))… to arrive"
        }
    }
}
