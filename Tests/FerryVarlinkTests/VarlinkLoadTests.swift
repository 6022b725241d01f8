import FerryJSON
import Foundation
import Glibc
import Testing

@testable import FerryVarlink

/// Tests that spawn processes never overlap with each other: Foundation's `Process.run`
/// on Linux scans /proc/self/fd with a buffer overrun once about 1,300 descriptors are
/// open (AddressSanitizer: heap-buffer-overflow in `findMaximumOpenFromProcSelfFD`) and
/// can crash the whole test process. For the same reason the 1,000-connection test runs
/// in a child process: the test runner (shared with every other test target) must never
/// hold thousands of descriptors.
@Suite(.serialized) struct ProcessAndLoadTests {}

extension ProcessAndLoadTests {
    @Suite struct VarlinkLoadTests {
        @Test func thousandSimultaneousConnections() async throws {
            // Objects still referenced at exit are not leaks; keep LeakSanitizer (in
            // sanitizer builds) from failing the child for them.
            var environment = ProcessInfo.processInfo.environment
            environment["ASAN_OPTIONS"] = [environment["ASAN_OPTIONS"], "detect_leaks=0"].compactMap { $0 }.joined(separator: ":")
            let result = try await runProcess(
                try ExternalTools.shared.certificationServer, ["--load-test=1000"], timeout: .seconds(90),
                environment: environment)
            print(result.output)
            #expect(result.status == 0 && !result.timedOut, "\(result.output)")
            #expect(result.output.contains("load: connections=1000 open=1000 ok=1000 distinct=1000"), "\(result.output)")
        }

        @Test func twoHundredConnectionsInProcess() async throws {
            try await withTestServer { server in
                var clients: [VarlinkClient] = []
                for _ in 0..<200 { clients.append(try server.client()) }
                #expect(await eventually { await server.server.connectionCount() == 200 })
                let sums = try await withThrowingTaskGroup(of: Int64.self) { group in
                    for (index, client) in clients.enumerated() {
                        group.addTask {
                            try await client.call("org.ferry.test.Add", ["a": .int(Int64(index)), "b": 1])["sum"]?.intValue ?? -1
                        }
                    }
                    var sums: [Int64] = []
                    for try await sum in group { sums.append(sum) }
                    return sums
                }
                #expect(sums.sorted() == (1...200).map(Int64.init))
                clients.forEach { $0.close() }
                #expect(await eventually { await server.server.connectionCount() == 0 })
            }
        }
    }
}
