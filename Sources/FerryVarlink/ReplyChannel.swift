/// The connection-side endpoint a sink writes into.
struct ReplyChannel: Sendable {
    let output: ConnectionOutputState
    let slowPeerGrace: Duration
    /// Hands reserved reply bytes to the connection, in call order.
    let deliver: @Sendable ([UInt8]) -> Void
    /// Set once the call is decoded: whether it is `oneway`, so the connection knows not
    /// to cancel it when the client hangs up (a oneway call needs no one to reply to).
    let isOneway = Locked(false)
}
