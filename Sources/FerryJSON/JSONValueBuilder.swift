/// The sink behind `JSONParser.parse`: assembles the document's `JSONValue`.
///
/// Members of all open containers wait on one shared stack; a container is
/// built in one step when it closes, with its exact size, so building does
/// not regrow arrays or rehash dictionaries.
///
/// With capture paths, an object found at one of them is not built: the scanner checks its
/// grammar, UTF-8 and depth, and it becomes a placeholder (see `JSONCapture`) and a byte range,
/// for callers that want such objects as text. What else `JSONParser.validate` checks
/// (duplicate keys, numbers out of range) is checked too, but a failure does not fail the
/// document: it marks the capture as not clean, and the caller reads that one again for its
/// own error.
struct JSONValueBuilder: JSONSink {
    static let buildsValues = true

    /// The finished top-level value, once the scanner has read it.
    private(set) var root: JSONValue?
    /// Completed elements and member values of every open container, innermost last.
    private var pending: [JSONValue] = []
    /// Where each open container's elements start in `pending`.
    private var starts: [Int] = []
    private var keys = JSONKeyTracker()

    /// Capture paths, from the top-level value's members down (at most 64).
    private let paths: [[JSONPathComponent]]
    /// Per open container (while not capturing): the paths whose prefix leads to it, one bit each.
    private var onPaths: [UInt64] = []
    /// `starts.count` of the object being captured, 0 while none is.
    private var captureLevel = 0
    private var captureStart = 0
    private var capturePath = 0
    /// The deepest nesting inside the capture so far (the captured object counts 1), and
    /// whether it has passed every check so far.
    private var captureDepth = 0
    private var captureClean = true
    /// The objects captured so far, in document order.
    private(set) var captures: [JSONCapture] = []

    init(capturing paths: [[JSONPathComponent]] = []) {
        precondition(paths.count <= 64 && paths.allSatisfy { !$0.isEmpty }, "at most 64 capture paths, none empty")
        self.paths = paths
    }

    var building: Bool { captureLevel == 0 }

    mutating func numberOutOfRange(_ error: JSONError) throws(JSONError) {
        guard captureLevel != 0 else { throw error }
        captureClean = false
    }

    /// Notes a container opening inside the capture (after `starts` grew).
    private mutating func noteCapturedContainer() {
        captureDepth = max(captureDepth, starts.count - captureLevel + 1)
    }

    /// The paths a container beginning inside `parent` is on, or the one whose end it is.
    private func pathsOfChild(in parent: JSONParent) -> (onPaths: UInt64, target: Int?) {
        let depth = starts.count
        if depth == 0 { return (paths.count == 64 ? .max : (UInt64(1) << UInt64(paths.count)) - 1, nil) }
        let parentPaths = onPaths[depth - 1]
        guard parentPaths != 0 else { return (0, nil) }
        var mask: UInt64 = 0
        for p in paths.indices where parentPaths & (UInt64(1) << UInt64(p)) != 0 && depth <= paths[p].count {
            let matches: Bool
            switch paths[p][depth - 1] {
            case .anyElement: matches = parent == .array
            case .key(let k): matches = parent == .object && keys.lastKey == k
            }
            guard matches else { continue }
            if depth == paths[p].count { return (0, p) }
            mask |= UInt64(1) << UInt64(p)
        }
        return (mask, nil)
    }

    mutating func beginArray(at offset: Int, in parent: JSONParent) {
        if captureLevel == 0 && !paths.isEmpty { onPaths.append(pathsOfChild(in: parent).onPaths) }
        starts.append(pending.count)
        if captureLevel != 0 { noteCapturedContainer() }
    }

    mutating func beginObject(at offset: Int, in parent: JSONParent) {
        if captureLevel == 0 && !paths.isEmpty {
            let (mask, target) = pathsOfChild(in: parent)
            if let target {
                captureLevel = starts.count + 1
                captureStart = offset
                capturePath = target
                captureDepth = 0
                captureClean = true
            } else {
                onPaths.append(mask)
            }
        }
        starts.append(pending.count)
        if captureLevel != 0 { noteCapturedContainer() }
        keys.open()
    }

    mutating func key(_ key: String, offset: Int) throws(JSONError) {
        guard captureLevel != 0 else { return try keys.add(key, offset: offset) }
        guard captureClean else { return }   // one problem is enough to read it again
        do { try keys.add(key, offset: offset) } catch { captureClean = false }
    }

    mutating func value(_ value: JSONValue, in parent: JSONParent) {
        guard captureLevel == 0 else { return }
        if case .none = parent {
            root = value
        } else {
            pending.append(value)
        }
    }

    mutating func endArray(in parent: JSONParent) {
        let start = starts.removeLast()
        guard captureLevel == 0 else { return }
        if !paths.isEmpty { onPaths.removeLast() }
        let elements = Array(pending[start...])
        pending.removeSubrange(start...)
        value(.array(elements), in: parent)
    }

    mutating func endObject(in parent: JSONParent, end: Int) {
        if captureLevel != 0 {
            let level = starts.count
            starts.removeLast()
            keys.close()
            if level == captureLevel {
                captureLevel = 0
                captures.append(JSONCapture(path: capturePath, range: captureStart..<end, depth: captureDepth, isClean: captureClean))
                value(JSONCapture.placeholder(captures.count - 1), in: parent)
            }
            return
        }
        if !paths.isEmpty { onPaths.removeLast() }
        let start = starts.removeLast()
        let keyStart = keys.innermostStart
        var members = [String: JSONValue](minimumCapacity: pending.count - start)
        for (offset, index) in (start..<pending.count).enumerated() {
            // Keys were checked for duplicates as they arrived.
            members[keys.key(at: keyStart + offset)] = pending[index]
        }
        pending.removeSubrange(start...)
        keys.close()
        value(.object(members), in: parent)
    }
}
