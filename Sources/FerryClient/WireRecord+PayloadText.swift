import FerryAPI
import FerryJSON
import FerryVarlink

extension WireRecord {
    /// The capture paths of the payloads of records at `path` (from a reply's parameters).
    static func payloadPath(_ path: JSONPathComponent...) -> [JSONPathComponent] {
        path + [.key("payload")]
    }

    /// A record read from a reply whose payloads were captured as text: its payload, a
    /// placeholder, becomes the object parsed from that text, and `payloadText` the text itself.
    /// A record whose payload is not a placeholder (a tombstone) is left as it is.
    /// - Throws: `WireError` when the text does not parse to an object.
    mutating func resolvePayload(from captured: VarlinkCapturedText) throws(WireError) {
        guard let payload, let text = captured.text(of: .object(payload)) else { return }
        guard case .object(let object)? = try? captured.value(of: text) else {
            throw WireError(field: "payload", expected: "object")
        }
        self.payload = object
        payloadText = String(decoding: text, as: UTF8.self)
    }
}
