import FerryJSON

/// The body of a push: `{"events": ["<base64>", ...]}`. Pure.
public enum PushRequest {
    /// The base64 strings, in order.
    /// - Throws: `RelayError.badRequest` for anything but an object whose only member is
    ///   `events`, an array of strings; `.tooLarge` for more than
    ///   `RelayConfiguration.maxEventsPerPush` events or a body over `maxBytes`.
    public static func parse(_ bytes: [UInt8], maxBytes: Int) throws(RelayError) -> [String] {
        let value = try WireJSON.parseObject(bytes, maxBytes: maxBytes)
        guard let object = value.objectValue else { throw WireJSON.shape("the body must be a JSON object") }
        for key in object.keys where key != "events" {
            throw WireJSON.shape("unknown member \"\(key.prefix(40))\"; the body is {\"events\": [...]}")
        }
        guard let events = object["events"]?.arrayValue else {
            throw WireJSON.shape("\"events\" must be an array of base64 strings")
        }
        guard events.count <= RelayConfiguration.maxEventsPerPush else {
            throw .tooLarge("\(events.count) events in one push; the limit is \(RelayConfiguration.maxEventsPerPush)")
        }
        var out: [String] = []
        out.reserveCapacity(events.count)
        for (i, e) in events.enumerated() {
            guard let s = e.stringValue else { throw WireJSON.shape("events[\(i)] must be a base64 string") }
            out.append(s)
        }
        return out
    }
}

/// JSON bodies in: parsing with limits and the errors for wrong shapes.
enum WireJSON {
    static func parseObject(_ bytes: [UInt8], maxBytes: Int) throws(RelayError) -> JSONValue {
        guard bytes.count <= maxBytes else { throw .tooLarge("the body is \(bytes.count) bytes; the limit is \(maxBytes)") }
        do {
            return try JSONParser.parse(bytes, limits: JSONLimits(maxBytes: maxBytes, maxDepth: 8))
        } catch {
            throw .badRequest(code: "bad_json", message: "the body is not valid JSON: \(error)")
        }
    }

    static func shape(_ message: String) -> RelayError {
        .badRequest(code: "bad_request", message: message)
    }
}
