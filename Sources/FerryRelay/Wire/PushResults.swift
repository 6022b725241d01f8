import FerryJSON
import FerrySync

/// The body of a push's answer, `{"results":[...]}`: one result per pushed string, in order,
/// each `{"event"?, "reason"?, "status"}` (keys in that order, as `JSONWriter` sorts them).
/// Written straight to bytes: a push of 2,000 events would otherwise build 2,000 dictionaries.
struct PushResults {
    enum Status: String {
        case accepted, duplicate, rejected
    }

    private var bytes: [UInt8]
    private var count = 0

    init(capacity: Int) {
        bytes = Array(#"{"results":["#.utf8)
        bytes.reserveCapacity(16 + capacity * 64)
    }

    /// Adds the next result.
    mutating func add(event: EventID?, _ status: Status, reason: String? = nil) {
        if count > 0 { bytes.append(UInt8(ascii: ",")) }
        count += 1
        bytes.append(UInt8(ascii: "{"))
        if let event {
            JSONWriter.appendRaw(#""event":""#, to: &bytes)
            event.appendHex(to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        }
        if let reason {
            if event != nil { bytes.append(UInt8(ascii: ",")) }
            JSONWriter.appendRaw(#""reason":"#, to: &bytes)
            JSONWriter.appendString(reason, to: &bytes)
        }
        if event != nil || reason != nil { bytes.append(UInt8(ascii: ",")) }
        JSONWriter.appendRaw(#""status":""#, to: &bytes)
        bytes.append(contentsOf: status.rawValue.utf8)
        JSONWriter.appendRaw(#""}"#, to: &bytes)
    }

    /// The answer: status 200, the body and a newline, as `HTTPResponse.json` writes them.
    func response() -> HTTPResponse {
        var body = bytes
        body.append(contentsOf: "]}".utf8)
        return .json(200, serialized: body)
    }
}
