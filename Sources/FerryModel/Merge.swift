/// The merge rules: one pure function, used for local writes, remote changes and imports alike.
///
/// Per record (space, entity, id):
/// - the version with the greatest stamp wins; the same stamp again changes nothing;
/// - a delete is a version like any other (a tombstone), so older versions never bring it back;
/// - for an immutable entity kind the version with the smallest stamp wins, so every device
///   keeps the first version written.
public enum Merge {
    /// What to do with an incoming version.
    public enum Outcome: Sendable, Equatable {
        /// The incoming version becomes current.
        case apply
        /// The incoming version is the current one already (same stamp): nothing changes.
        case duplicate
        /// The incoming version loses to the current one and is not applied.
        case lose
    }

    /// Decides between the current version of a record (nil when the record is new here) and an
    /// incoming one.
    public static func decide(current: Stamp?, incoming: Stamp, immutable: Bool) -> Outcome {
        guard let current else { return .apply }
        if incoming == current { return .duplicate }
        if immutable { return incoming < current ? .apply : .lose }
        return incoming > current ? .apply : .lose
    }
}

/// Where a version came from: recorded with every change and with every losing version.
public enum ChangeOrigin: Sendable, Hashable, CustomStringConvertible {
    /// Written by an app on this device.
    case local
    /// Received through a transport.
    case remote(transport: String)
    /// Merged from an exported bundle.
    case imported(source: String)

    public var description: String {
        switch self {
        case .local: "local"
        case .remote(let t): "remote:\(t)"
        case .imported(let s): "import:\(s)"
        }
    }

    /// Parses `description`.
    public init(parsing s: String) {
        if s.hasPrefix("remote:") { self = .remote(transport: String(s.dropFirst(7))) }
        else if s.hasPrefix("import:") { self = .imported(source: String(s.dropFirst(7))) }
        else { self = .local }
    }
}
