import FerryJSON
import FerrySync

/// The body of a pull's answer, `{"cursor":"...","events":["<base64>",...],"more":bool}` (keys
/// in that order, as `JSONWriter` sorts them), written straight to bytes: a page of 2,000
/// events would otherwise build 2,000 strings and a tree of values to write them from.
enum EventPageResponse {
    /// Status 200 with the page's body and a newline, as `HTTPResponse.json` writes them.
    static func response(events: [[UInt8]], cursor: String, more: Bool) -> HTTPResponse {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(49 + cursor.utf8.count + events.reduce(0) { $0 + ($1.count + 2) / 3 * 4 + 3 })
        JSONWriter.appendRaw(#"{"cursor":"#, to: &bytes)
        JSONWriter.appendString(cursor, to: &bytes)
        JSONWriter.appendRaw(#","events":["#, to: &bytes)
        for (i, event) in events.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "\""))
            Base64.appendEncoded(event, to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        }
        JSONWriter.appendRaw(more ? #"],"more":true}"# : #"],"more":false}"#, to: &bytes)
        return .json(200, serialized: bytes)
    }
}
