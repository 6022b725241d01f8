import FerryJSON
import Foundation
import Testing

@testable import FerryVarlink

/// org.varlink.certification both ways: the reference clients against our server, and
/// our client against the reference (Python) server. Output is printed so CI logs show
/// what the reference tools said.
extension ProcessAndLoadTests {
@Suite(.serialized) struct VarlinkCertificationTests {
    private func withCertificationServer(_ body: (String) async throws -> Void) async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/certification.sock"
        let server = try await ServerProcess(
            try ExternalTools.shared.certificationServer, ["--varlink=unix:\(path)"], socketPath: path)
        do {
            try await body(path)
        } catch {
            print(await server.stop())
            throw error
        }
        let log = await server.stop()
        #expect(log.hasPrefix("Listening on unix:\(path)"), "server log: \(log)")
    }

    @Test func pythonReferenceClientCertifiesOurServer() async throws {
        let python = try await ExternalTools.shared.pythonWithVarlink()
        try await withCertificationServer { path in
            let result = try await runProcess(
                python, ["-m", "varlink.tests.test_certification", "--client", "--varlink=unix:\(path)"],
                timeout: .seconds(60))
            print("python varlink client:\n\(result.output)")
            #expect(result.status == 0 && !result.timedOut, "\(result.output)")
            #expect(result.output.contains("Certification passed"), "\(result.output)")
        }
    }

    @Test func goReferenceClientCertifiesOurServer() async throws {
        let client = try await ExternalTools.shared.varlinkGoCertification()
        try await withCertificationServer { path in
            let result = try await runProcess(client, ["--client", "--varlink=unix:\(path)"], timeout: .seconds(60))
            print("varlink-go-certification client:\n\(result.output)")
            // Its exit status is 0 even on failure: judge by what it printed.
            #expect(!result.timedOut)
            #expect(result.output.contains("End: 'true'"), "\(result.output)")
            #expect(!result.output.contains("failed"), "\(result.output)")
            for step in ["Start", "Test01", "Test05", "Test09", "Test10", "Test11"] {
                #expect(result.output.contains("\(step):"), "\(step) missing from \(result.output)")
            }
        }
    }

    @Test func ourClientCertifiesAgainstThePythonServer() async throws {
        let python = try await ExternalTools.shared.pythonWithVarlink()
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/python.sock"
        let server = try await ServerProcess(
            python, ["-m", "varlink.tests.test_certification", "--varlink=unix:\(path)"], socketPath: path)
        do {
            let transcript = try await Self.runCertificationClient(address: "unix:\(path)")
            print("FerryVarlink client against the Python reference server:\n" + transcript.joined(separator: "\n"))
        } catch {
            Issue.record("certification client failed: \(error)\nserver log:\n\(await server.stop(graceful: false))")
            return
        }
        await server.stop(graceful: false)
    }

    @Test func ourClientCertifiesAgainstOurServer() async throws {
        try await withCertificationServer { path in
            _ = try await Self.runCertificationClient(address: "unix:\(path)")
        }
    }

    /// The client half of org.varlink.certification: each step's result is the next
    /// step's argument. Returns the transcript.
    static func runCertificationClient(address: String) async throws -> [String] {
        let client = try VarlinkClient(address: address)
        defer { client.close() }
        let interface = "org.varlink.certification"
        var transcript: [String] = []
        func call(_ method: String, _ parameters: [String: JSONValue]) async throws -> JSONValue {
            let reply = try await client.call("\(interface).\(method)", parameters)
            transcript.append("\(method): \(JSONWriter.string(reply))")
            return reply
        }
        let start = try await call("Start", [:])
        let id = try #require(start["client_id"])
        let test01 = try await call("Test01", ["client_id": id])
        #expect(test01["bool"] == true)
        let test02 = try await call("Test02", ["client_id": id, "bool": try #require(test01["bool"])])
        let test03 = try await call("Test03", ["client_id": id, "int": try #require(test02["int"])])
        let test04 = try await call("Test04", ["client_id": id, "float": try #require(test03["float"])])
        let test05 = try await call("Test05", ["client_id": id, "string": try #require(test04["string"])])
        let test06 = try await call("Test06", [
            "client_id": id, "bool": try #require(test05["bool"]), "int": try #require(test05["int"]),
            "float": try #require(test05["float"]), "string": try #require(test05["string"]),
        ])
        let test07 = try await call("Test07", ["client_id": id, "struct": try #require(test06["struct"])])
        let test08 = try await call("Test08", ["client_id": id, "map": try #require(test07["map"])])
        let test09 = try await call("Test09", ["client_id": id, "set": try #require(test08["set"])])
        var replies: [JSONValue] = []
        for try await reply in client.callMore(
            "\(interface).Test10", ["client_id": id, "mytype": try #require(test09["mytype"])])
        {
            transcript.append("Test10: \(JSONWriter.string(reply))")
            replies.append(try #require(reply["string"]))
        }
        #expect(replies.count == 10)
        try await client.oneway("\(interface).Test11", ["client_id": id, "last_more_replies": .array(replies)])
        transcript.append("Test11: (oneway)")
        let end = try await call("End", ["client_id": id])
        #expect(end["all_ok"] == true)
        return transcript
    }
}
}
