import FerryClient
import Foundation
import Testing

/// Where the client looks for ferryd when not told: FERRY_SOCKET, XDG_RUNTIME_DIR, /run/user.
@Suite struct SocketPathTests {
    @Test func ferrySocketWins() {
        let path = FerryClient.defaultSocketPath(
            environment: ["FERRY_SOCKET": "/srv/ferry.sock", "XDG_RUNTIME_DIR": "/run/user/1000"], userID: 1000)
        #expect(path == "/srv/ferry.sock")
    }

    @Test func relativeFerrySocketIsKeptAsGiven() {
        #expect(FerryClient.defaultSocketPath(environment: ["FERRY_SOCKET": "ferry.sock"], userID: 7) == "ferry.sock")
    }

    @Test func emptyFerrySocketCountsAsUnset() {
        let path = FerryClient.defaultSocketPath(environment: ["FERRY_SOCKET": "", "XDG_RUNTIME_DIR": "/run/user/1000"], userID: 1000)
        #expect(path == "/run/user/1000/ferry/ferryd.sock")
    }

    @Test func xdgRuntimeDirectory() {
        #expect(FerryClient.defaultSocketPath(environment: ["XDG_RUNTIME_DIR": "/tmp/rt"], userID: 5) == "/tmp/rt/ferry/ferryd.sock")
        #expect(FerryClient.defaultSocketPath(environment: ["XDG_RUNTIME_DIR": "/tmp/rt/"], userID: 5) == "/tmp/rt/ferry/ferryd.sock")
    }

    @Test func relativeOrEmptyXDGRuntimeDirectoryIsIgnored() {
        // The XDG spec: a relative path is invalid and must be ignored (ferryd does the same).
        #expect(FerryClient.defaultSocketPath(environment: ["XDG_RUNTIME_DIR": "run"], userID: 1234) == "/run/user/1234/ferry/ferryd.sock")
        #expect(FerryClient.defaultSocketPath(environment: ["XDG_RUNTIME_DIR": ""], userID: 1234) == "/run/user/1234/ferry/ferryd.sock")
    }

    @Test func fallsBackToRunUser() {
        #expect(FerryClient.defaultSocketPath(environment: [:], userID: 0) == "/run/user/0/ferry/ferryd.sock")
        #expect(FerryClient.defaultSocketPath(environment: ["HOME": "/root"], userID: 1000) == "/run/user/1000/ferry/ferryd.sock")
    }

    @Test func processEnvironmentAndUserAreRead() {
        // Read-only: setting variables here would leak into tests running in parallel.
        let environment = ProcessInfo.processInfo.environment
        #expect(FerryClient.defaultSocketPath() == FerryClient.defaultSocketPath(environment: environment, userID: getuid()))
    }
}
