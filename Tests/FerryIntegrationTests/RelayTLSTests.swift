import FerryClient
import FerryTestSupport
import Foundation
import Glibc
import Testing

/// ferry-relay serving HTTPS itself ([TLS] Certificate= and Key=, a self-signed certificate made
/// with openssl) and real ferryd devices reaching it at an `https://` URL, through their https
/// helper process (URLSession). FoundationNetworking trusts only the system's CA bundle
/// (/etc/ssl/certs/ca-certificates.crt), so the devices that trust the certificate run in a
/// mount namespace of their own where the certificate is bind-mounted over that file; a device
/// without it is told the certificate is not trusted and what to do.
@Suite(.serialized) struct RelayTLSTests {
    static var canRun: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")
            && (try? runCommand("/usr/bin/unshare", ["-m", "--propagation", "private", "/bin/true"]).status) == 0
    }

    /// A self-signed certificate for 127.0.0.1 and its key, in `dir`.
    static func certificate(in dir: String) throws -> (certificate: String, key: String) {
        let certificate = dir + "/relay.crt", key = dir + "/relay.key"
        let made = try runCommand("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                                      "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=127.0.0.1",
                                                      "-addext", "subjectAltName=IP:127.0.0.1"])
        guard made.status == 0 else { throw HarnessError("openssl req failed: \(made.output)") }
        return (certificate, key)
    }

    /// Runs ferryd with `certificate` as the only CA it trusts.
    static func trusting(_ certificate: String) -> (launcher: [String], environment: [String: String]) {
        let script = "mount --bind \"$FERRY_CA\" /etc/ssl/certs/ca-certificates.crt && exec \"$0\" \"$@\""
        return (["/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script], ["FERRY_CA": certificate])
    }

    /// The https helpers running for the process `pid`.
    static func helpers(of pid: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { Int32($0) }.filter { child in
            guard let stat = try? String(contentsOfFile: "/proc/\(child)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 2, Int32(fields[1]) == pid else { return false }
            let command = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(child)/cmdline"))) ?? Data()
            return String(decoding: command, as: UTF8.self).contains("--https-helper")
        }
    }

    @Test(.enabled(if: canRun, "needs /usr/bin/openssl and unshare -m"))
    func devicesSyncRecordsAndAttachmentsThroughARelayServingHTTPS() async throws {
        let dir = TempDir("relay-tls")
        let (certificate, key) = try Self.certificate(in: dir.path)
        let relay = try RelayHarness(extraConfig: "[TLS]\nCertificate=\(certificate)\nKey=\(key)\n", name: "relay-tls")
        try relay.start()
        #expect(relay.log.contains("listening on https://127.0.0.1:\(relay.port)"), "\(relay.log)")
        let url = "https://127.0.0.1:\(relay.port)"
        let trust = Self.trusting(certificate)
        let a = try SyncDevice("a"), b = try SyncDevice("b"), stranger = try SyncDevice("stranger")
        try a.start(launcher: trust.launcher, environment: trust.environment)
        try b.start(launcher: trust.launcher, environment: trust.environment)
        try stranger.start()

        let (_, token) = try await relay.pair(a, b, url: url)

        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        let attachment = try await a.client().putAttachment(data: bytes)
        _ = try await a.client().put(entity: "note", id: "with-file", payload: ["v": 0], attachments: [attachment.sha256])
        try await RelayFaultTests.write(20, on: a, prefix: "a")
        try await RelayFaultTests.write(5, on: b, prefix: "b")
        #expect(try await eventually(.seconds(60)) {
            let onB = try await b.records().count, onA = try await a.records().count
            return onA == 26 && onB == 26
        }, "\(a.logTail)\n\(b.logTail)")
        #expect(await eventually(.seconds(60)) { await b.hasAttachment(attachment.sha256, bytes: bytes) }, "\(b.logTail)")
        let onA = try await a.records(), onB = try await b.records()
        #expect(onA == onB)
        // The requests went through each device's helper, not ferryd itself.
        for device in [a, b] {
            let pid = try #require(device.harness.process?.processIdentifier)
            #expect(Self.helpers(of: pid).count == 1, "\(device.logTail)")
        }

        // A device that does not trust the certificate is told so, and what to do: pairing
        // fails as the relay's failure (not a bad argument), to be run again once it is fixed.
        try await stranger.joinOwner(of: a)
        let (strangerCode, _) = try await a.client().relayPairingCode()
        do {
            try await stranger.client().addTransport(name: "relay", kind: "relay", location: url, code: strangerCode)
            Issue.record("pairing through an untrusted certificate succeeded")
        } catch {
            guard let failure = error as? FerryClientError, case .remote(let name, let message, _) = failure else { Issue.record("\(error)"); return }
            #expect(name.hasSuffix(".RelayFailure") && message.contains("TLS certificate is not trusted here")
                    && message.contains("run this command again") && !message.contains("ferryctl sync"), "\(name): \(message)")
        }
        _ = try await stranger.client().addTransport(name: "relay", kind: "relay", location: url, token: token)
        #expect(try await eventually(.seconds(30)) {
            let problem = try await stranger.client().status().transports.first { $0.name == "relay" }?.lastError ?? ""
            return problem.contains("TLS certificate is not trusted here") && problem.contains("update-ca-certificates")
        }, "\(stranger.logTail)")
        #expect(try await stranger.records().isEmpty)
        for device in [a, b, stranger] { #expect(device.harness.isRunning) }
        // Plain HTTP to the HTTPS port is one client's broken handshake too.
        _ = try? RelayHarness.rawHTTP(port: relay.port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        // Handshakes that clients broke off are not the relay's problem: nothing at the default
        // level (info) about them, where a scanner would otherwise fill the log.
        #expect(await eventually(.seconds(5)) { relay.log.contains("listening on https://") }, "\(relay.log)")
        usleep(300_000)
        #expect(!relay.log.contains("libmicrohttpd"), "\(relay.log)")
    }
}
