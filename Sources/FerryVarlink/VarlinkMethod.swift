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

/// A handler that runs on the server's event-loop thread and answers at once: for quick
/// methods, where a hand-off to another thread would cost more than the work. It must not
/// block for long: every connection of the server waits while it runs.
public typealias VarlinkInlineHandler = @Sendable (VarlinkCall) throws(VarlinkError) -> VarlinkReplyParameters

/// A handler that receives every call of its method that arrived in one turn of the
/// server's event loop, across all connections, and answers each (in the same order). It
/// runs on the event-loop thread; the point is to do the work of many calls at once (one
/// database transaction for many writers: group commit without any thread hand-off).
public typealias VarlinkBatchHandler = @Sendable ([VarlinkCall]) -> [Result<VarlinkReplyParameters, VarlinkError>]

/// Reads a method's parameters (the bytes of the `parameters` object of a call message of the
/// common shape, `DirectCallShape`, without the whitespace around them) straight into the
/// handler's own type, skipping the `JSONValue` tree, for the calls it recognizes; nil sends
/// the call through the ordinary decoding. It must read exactly one object and decline
/// anything after it (a further member of the message ends up there). It must accept only
/// parameters the interface accepts and the message limits allow, and read them as the
/// ordinary decoding would, so that a handler gets the same input either way: when in doubt
/// (an escape, an unknown member, anything unusual), it returns nil.
public typealias VarlinkDirectDecoder = @Sendable (UnsafeBufferPointer<UInt8>, JSONLimits) -> (any Sendable)?

/// The implementation of one method of a registered interface.
public struct VarlinkMethod: Sendable {
    enum Kind: Sendable {
        case task(VarlinkMethodHandler)
        case inline(VarlinkInlineHandler)
        case batch(VarlinkBatchHandler)
    }

    /// When true, a call without `"more": true` is answered with
    /// `org.varlink.service.ExpectedMore` and the handler does not run.
    public var requiresMore: Bool
    /// Paths from the parameters down to objects the handler takes as text rather than as
    /// values (`VarlinkCall.captured`), for example a payload it stores as sent: they are
    /// checked like the rest of the message but not built. Empty for most methods.
    public var capturing: [[JSONPathComponent]] = []
    /// Reads the common shape of this method's calls without building values
    /// (`VarlinkCall.direct`); only batched methods use it.
    public var direct: VarlinkDirectDecoder?
    let kind: Kind

    /// A method whose handler runs as a task (it may await, stream replies with `more`, and
    /// take as long as it needs).
    public init(requiresMore: Bool = false, _ handler: @escaping VarlinkMethodHandler) {
        self.requiresMore = requiresMore
        self.kind = .task(handler)
    }

    /// A method answered on the event-loop thread (see `VarlinkInlineHandler`). It cannot
    /// stream: `more` calls get its one reply.
    public static func inline(_ handler: @escaping VarlinkInlineHandler) -> VarlinkMethod {
        VarlinkMethod(kind: .inline(handler))
    }

    /// A method whose calls are handled in batches (see `VarlinkBatchHandler`), taking the
    /// objects at `capturing` as text (see `capturing`) and, when `direct` is given, the calls
    /// it recognizes as its value (see `VarlinkDirectDecoder`).
    public static func batched(capturing: [[JSONPathComponent]] = [], direct: VarlinkDirectDecoder? = nil,
                               _ handler: @escaping VarlinkBatchHandler) -> VarlinkMethod {
        var method = VarlinkMethod(kind: .batch(handler))
        method.capturing = capturing
        method.direct = direct
        return method
    }

    private init(kind: Kind) {
        self.requiresMore = false
        self.kind = kind
    }

    /// The task handler (inline and batch methods run through it when called as a task,
    /// which only happens outside a server, in tests).
    public var handler: VarlinkMethodHandler {
        switch kind {
        case .task(let h): return h
        case .inline(let h): return { call, _ throws(VarlinkError) in try Self.values(h(call)) }
        case .batch(let h):
            return { call, _ throws(VarlinkError) in
                switch h([call])[0] {
                case .success(let reply): return try Self.values(reply)
                case .failure(let error): throw error
                }
            }
        }
    }

    private static func values(_ reply: VarlinkReplyParameters) throws(VarlinkError) -> [String: JSONValue] {
        switch reply {
        case .values(let v): return v
        case .json(let bytes):
            guard case .object(let o)? = try? JSONParser.parse(bytes) else { throw VarlinkError("org.varlink.service.InvalidParameter") }
            return o
        }
    }
}
