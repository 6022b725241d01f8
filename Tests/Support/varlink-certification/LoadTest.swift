import FerryJSON
import FerryVarlink
import Foundation
import Glibc

/// `--load-test=N`: serves org.varlink.certification on a private socket, opens N client
/// connections at once, makes one call on each concurrently, and prints one
/// machine-readable line. Run as a child process so the test runner itself never holds
/// thousands of descriptors.
enum LoadTest {
    static func run(connections: Int, service: VarlinkService) async -> Int32 {
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(2 * connections + 64) {
            limit.rlim_cur = min(rlim_t(2 * connections + 64), limit.rlim_max)
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        let directory = "/tmp/varlink-load-\(getpid())"
        let path = directory + "/load.sock"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = VarlinkServer(service: service, endpoint: .unixPath(path))
        do {
            try await server.start()
        } catch {
            report("load: error=\"\(error)\"")
            return 1
        }
        let started = ContinuousClock.now
        var clients: [VarlinkClient] = []
        do {
            for _ in 0..<connections { clients.append(try VarlinkClient(address: "unix:\(path)")) }
        } catch {
            report("load: error=\"connect: \(error)\"")
            await server.stop()
            return 1
        }
        var open = await server.connectionCount()
        let deadline = ContinuousClock.now + .seconds(30)
        while open < connections && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
            open = await server.connectionCount()
        }
        let ids = await withTaskGroup(of: String?.self) { group in
            for client in clients {
                group.addTask {
                    try? await client.call("org.varlink.certification.Start")["client_id"]?.stringValue
                }
            }
            var ids: [String] = []
            for await id in group { if let id { ids.append(id) } }
            return ids
        }
        let elapsed = ContinuousClock.now - started
        clients.forEach { $0.close() }
        await server.stop()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        report("load: connections=\(connections) open=\(open) ok=\(ids.count) distinct=\(Set(ids).count) seconds=\(String(format: "%.3f", seconds))")
        return ids.count == connections && open == connections ? 0 : 1
    }

    /// Writes straight to the descriptor: `exit` may not flush stdio buffers.
    private static func report(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
