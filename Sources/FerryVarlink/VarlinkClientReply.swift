import FerryJSON

/// A reply read with capture paths (`VarlinkClient.call(_:capturing:)`): its parameters, in
/// which every object found at a capture path stands as a placeholder, and the text of those
/// objects exactly as the service sent them (`captured.text(of:)`).
public struct VarlinkClientReply: Sendable {
    /// The reply's parameters (always a JSON object).
    public var parameters: JSONValue
    /// The objects at the capture paths, as text.
    public var captured: VarlinkCapturedText
}
