import FerryAPI
import FerryJSON

/// `--json` output that carries records' payloads as stored: `record(_:)` puts a marker string
/// where a payload goes, and `serialize(_:)` writes each payload's text in its marker's place,
/// every token as stored, only the whitespace between tokens dropped (`PayloadText.compact`), so
/// that each document stays on one line. A marker holds a NUL and a random tag, so no other string in the output
/// (names, stamps, messages) can look like one.
struct VerbatimJSON {
    private static let tag = "\u{0}ferryctl-payload-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))-"
    /// The serialized form of a marker up to its number: `"\u0000ferryctl-payload-<tag>-`.
    private static let serializedPrefix = Array(JSONWriter.serialize(.string(tag)).dropLast())
    private var texts: [String] = []

    init() {}

    /// The wire form of `record`, its payload (when its text is known) replaced by a marker.
    mutating func record(_ record: WireRecord) -> JSONValue {
        guard let text = record.payloadText, case .object(var object) = record.json else { return record.json }
        object["payload"] = .string(Self.tag + String(texts.count))
        texts.append(PayloadText.compact(text))
        return .object(object)
    }

    /// `document` (an object) with its `record` member as `record(_:)` gives it.
    mutating func replacingRecord(in document: JSONValue, with record: WireRecord) -> JSONValue {
        guard case .object(var object) = document else { return document }
        object["record"] = self.record(record)
        return .object(object)
    }

    /// `value` as JSON with every marker replaced by its payload's text.
    func serialize(_ value: JSONValue) -> [UInt8] {
        let bytes = JSONWriter.serialize(value)
        guard !texts.isEmpty else { return bytes }
        let prefix = Self.serializedPrefix
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + texts.reduce(0) { $0 + $1.utf8.count })
        var i = 0
        while i < bytes.count {
            if bytes[i] == prefix[0], i + prefix.count < bytes.count, bytes[i..<(i + prefix.count)].elementsEqual(prefix) {
                var j = i + prefix.count
                var number = 0
                while j < bytes.count, bytes[j] >= UInt8(ascii: "0"), bytes[j] <= UInt8(ascii: "9") {
                    number = number * 10 + Int(bytes[j] - UInt8(ascii: "0"))
                    j += 1
                }
                if j < bytes.count, bytes[j] == UInt8(ascii: "\""), number < texts.count {
                    out += Array(texts[number].utf8)
                    i = j + 1
                    continue
                }
            }
            out.append(bytes[i])
            i += 1
        }
        return out
    }
}
