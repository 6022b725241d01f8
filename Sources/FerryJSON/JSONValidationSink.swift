/// The sink behind `JSONParser.validate`: builds nothing, only remembers the
/// open objects' keys (plain-ASCII ones as their bytes in the input) to reject
/// duplicates exactly as `parse` does.
struct JSONValidationSink: JSONSink {
    static let buildsValues = false
    var building: Bool { false }

    mutating func numberOutOfRange(_ error: JSONError) throws(JSONError) {
        throw error
    }

    private var keys = JSONKeyTracker()

    mutating func beginArray(at offset: Int, in parent: JSONParent) {}

    mutating func beginObject(at offset: Int, in parent: JSONParent) {
        keys.open()
    }

    mutating func key(_ key: String, offset: Int) throws(JSONError) {
        try keys.add(key, offset: offset)
    }

    mutating func key(ascii: UnsafeBufferPointer<UInt8>, offset: Int) throws(JSONError) {
        try keys.add(ascii: ascii, offset: offset)
    }

    mutating func value(_ value: JSONValue, in parent: JSONParent) {}

    mutating func endArray(in parent: JSONParent) {}

    mutating func endObject(in parent: JSONParent, end: Int) {
        keys.close()
    }
}
