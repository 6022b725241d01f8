import FerryJSON

/// A method handler: receives the validated call and a sink for streamed replies, and
/// returns the parameters of the final reply.
///
/// - For a plain call, return the reply parameters.
/// - For a `more` call, send zero or more intermediate replies with
///   `try await sink.send(...)` (each goes out with `"continues": true`), then return the
///   last one, which goes out without `continues`.
/// - Throw a `VarlinkError` to end the call with an error reply instead.
/// - For a `oneway` call, the return value is dropped and nothing is sent.
///
/// The handler's task is cancelled when the peer disconnects or the server stops past
/// its grace period; the sink then throws `VarlinkSinkError.peerGone`.
public typealias VarlinkMethodHandler =
    @Sendable (VarlinkCall, VarlinkReplySink) async throws(VarlinkError) -> [String: JSONValue]

/// The implementation of one method of a registered interface.
public struct VarlinkMethod: Sendable {
    /// When true, a call without `"more": true` is answered with
    /// `org.varlink.service.ExpectedMore` and the handler does not run.
    public var requiresMore: Bool
    public var handler: VarlinkMethodHandler

    public init(requiresMore: Bool = false, _ handler: @escaping VarlinkMethodHandler) {
        self.requiresMore = requiresMore
        self.handler = handler
    }
}
