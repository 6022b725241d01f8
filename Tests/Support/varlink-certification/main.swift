// varlink-certification: serves org.varlink.certification so the reference clients
// (Python `varlink`, Debian's `varlink-go-certification`) can certify FerryVarlink.
//
//   varlink-certification --varlink=unix:/path/to/socket
//   varlink-certification --load-test=1000
//
// Also accepts a socket-activated listener (LISTEN_FDS) when --varlink is absent.
// Prints one "Listening on ..." line when ready; stops on SIGTERM or SIGINT.
// --load-test=N serves on a private socket, makes N simultaneous connections each doing
// one call, prints one "load: ..." line and exits (0 when every call succeeded).
import FerryJSON
import FerryVarlink
import Foundation
import Glibc

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("varlink-certification: \(message)\n".utf8))
    exit(2)
}

var address: String?
var loadConnections: Int?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    if argument.hasPrefix("--load-test="), let count = Int(argument.dropFirst("--load-test=".count)), count > 0 {
        loadConnections = count
    } else if argument.hasPrefix("--varlink=") {
        address = String(argument.dropFirst("--varlink=".count))
    } else if argument == "--varlink", let value = arguments.popFirst() {
        address = value
    } else {
        fail("usage: varlink-certification --varlink=unix:PATH | --load-test=N")
    }
}

let certification = CertificationService()
var service = VarlinkService(
    vendor: "Ferry", product: "FerryVarlink certification server", version: "1",
    url: "https://varlink.org")
do {
    try service.register(CertificationInterface.definition, methods: certification.methods())
} catch {
    fail("\(error)")
}

if let loadConnections {
    exit(await LoadTest.run(connections: loadConnections, service: service))
}

let endpoint: VarlinkServer.Endpoint
if let address {
    guard address.hasPrefix("unix:") else { fail("only unix: addresses are supported, got \(address)") }
    var path = String(address.dropFirst("unix:".count))
    if let semicolon = path.firstIndex(of: ";") { path = String(path[..<semicolon]) }
    endpoint = .unixPath(path)
} else {
    do {
        guard let passed = try SocketActivation.takeListenDescriptors().first else {
            fail("usage: varlink-certification --varlink=unix:PATH (or socket activation)")
        }
        endpoint = .listeningDescriptor(passed.fd)
    } catch {
        fail("\(error)")
    }
}

let server = VarlinkServer(service: service, endpoint: endpoint, logger: { event in
    FileHandle.standardError.write(Data("varlink-certification: \(event)\n".utf8))
})
do {
    try await server.start()
} catch {
    fail("\(error)")
}
FileHandle.standardOutput.write(Data("Listening on \(address ?? "socket-activated descriptor")\n".utf8))

await TerminationSignal.wait()
await server.stop(gracePeriod: .seconds(2))
exit(0)
