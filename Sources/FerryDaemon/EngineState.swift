import FerrySync

/// The one word `Status`, `ferryctl status` and systemd's STATUS= use for the whole engine.
enum EngineState {
    /// The engine's state from its transports': `paused`; `failed` when a transport could not
    /// start; `backoff` when one is retrying after a failure (of either of its loops); `syncing`
    /// while one pushes or pulls; else `idle` (also with no transports).
    static func summary(_ transports: [TransportHealth], paused: Bool) -> String {
        if paused { return "paused" }
        let states = Set(transports.map(\.state))
        if states.contains("failed") { return "failed" }
        if states.contains("backoff") || transports.contains(where: \.isFailing) { return "backoff" }
        if states.contains("pushing") || states.contains("pulling") { return "syncing" }
        return "idle"
    }
}
