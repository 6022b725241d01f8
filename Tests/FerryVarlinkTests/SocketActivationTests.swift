import Testing

@testable import FerryVarlink

@Suite struct SocketActivationTests {
    @Test func readsDescriptorsMeantForThisProcess() throws {
        let found = try SocketActivation.listenDescriptors(
            environment: ["LISTEN_PID": "42", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "varlink:other"], processID: 42)
        #expect(found == [.init(fd: 3, name: "varlink"), .init(fd: 4, name: "other")])
        let unnamed = try SocketActivation.listenDescriptors(
            environment: ["LISTEN_PID": "42", "LISTEN_FDS": "1"], processID: 42)
        #expect(unnamed == [.init(fd: 3, name: "unknown")])
    }

    @Test func ignoresDescriptorsMeantForAnotherProcess() throws {
        #expect(try SocketActivation.listenDescriptors(environment: ["LISTEN_PID": "41", "LISTEN_FDS": "1"], processID: 42)
            .isEmpty)
        #expect(try SocketActivation.listenDescriptors(environment: ["LISTEN_FDS": "1"], processID: 42).isEmpty)
        #expect(try SocketActivation.listenDescriptors(environment: [:], processID: 42).isEmpty)
        #expect(try SocketActivation.listenDescriptors(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "0"], processID: 42)
            .isEmpty)
    }

    @Test func rejectsMalformedVariables() {
        #expect(throws: SocketActivation.Failure.malformed(variable: "LISTEN_PID", value: "x")) {
            try SocketActivation.listenDescriptors(environment: ["LISTEN_PID": "x", "LISTEN_FDS": "1"], processID: 42)
        }
        #expect(throws: SocketActivation.Failure.malformed(variable: "LISTEN_FDS", value: "-1")) {
            try SocketActivation.listenDescriptors(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "-1"], processID: 42)
        }
        #expect(throws: SocketActivation.Failure.nameCountMismatch(descriptors: 2, names: 1)) {
            try SocketActivation.listenDescriptors(
                environment: ["LISTEN_PID": "42", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "one"], processID: 42)
        }
    }
}
