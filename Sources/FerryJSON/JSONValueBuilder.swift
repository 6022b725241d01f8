/// The sink behind `JSONParser.parse`: assembles the document's `JSONValue`.
///
/// Members of all open containers wait on one shared stack; a container is
/// built in one step when it closes, with its exact size, so building does
/// not regrow arrays or rehash dictionaries.
struct JSONValueBuilder: JSONSink {
    static let buildsValues = true

    /// The finished top-level value, once the scanner has read it.
    private(set) var root: JSONValue?
    /// Completed elements and member values of every open container, innermost last.
    private var pending: [JSONValue] = []
    /// Where each open container's elements start in `pending`.
    private var starts: [Int] = []
    private var keys = JSONKeyTracker()

    mutating func beginArray() {
        starts.append(pending.count)
    }

    mutating func beginObject() {
        starts.append(pending.count)
        keys.open()
    }

    mutating func key(_ key: String, offset: Int) throws(JSONError) {
        try keys.add(key, offset: offset)
    }

    mutating func value(_ value: JSONValue, in parent: JSONParent) {
        if case .none = parent {
            root = value
        } else {
            pending.append(value)
        }
    }

    mutating func endArray(in parent: JSONParent) {
        let start = starts.removeLast()
        let elements = Array(pending[start...])
        pending.removeSubrange(start...)
        value(.array(elements), in: parent)
    }

    mutating func endObject(in parent: JSONParent) {
        let start = starts.removeLast()
        let keyStart = keys.innermostStart
        var members = [String: JSONValue](minimumCapacity: pending.count - start)
        for (offset, index) in (start..<pending.count).enumerated() {
            // Keys were checked for duplicates as they arrived.
            members[keys.keys[keyStart + offset]] = pending[index]
        }
        pending.removeSubrange(start...)
        keys.close()
        value(.object(members), in: parent)
    }
}
