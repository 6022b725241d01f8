/// The result of processing one framed message on a server connection.
enum CallOutcome: Sendable {
    /// The call is done; send `finalReply` (absent for `oneway` calls and for peers that
    /// are gone) and go on with the next message.
    case finished(finalReply: [UInt8]?)
    /// The message is not even a JSON object: the stream cannot be trusted any more and
    /// the connection is closed without a reply (as the reference servers do).
    case protocolViolation(String)
}
