/// Limits every parse and validation enforces, so that untrusted input costs
/// bounded memory and time.
public struct JSONLimits: Sendable {
    /// Inputs longer than this many bytes fail with `.tooLarge` before any byte is read.
    public var maxBytes: Int
    /// The deepest nesting of arrays and objects allowed (a top-level `[]` is depth 1).
    /// Deeper input fails with `.tooDeep`. Zero allows only scalars.
    public var maxDepth: Int

    /// Limits with the given caps; the defaults suit record payloads and IPC messages.
    public init(maxBytes: Int = 16 * 1024 * 1024, maxDepth: Int = 256) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
    }

    /// 16 MiB and 256 levels.
    public static let `default` = JSONLimits()
}
