@testable import FerrySync
import Foundation
import Testing

/// `RelayHTTP.failure`: the one place a relay's error answer becomes a `TransportFailure`.
@Suite struct RelayHTTPFailureTests {
    let base = URL(string: "http://127.0.0.1:8470")!

    func failure(_ status: Int, _ code: String, headers: [String: String] = [:]) -> TransportFailure {
        let body = Data(#"{"error":"\#(code)","message":"what happened"}"#.utf8)
        return RelayHTTP.failure(.init(status: status, body: body, headers: headers), what: "pulling", base: base)
    }

    /// Only 409 `lost_data` (a relay restored from an older backup) means the host lost data;
    /// any other 409 keeps the meaning of a 4xx: rejected.
    @Test func lostDataIsHostLostDataAndOther409sAreRejected() {
        let lost = failure(409, "lost_data")
        #expect(lost.kind == "host-lost-data" && lost.message.contains("lost_data") && lost.message.contains("what happened"), "\(lost)")
        #expect(failure(409, "conflict").kind == "rejected")
        #expect(failure(400, "bad_cursor").kind == "rejected")
        #expect(failure(413, "quota_exceeded").kind == "quota")
        #expect(failure(413, "too_large").kind == "rejected")
        #expect(failure(429, "rate_limited", headers: ["retry-after": "7"]) == .rateLimited(retryAfter: .seconds(7), failure(429, "rate_limited").message))
        #expect(failure(503, "unavailable").kind == "unavailable")
    }
}
