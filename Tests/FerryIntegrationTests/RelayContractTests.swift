import FerryTestSupport
import Foundation
import Testing

/// ferry-relay against its contract, docs/relay.openapi.yaml, checked by a tool nobody here
/// wrote: PyPI's schemathesis (pinned in the Makefile) generates valid and invalid requests for
/// every operation and checks each answer's status, media type and body against the document.
/// The document is what other implementations rely on, so a mismatch is fixed in the relay or
/// in the document, never by loosening the checks here.
@Suite(.serialized) struct RelayContractTests {
    /// The schemathesis next to $FERRY_PYTHON (make test points it at .build/venv), else the
    /// one on the PATH.
    static var schemathesis: String {
        if let python = ProcessInfo.processInfo.environment["FERRY_PYTHON"] {
            return URL(fileURLWithPath: python).deletingLastPathComponent().appendingPathComponent("schemathesis").path
        }
        return "schemathesis"
    }

    /// The repository's docs/relay.openapi.yaml.
    static var document: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/relay.openapi.yaml").path
    }

    @Test func theRelayAnswersAsItsOpenAPIDocumentSays() throws {
        // Long-polls are capped at 1 s here (a longer `wait` is a documented 400), so that the
        // generated pulls that wait do not make the run wait on each.
        let relay = try RelayHarness(extraConfig: "MaxWaitSeconds=1", name: "contract")
        try relay.start()
        defer { relay.stop() }
        let owner = "0123456789abcdef0123456789abcdef"
        let (token, _) = try relay.createOwner(owner)
        // Most generated requests name the owner the token is for, so the handlers behind
        // authentication run; the rest name random (unknown) owners, which must get a
        // documented 403, never a 5xx.
        let config = relay.root + "/schemathesis.toml"
        try """
            [dictionaries.owners]
            values = ["\(owner)"]
            [parameters]
            "path.owner" = { dictionary = "owners", probability = 0.8 }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let started = ContinuousClock.now
        let result = try runCommand(Self.schemathesis, [
            "--config-file", config, "run", Self.document,
            "--url", relay.url,
            "-H", "Authorization: Bearer \(token)",
            "--checks", "not_a_server_error,status_code_conformance,response_schema_conformance,content_type_conformance",
            "--max-examples", "50",
            // Hypothesis derandomized (and so without an example database): the same cases
            // every run.
            "--generation-deterministic",
            "--workers", "1",
            "--request-timeout", "10",
            "--no-color",
        ], timeout: 110, directory: relay.root)   // its cache stays out of the work tree
        print("schemathesis ran for \(ContinuousClock.now - started)")
        #expect(result.status == 0 && result.output.contains(" passed"),
                "schemathesis found mismatches (\(Self.schemathesis); make test-deps installs it into .build/venv):\n\(result.output.suffix(20_000))")
        // Nothing the fuzzer sent made the relay fail or log an internal error.
        #expect(relay.process?.isRunning == true)
        #expect(!relay.log.contains("error:"), "\(relay.log.suffix(4000))")
        #expect(RelayHarness.healthy(port: relay.port))
    }
}
