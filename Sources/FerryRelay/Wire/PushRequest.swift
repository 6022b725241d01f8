import FerryJSON
import FerrySync
import Glibc

/// The body of a push: `{"events": ["<base64>", ...]}`. Pure.
public enum PushRequest {
    /// Each event decoded from base64, in order; nil for one that is not padded standard
    /// base64.
    ///
    /// The body is validated as JSON, then its events are read where they are in it; a body
    /// with an escape in a key or an event (valid, if odd, for base64 text) is parsed whole
    /// instead, with the same results.
    /// - Throws: `RelayError.badRequest` for anything but an object whose only member is
    ///   `events`, an array of strings; `.tooLarge` for more than
    ///   `RelayConfiguration.maxEventsPerPush` events or a body over `maxBytes`.
    public static func parse(_ bytes: [UInt8], maxBytes: Int) throws(RelayError) -> [[UInt8]?] {
        try WireJSON.validateObject(bytes, maxBytes: maxBytes)
        let found = try bytes.withUnsafeBufferPointer { (b) throws(RelayError) -> [[UInt8]?]? in
            guard let ranges = try eventRanges(b) else { return nil }
            try checkCount(ranges.count)
            return ranges.map { Base64.decode(UnsafeBufferPointer(rebasing: b[$0])) }
        }
        if let found { return found }
        return try strings(bytes, maxBytes: maxBytes).map { Base64.decode($0.utf8) }
    }

    /// The byte ranges of the events' text in `b`, a valid JSON document; nil when a key or an
    /// event has an escape (its text is not its bytes). Throws the shape errors of `parse`.
    static func eventRanges(_ b: UnsafeBufferPointer<UInt8>) throws(RelayError) -> [Range<Int>]? {
        var i = 0
        func skipSpace() {
            while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
        }
        /// The text of the string opening at `i`, which moves past it; nil when it has an
        /// escape. (`memchr` for the closing quote, then for a backslash before it: each
        /// looks at many bytes at a time.)
        func string() -> Range<Int>? {
            let base = b.baseAddress!
            let start = i + 1
            guard let quote = memchr(base + start, Int32(UInt8(ascii: "\"")), b.count - start) else { return nil }
            let end = base.distance(to: quote.assumingMemoryBound(to: UInt8.self))
            guard memchr(base + start, Int32(UInt8(ascii: "\\")), end - start) == nil else { return nil }
            i = end + 1
            return start..<end
        }
        skipSpace()
        guard b[i] == UInt8(ascii: "{") else { throw notAnObject }
        i += 1
        skipSpace()
        var events: [Range<Int>]?
        // Valid JSON: each member is a string, a colon and a value; `validate` refused
        // duplicate keys, so `events` comes once at most.
        while b[i] == UInt8(ascii: "\"") {
            guard let key = string() else { return nil }
            guard b[key].elementsEqual("events".utf8) else {
                throw unknownMember(String(decoding: UnsafeBufferPointer(rebasing: b[key]), as: UTF8.self))
            }
            skipSpace()
            i += 1  // the colon
            skipSpace()
            guard b[i] == UInt8(ascii: "[") else { throw notAnArray }
            i += 1
            skipSpace()
            var list: [Range<Int>] = []
            while b[i] != UInt8(ascii: "]") {
                guard b[i] == UInt8(ascii: "\"") else { throw notAString(list.count) }
                guard let text = string() else { return nil }
                list.append(text)
                skipSpace()
                if b[i] == UInt8(ascii: ",") { i += 1; skipSpace() }
            }
            i += 1
            events = list
            skipSpace()
            if b[i] == UInt8(ascii: ",") { i += 1; skipSpace() }
        }
        guard let events else { throw notAnArray }
        return events
    }

    /// The events as strings, from the body parsed whole (`parse` when there are escapes).
    static func strings(_ bytes: [UInt8], maxBytes: Int) throws(RelayError) -> [String] {
        let value = try WireJSON.parseObject(bytes, maxBytes: maxBytes)
        guard let object = value.objectValue else { throw notAnObject }
        for key in object.keys where key != "events" { throw unknownMember(key) }
        guard let events = object["events"]?.arrayValue else {
            throw notAnArray
        }
        try checkCount(events.count)
        var out: [String] = []
        out.reserveCapacity(events.count)
        for (i, e) in events.enumerated() {
            guard let s = e.stringValue else { throw notAString(i) }
            out.append(s)
        }
        return out
    }

    // The shape errors, the same on both paths.
    private static func unknownMember(_ name: String) -> RelayError {
        WireJSON.shape("unknown member \"\(name.prefix(40))\"; the body is {\"events\": [...]}")
    }
    private static let notAnObject = WireJSON.shape("the body must be a JSON object")
    private static let notAnArray = WireJSON.shape("\"events\" must be an array of base64 strings")
    private static func notAString(_ index: Int) -> RelayError { WireJSON.shape("events[\(index)] must be a base64 string") }

    private static func checkCount(_ count: Int) throws(RelayError) {
        guard count <= RelayConfiguration.maxEventsPerPush else {
            throw .tooLarge("\(count) events in one push; the limit is \(RelayConfiguration.maxEventsPerPush)")
        }
    }
}

/// JSON bodies in: parsing with limits and the errors for wrong shapes.
enum WireJSON {
    static func parseObject(_ bytes: [UInt8], maxBytes: Int) throws(RelayError) -> JSONValue {
        guard bytes.count <= maxBytes else { throw .tooLarge("the body is \(bytes.count) bytes; the limit is \(maxBytes)") }
        do {
            return try JSONParser.parse(bytes, limits: limits(maxBytes))
        } catch {
            throw badJSON(error)
        }
    }

    /// The checks of `parseObject` without building the value; the same errors.
    static func validateObject(_ bytes: [UInt8], maxBytes: Int) throws(RelayError) {
        guard bytes.count <= maxBytes else { throw .tooLarge("the body is \(bytes.count) bytes; the limit is \(maxBytes)") }
        do {
            _ = try JSONParser.validate(bytes, limits: limits(maxBytes))
        } catch {
            throw badJSON(error)
        }
    }

    private static func limits(_ maxBytes: Int) -> JSONLimits { JSONLimits(maxBytes: maxBytes, maxDepth: 8) }

    private static func badJSON(_ error: JSONError) -> RelayError {
        .badRequest(code: "bad_json", message: "the body is not valid JSON: \(error)")
    }

    static func shape(_ message: String) -> RelayError {
        .badRequest(code: "bad_request", message: message)
    }
}
