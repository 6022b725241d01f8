import Foundation
import Testing
@testable import FerrySync

/// How a relay's error reply becomes a `TransportFailure`: the kind the engine acts on, and a
/// message that says what happened and gives its advice once.
@Suite struct RelayHTTPFailureTests {
    static let base = URL(string: "https://relay.example")!

    static func reply(_ status: Int, _ code: String, _ message: String) -> RelayHTTP.Reply {
        RelayHTTP.Reply(status: status, body: Data(#"{"error": "\#(code)", "message": "\#(message)"}"#.utf8), headers: [:])
    }

    @Test func aRefusedPairingCodeSaysNothingAboutATokenAndAdvisesOnce() {
        let failure = RelayHTTP.failure(Self.reply(401, "unauthorized", "the pairing code is wrong, expired or already used"),
                                        what: "redeeming the pairing code", base: Self.base, sentToken: false)
        #expect(failure.kind == "unauthorized")
        #expect(!failure.message.contains("token"), "\(failure)")
        #expect(failure.message.contains("the pairing code is wrong, expired or already used"), "\(failure)")
        #expect(failure.message.contains("make a new code with 'ferryctl relay pair'"), "\(failure)")
        #expect(failure.message.components(separatedBy: "make a new").count == 2, "one piece of advice: \(failure)")
    }

    @Test func aRevokedTokenGivesItsAdviceOnce() {
        let failure = RelayHTTP.failure(Self.reply(401, "unauthorized", "the token is unknown or revoked"),
                                        what: "pulling", base: Self.base, sentToken: true)
        #expect(failure.kind == "unauthorized")
        #expect(failure.message.contains("the token is unknown or revoked"), "\(failure)")
        #expect(failure.message.components(separatedBy: "pair").count - 1 == 2,
                "'pair this device again (ferryctl relay pair ...)' and nothing more: \(failure)")
        #expect(failure.message.contains("'ferryctl transport add NAME relay URL --code CODE'"), "\(failure)")
    }

    @Test func otherStatusesKeepTheirKinds() {
        let forbidden = RelayHTTP.failure(Self.reply(403, "forbidden", "this token belongs to another owner"), what: "pulling", base: Self.base)
        #expect(forbidden.kind == "unauthorized")
        #expect(RelayHTTP.failure(Self.reply(413, "quota_exceeded", "full"), what: "pushing", base: Self.base).kind == "quota")
        #expect(RelayHTTP.failure(Self.reply(503, "unavailable", "down"), what: "pushing", base: Self.base).kind == "unavailable")
    }

    /// Only 409 `lost_data` (a relay restored from an older backup) means the host lost data;
    /// any other 409 keeps the meaning of a 4xx: rejected.
    @Test func lostDataIsHostLostDataAndOther409sAreRejected() {
        func failure(_ status: Int, _ code: String, headers: [String: String] = [:]) -> TransportFailure {
            let body = Data(#"{"error":"\#(code)","message":"what happened"}"#.utf8)
            return RelayHTTP.failure(.init(status: status, body: body, headers: headers), what: "pulling", base: Self.base)
        }
        let lost = failure(409, "lost_data")
        #expect(lost.kind == "host-lost-data" && lost.message.contains("lost_data") && lost.message.contains("what happened"), "\(lost)")
        #expect(failure(409, "conflict").kind == "rejected")
        #expect(failure(400, "bad_cursor").kind == "rejected")
        #expect(failure(413, "quota_exceeded").kind == "quota")
        #expect(failure(413, "too_large").kind == "too-large")
        #expect(failure(413, "").kind == "too-large")   // a proxy's body limit
        #expect(failure(429, "rate_limited", headers: ["retry-after": "7"]) == .rateLimited(retryAfter: .seconds(7), failure(429, "rate_limited").message))
        #expect(failure(503, "unavailable").kind == "unavailable")
    }
}
