import FerryJSON
import Testing

@testable import FerryVarlink

@Suite struct VarlinkServiceTests {
    let service = try! TestInterface.service(recorder: Recorder())

    private func resolve(_ message: VarlinkCallMessage) -> VarlinkService.Resolution {
        service.resolve(message, peer: nil)
    }

    private func failure(_ message: VarlinkCallMessage) -> VarlinkError? {
        if case let .failure(error) = resolve(message) { return error }
        return nil
    }

    @Test func answersEveryStandardError() {
        #expect(failure(.init(method: "org.nothing.Here")) == .interfaceNotFound("org.nothing"))
        #expect(failure(.test("Missing")) == .methodNotFound("org.ferry.test.Missing"))
        #expect(failure(.test("Unimplemented")) == .methodNotImplemented("org.ferry.test.Unimplemented"))
        #expect(failure(.test("Add", ["a": 1])) == .invalidParameter("b"))
        #expect(failure(.test("Count", ["count": 1])) == .expectedMore)
        #expect(failure(.test("Count", ["count": "x"], more: true)) == .invalidParameter("count"))
        #expect(failure(.init(method: "org.ferry.test.Add", parameters: ["a": 1, "b": 2], upgrade: true))
            == .invalidParameter("upgrade"))
        #expect(failure(.init(method: "org.varlink.service.GetInterfaceDescription", parameters: ["interface": "x.y"]))
            == .interfaceNotFound("x.y"))
        #expect(failure(.init(method: "org.varlink.service.GetInterfaceDescription"))
            == .invalidParameter("interface"))
    }

    @Test func getInfoListsInterfaces() {
        guard case let .reply(info) = resolve(.init(method: "org.varlink.service.GetInfo")) else {
            Issue.record("GetInfo did not reply")
            return
        }
        #expect(info["vendor"] == "Ferry")
        #expect(info["product"] == "FerryVarlinkTests")
        #expect(info["version"] == "0.1")
        #expect(info["url"] == "https://example.invalid/ferry")
        #expect(info["interfaces"] == ["org.varlink.service", "org.ferry.test"])
    }

    @Test func getInterfaceDescriptionReturnsTheText() {
        for (name, text) in [
            ("org.ferry.test", TestInterface.definition),
            ("org.varlink.service", VarlinkServiceInterface.definition),
        ] {
            let message = VarlinkCallMessage(
                method: "org.varlink.service.GetInterfaceDescription", parameters: ["interface": .string(name)])
            guard case let .reply(reply) = resolve(message) else {
                Issue.record("no description for \(name)")
                return
            }
            #expect(reply == ["description": .string(text)])
        }
    }

    @Test func registrationErrors() {
        var service = VarlinkService(vendor: "v", product: "p", version: "1", url: "u")
        #expect(throws: VarlinkServiceError.duplicateInterface("org.varlink.service")) {
            try service.register(VarlinkServiceInterface.definition, methods: [:])
        }
        #expect(throws: VarlinkServiceError.unknownMethod(interface: "org.x.y", method: "B")) {
            try service.register("interface org.x.y\nmethod A() -> ()", methods: ["B": VarlinkMethod { _, _ in [:] }])
        }
        #expect(throws: VarlinkServiceError.self) { try service.register("interface nope", methods: [:]) }
    }

    @Test func handlerCallCarriesFlagsAndPeer() {
        let peer = PeerCredentials(processID: 1, userID: 2, groupID: 3)
        let message = VarlinkCallMessage.test("Count", ["count": 2], more: true)
        guard case let .handler(method, call) = service.resolve(message, peer: peer) else {
            Issue.record("Count did not resolve to its handler")
            return
        }
        #expect(method.requiresMore)
        #expect(call.qualifiedMethod == "org.ferry.test.Count")
        #expect(call.more && !call.oneway)
        #expect(call.peer == peer)
        #expect(call["count"] == 2)
    }
}
