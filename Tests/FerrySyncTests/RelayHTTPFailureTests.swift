import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
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
        #expect(RelayHTTP.failure(Self.reply(413, "quota_exceeded", "full"), what: "pushing", base: Self.base).message.contains("'ferryctl sync' sends what waits at once"))
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

/// Network failures read in words, from FoundationNetworking's real errors against a local
/// server that misbehaves.
@Suite struct RelayHTTPNetworkReasonTests {
    /// A server on 127.0.0.1 that accepts one connection, reads `readBytes` of it (0: the whole
    /// request head), and closes it without answering.
    final class ClosingServer: @unchecked Sendable {
        let port: Int
        private let fd: Int32

        init(readBytes: Int) throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let ok = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(listener, $0, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, $0, &length) == 0
                }
            }
            guard ok else { close(listener); throw POSIXError(.EADDRINUSE) }
            port = Int(UInt16(bigEndian: address.sin_port))
            fd = listener
            Thread {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                // Up to `readBytes`, or (0) the whole request head: then the close is a clean one.
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while readBytes == 0 ? received.firstRange(of: Array("\r\n\r\n".utf8)) == nil : received.count < readBytes {
                    let want = readBytes == 0 ? buffer.count : min(buffer.count, readBytes - received.count)
                    let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress!, want, 0) }
                    if n <= 0 { break }
                    received += buffer[0..<n]
                }
                close(client)
            }.start()
        }

        deinit { close(fd) }
    }

    func failure(readBytes: Int, body: Int) async throws -> String {
        let server = try ClosingServer(readBytes: readBytes)
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/v1/owners/x/events")!)
        request.httpMethod = body > 0 ? "POST" : "GET"
        if body > 0 { request.httpBody = Data(repeating: 0x61, count: body) }
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        do {
            _ = try await SessionCall.data(session, request)
        } catch {
            return RelayHTTP.reason(error)
        }
        Issue.record("the request did not fail")
        return ""
    }

    /// An untrusted certificate, as libcurl words it under whatever code FoundationNetworking
    /// gives, says so and how to trust a self-signed one; not "check the network".
    @Test func anUntrustedCertificateSaysHowToTrustIt() {
        for code in [URLError.Code.unknown, .secureConnectionFailed, .serverCertificateUntrusted] {
            let error = URLError(code, userInfo: [NSLocalizedDescriptionKey: "SSL certificate problem: self-signed certificate"])
            let reason = RelayHTTP.reason(error)
            #expect(reason.hasPrefix("its TLS certificate is not trusted here (SSL certificate problem: self-signed certificate)"), "\(reason)")
            #expect(reason.contains("update-ca-certificates"), "\(reason)")
        }
    }

    /// An expired certificate is not a trust-store matter: it says so.
    @Test func anExpiredCertificateSaysItIsOutOfDate() {
        let error = URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "SSL certificate problem: certificate has expired"])
        let reason = RelayHTTP.reason(error)
        #expect(reason.contains("out of its validity dates") && !reason.contains("update-ca-certificates"), "\(reason)")
    }

    /// An https:// URL for a relay that serves plain HTTP (OpenSSL's words, as an outside check
    /// saw them) says to use http://.
    @Test func httpsToAPlainRelaySaysToUseHTTP() {
        let error = URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number"])
        let reason = RelayHTTP.reason(error)
        #expect(reason.contains("it does not answer TLS there") && reason.contains("its URL starts with http://"), "\(reason)")
    }

    /// A request that went through a proxy says so, naming the proxy without its password,
    /// and to check it or name the host in no_proxy; one no_proxy exempts does not. A reason
    /// that says what to do (a certificate) is not told to check the network.
    @Test func failuresThroughAProxyNameTheProxy() {
        let http = URL(string: "http://relay.example:8470")!, https = URL(string: "https://relay.example")!
        #expect(RelayHTTP.proxy(for: http, environment: ["http_proxy": "http://user:secret@proxy:3128"]) == "http://proxy:3128")
        #expect(RelayHTTP.proxy(for: https, environment: ["http_proxy": "http://proxy:3128"]) == nil)
        #expect(RelayHTTP.proxy(for: https, environment: ["HTTPS_PROXY": "proxy:3128"]) == "http://proxy:3128")
        #expect(RelayHTTP.proxy(for: http, environment: ["all_proxy": "socks5://p:1080", "no_proxy": "example"]) == nil)
        #expect(RelayHTTP.proxy(for: http, environment: ["all_proxy": "socks5://p:1080", "no_proxy": "other.org, .example"]) == nil)
        #expect(RelayHTTP.proxy(for: http, environment: ["all_proxy": "socks5://p:1080", "NO_PROXY": "*"]) == nil)
        #expect(RelayHTTP.proxy(for: http, environment: ["all_proxy": "socks5://p:1080", "no_proxy": "ample"]) == "socks5://p:1080")
        let session = RelayHTTP.makeSession()
        defer { session.invalidate() }
        let proxied = RelayHTTP(base: http, token: nil, session: session, environment: ["http_proxy": "http://user:secret@proxy:3128"])
        let lost = proxied.unreachable("pulling", URLError(.networkConnectionLost))
        #expect(lost.contains("through the proxy http://proxy:3128") && lost.contains("no_proxy") && !lost.contains("secret"), "\(lost)")
        // A refused connection is the proxy's then: it does not ask whether ferry-relay runs.
        let refused = proxied.unreachable("pulling", URLError(.cannotConnectToHost))
        #expect(refused.contains("the connection was refused") && !refused.contains("ferry-relay running"), "\(refused)")
        let direct = RelayHTTP(base: http, token: nil, session: session, environment: [:])
        #expect(direct.unreachable("pulling", URLError(.networkConnectionLost)).hasSuffix("check the URL and the network"))
        let untrusted = direct.unreachable("pulling", URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "SSL certificate problem: self-signed certificate"]))
        #expect(untrusted.hasPrefix("pulling: the relay at http://relay.example:8470: its TLS certificate is not trusted here")
                && !untrusted.contains("check the URL and the network") && !untrusted.contains("cannot reach"), "\(untrusted)")
    }

    /// libcurl's words for a certificate of another name, a handshake cut, and bytes that are
    /// not HTTP (from a broken proxy) say what they mean.
    @Test func handshakeAndAnswerFailuresSayWhatTheyMean() {
        func reason(_ text: String, _ code: URLError.Code = .unknown) -> String {
            RelayHTTP.reason(URLError(code, userInfo: [NSLocalizedDescriptionKey: text]))
        }
        #expect(reason("SSL: no alternative certificate subject name matches target host name 'localhost'").hasPrefix("its TLS certificate is for another name"))
        #expect(reason("OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to 127.0.0.1:18481").hasPrefix("the connection broke during the TLS handshake"))
        #expect(reason("Received HTTP/0.9 when not allowed", .unsupportedURL).hasPrefix("the answer is not HTTP"))
        #expect(reason("", .unsupportedURL) == "the URL is not an http or https URL")
    }

    @Test func aConnectionClosedBeforeAnyAnswerSaysSo() async throws {
        let reason = try await failure(readBytes: 0, body: 0)
        #expect(reason.contains("closed before any answer"), "\(reason)")
    }

    @Test func aConnectionThatBreaksMidBodyIsNotANumber() async throws {
        let reason = try await failure(readBytes: 16, body: 8 << 20)
        #expect(!reason.contains("network error -1") && !reason.contains("not HTTP"), "\(reason)")
        #expect(reason.contains("connection"), "\(reason)")
    }
}
