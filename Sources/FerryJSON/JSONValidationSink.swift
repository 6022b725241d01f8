/// The sink behind `JSONParser.validate`: builds nothing, only remembers the
/// open objects' keys to reject duplicates exactly as `parse` does.
struct JSONValidationSink: JSONSink {
    static let buildsValues = false

    private var keys = JSONKeyTracker()

    mutating func beginArray() {}

    mutating func beginObject() {
        keys.open()
    }

    mutating func key(_ key: String, offset: Int) throws(JSONError) {
        try keys.add(key, offset: offset)
    }

    mutating func value(_ value: JSONValue, in parent: JSONParent) {}

    mutating func endArray(in parent: JSONParent) {}

    mutating func endObject(in parent: JSONParent) {
        keys.close()
    }
}
