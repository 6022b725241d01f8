import FerryJSON

/// A validated method call, as a handler receives it.
///
/// By the time a handler sees it, the interface and method exist, the parameters match
/// the method's input signature, and a method registered with `requiresMore` was called
/// with `more`.
public struct VarlinkCall: Sendable {
    /// The interface name, e.g. `org.example.ferry`.
    public let interface: String
    /// The method's short name, e.g. `Subscribe`.
    public let method: String
    /// The call parameters (already checked against the interface definition).
    public let parameters: [String: JSONValue]
    /// The client wants no reply; whatever the handler returns is dropped.
    public let oneway: Bool
    /// The client accepts several replies (see `VarlinkReplySink.send`).
    public let more: Bool
    /// The peer's credentials, when the transport knows them.
    public let peer: PeerCredentials?
    /// The objects of the method's capture paths (`VarlinkMethod.capturing`), as the client
    /// sent them; nil when the method has none or the call holds none.
    public internal(set) var captured: VarlinkCapturedText?
    /// What the method's direct decoder (`VarlinkMethod.direct`) read from the call's
    /// parameters; `parameters` is then empty. Nil when the call took the ordinary decoding.
    public internal(set) var direct: (any Sendable)?

    public init(
        interface: String, method: String, parameters: [String: JSONValue],
        oneway: Bool = false, more: Bool = false, peer: PeerCredentials? = nil
    ) {
        self.interface = interface
        self.method = method
        self.parameters = parameters
        self.oneway = oneway
        self.more = more
        self.peer = peer
    }

    /// `interface.method`.
    public var qualifiedMethod: String { "\(interface).\(method)" }

    /// The parameter named `name`, or `nil` when absent or `null`.
    public subscript(_ name: String) -> JSONValue? {
        guard let value = parameters[name], !value.isNull else { return nil }
        return value
    }
}
