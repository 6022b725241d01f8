import FerryJSON
import FerryVarlink
import Foundation
import Glibc
import Testing

/// ferryd as a systemd service, under a real systemd: the unit files from `systemd/`, run by
/// user managers (root's, and an unprivileged user's) inside a systemd booted as PID 1 in its
/// own namespaces (see `SystemdNamespace`). A user manager rather than a system-unit copy, as
/// ferryd.service is a user unit: %t, %h and the sandbox's user namespace are tested as
/// shipped. Needs root; it fails, never skips, when something is missing.
@Suite("ferryd under systemd")
struct SystemdTests {
    @Test("systemd-analyze verify passes on ferryd.service and ferryd.socket (as installed)")
    func unitFilesVerify() async throws {
        let analyze = try SystemdCommand.find("systemd-analyze", package: "systemd")
        let ferryd = try SystemdUnitFiles.builtFerryd()
        let directory = NSTemporaryDirectory() + "/ferry-systemd-verify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let units = directory + "/units"
        let runtime = directory + "/runtime"
        try FileManager.default.createDirectory(atPath: units, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try SystemdUnitFiles.serviceText(ferrydPath: ferryd)
            .write(toFile: units + "/ferryd.service", atomically: true, encoding: .utf8)
        try SystemdUnitFiles.socketText().write(toFile: units + "/ferryd.socket", atomically: true, encoding: .utf8)

        // A user manager's view needs a runtime directory ($XDG_RUNTIME_DIR, %t).
        let verify = try await SystemdCommand.run(
            "/usr/bin/env",
            ["XDG_RUNTIME_DIR=" + runtime, analyze, "--user", "verify", units + "/ferryd.socket", units + "/ferryd.service"])
        #expect(verify.succeeded, "\(verify)")
        let complaints = verify.stderr.split(separator: "\n").filter { $0.contains("ferryd") }
        #expect(complaints.isEmpty, "systemd-analyze complains about the units:\n\(complaints.joined(separator: "\n"))")
    }

    @Test(
        "ferryd as a user service: socket activation, READY=1, STATUS=, journal fields, reload, unprivileged sandbox, watchdog, graceful stop",
        .timeLimit(.minutes(3)))
    func ferrydUnderSystemd() async throws {
        let ferryd = try SystemdUnitFiles.builtFerryd()
        let namespace = try await SystemdNamespace.boot()
        do {
            try await Self.exercise(namespace, ferryd: ferryd)
        } catch {
            let diagnostics = await namespace.diagnostics()
            await namespace.tearDown()
            throw SystemdCommand.Failure("\(error)\n\(diagnostics)")
        }
        await namespace.tearDown()
    }

    private static let service = "ferryd.service"
    private static let socket = "ferryd.socket"

    private static func exercise(_ namespace: SystemdNamespace, ferryd: String) async throws {
        // Install as `make install` would (ExecStart rewritten for where the binary is), into
        // the user manager's unit directory. The binary is copied in because the namespace
        // has its own /tmp and /root, where a build directory may be.
        try FileManager.default.copyItem(atPath: ferryd, toPath: namespace.directory + "/bin/ferryd")
        let userUnits = namespace.directory + "/user"
        try SystemdUnitFiles.serviceText(ferrydPath: SystemdNamespace.insideDirectory + "/bin/ferryd")
            .write(toFile: userUnits + "/" + service, atomically: true, encoding: .utf8)
        try SystemdUnitFiles.socketText().write(toFile: userUnits + "/" + socket, atomically: true, encoding: .utf8)
        try await expectSuccess(namespace.systemctl(["daemon-reload"], manager: .root))

        try await socketActivation(namespace)
        try await readinessAndStatus(namespace)
        try await journalFields(namespace)
        try await reload(namespace)
        try await unprivilegedUser(namespace)
        try await watchdog(namespace)
        try await gracefulStop(namespace)
    }

    /// ferryd.socket listens and ferryd.service is not running; the first connection, a real
    /// Varlink call, starts ferryd on the passed socket.
    private static func socketActivation(_ namespace: SystemdNamespace) async throws {
        try await expectSuccess(namespace.systemctl(["start", socket], manager: .root))
        let socketState = try await namespace.show(socket, ["ActiveState", "SubState"])
        try #require(socketState["ActiveState"] == "active" && socketState["SubState"] == "listening",
                     "ferryd.socket is not listening: \(socketState)")
        let before = try await namespace.show(service, ["ActiveState", "MainPID"])
        try #require(before["ActiveState"] == "inactive", "ferryd.service runs before any connection: \(before)")

        let socketPath = SystemdNamespace.userRuntimeDirectory + "/ferry/ferryd.sock"
        let hostSocketPath = namespace.hostPath(inside: socketPath)
        var socketStatus = stat()
        var directoryStatus = stat()
        try #require(stat(hostSocketPath, &socketStatus) == 0, "no socket at \(socketPath)")
        try #require(stat(namespace.hostPath(inside: SystemdNamespace.userRuntimeDirectory + "/ferry"), &directoryStatus) == 0)
        #expect(socketStatus.st_mode & 0o777 == 0o600, "socket mode \(String(socketStatus.st_mode & 0o777, radix: 8))")
        #expect(directoryStatus.st_mode & 0o777 == 0o700, "socket directory mode \(String(directoryStatus.st_mode & 0o777, radix: 8))")

        let client = try VarlinkClient(address: "unix:" + hostSocketPath)
        defer { client.close() }
        // systemd accepts the connection whether or not ferryd comes up to answer, so the
        // call gets a deadline: closing the client ends a call still waiting.
        let deadline = Task {
            try await Task.sleep(for: .seconds(30))
            client.close()
        }
        defer { deadline.cancel() }
        let info: JSONValue
        do {
            info = try await client.call("org.varlink.service.GetInfo")
        } catch {
            throw SystemdCommand.Failure("GetInfo over the activated socket got no answer within 30 s: \(error)")
        }
        let interfaces = info["interfaces"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(info["product"]?.stringValue == "ferryd", "GetInfo: \(info)")
        #expect(interfaces.contains("io.ferry.Store") && interfaces.contains("io.ferry.Engine"), "GetInfo: \(info)")

        let after = try await SystemdNamespace.poll("ferryd.service to be active after the first connection", timeout: .seconds(20)) {
            let state = try await namespace.show(service, ["ActiveState", "SubState", "TriggeredBy"])
            return (state["ActiveState"] == "active" && state["SubState"] == "running" ? state : nil, "\(state)")
        }
        #expect(after["TriggeredBy"]?.contains(socket) == true, "\(after)")
        // ferryd took the passed socket, so the socket unit still holds it.
        let stillListening = try await namespace.show(socket, ["ActiveState", "SubState"])
        #expect(stillListening["ActiveState"] == "active" && stillListening["SubState"] == "running", "\(stillListening)")
    }

    /// The service is a Type=notify service that reached `active`: systemd only gets there
    /// on READY=1. STATUS= carries ferryd's state.
    private static func readinessAndStatus(_ namespace: SystemdNamespace) async throws {
        let state = try await namespace.show(
            service, ["Type", "NotifyAccess", "ActiveState", "SubState", "StatusText", "MainPID", "NRestarts"])
        #expect(state["Type"] == "notify", "\(state)")
        #expect(state["NotifyAccess"] == "main", "\(state)")
        #expect(state["ActiveState"] == "active" && state["SubState"] == "running", "\(state)")
        #expect((Int(state["MainPID"] ?? "") ?? 0) > 0, "\(state)")
        #expect(state["NRestarts"] == "0", "\(state)")
        let status = state["StatusText"] ?? ""
        #expect(isSensibleStatus(status), "STATUS=\"\(status)\" does not describe ferryd's state (\"idle, N changes pending\")")
    }

    /// ferryd logs through sd_journal_send under systemd: entries of the journal transport
    /// (not stdout lines) with MESSAGE, PRIORITY, SYSLOG_IDENTIFIER=ferryd and FERRY_* fields.
    private static func journalFields(_ namespace: SystemdNamespace) async throws {
        let entry = try await SystemdNamespace.poll("a structured journal entry from ferryd", timeout: .seconds(10)) {
            let entries = try await namespace.journal(["SYSLOG_IDENTIFIER=ferryd"])
            let structured = entries.first { entry in
                entry["_TRANSPORT"]?.stringValue == "journal" && entry.keys.contains { $0.hasPrefix("FERRY_") }
            }
            return (structured, "\(entries.count) entries with SYSLOG_IDENTIFIER=ferryd, transports "
                + Set(entries.compactMap { $0["_TRANSPORT"]?.stringValue }).sorted().joined(separator: ","))
        }
        #expect(entry["MESSAGE"]?.stringValue?.isEmpty == false, "\(entry)")
        #expect(entry["SYSLOG_IDENTIFIER"]?.stringValue == "ferryd", "\(entry)")
        let priority = entry["PRIORITY"]?.stringValue.flatMap { Int($0) }
        #expect(priority.map { (0...7).contains($0) } == true, "PRIORITY: \(entry)")
        #expect(entry["_SYSTEMD_USER_UNIT"]?.stringValue == service, "\(entry)")
    }

    /// `systemctl reload` (SIGHUP): ferryd reloads in place and is active again.
    private static func reload(_ namespace: SystemdNamespace) async throws {
        let before = try await namespace.show(service, ["MainPID"])
        try await expectSuccess(namespace.systemctl(["reload", service], manager: .root, timeout: .seconds(30)))
        let after = try await SystemdNamespace.poll("ferryd.service to be active after the reload", timeout: .seconds(10)) {
            let state = try await namespace.show(service, ["ActiveState", "SubState", "MainPID", "NRestarts", "StatusText"])
            return (state["ActiveState"] == "active" && state["SubState"] == "running" ? state : nil, "\(state)")
        }
        #expect(after["MainPID"] == before["MainPID"], "the reload restarted ferryd: \(before) -> \(after)")
        #expect(after["NRestarts"] == "0", "\(after)")
        #expect(!(after["StatusText"] ?? "").isEmpty, "\(after)")
    }

    /// The same units for an unprivileged user, the way every real user's ferryd runs: there
    /// the sandbox needs a user namespace (PrivateUsers=yes), and it must still let ferryd
    /// open its state in the home directory and bind its own socket.
    private static func unprivilegedUser(_ namespace: SystemdNamespace) async throws {
        try await namespace.startTestUserManager()
        try await expectSuccess(namespace.systemctl(["start", service], manager: .testUser, timeout: .seconds(30)))
        let state = try await namespace.show(service, ["ActiveState", "SubState", "StatusText", "MainPID"], manager: .testUser)
        try #require(state["ActiveState"] == "active" && state["SubState"] == "running", "\(state)")
        #expect(isSensibleStatus(state["StatusText"] ?? ""), "\(state)")

        // The sandbox is in place: a user namespace that maps the user alone, a read-only /.
        let pid = state["MainPID"] ?? "0"
        let uidMap = try await namespace.run(["cat", "/proc/\(pid)/uid_map"])
        let mapping = uidMap.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        #expect(mapping == ["\(namespace.testUser)", "\(namespace.testUser)", "1"], "uid_map of ferryd: \(uidMap)")
        let mountInfo = try await namespace.run(["cat", "/proc/\(pid)/mountinfo"]).stdout
        var rootOptions: [Substring] = []
        for line in mountInfo.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count > 5 && fields[4] == "/" { rootOptions = fields[5].split(separator: ",") }
        }
        #expect(rootOptions.contains("ro"), "/ is not read-only for ferryd: \(rootOptions)")

        let home = "/home/" + SystemdNamespace.testUserName
        #expect(FileManager.default.fileExists(atPath: namespace.hostPath(inside: home + "/.local/state/ferry")),
                "no state directory at \(home)/.local/state/ferry")
        #expect(FileManager.default.fileExists(
            atPath: namespace.hostPath(inside: "/run/user/\(namespace.testUser)/ferry/ferryd.sock")),
                "ferryd did not bind /run/user/\(namespace.testUser)/ferry/ferryd.sock")

        // The sandbox lets ferryd start its https helper (its own binary again): a relay token
        // is checked through it, and the helper's request reaches the network (nothing listens
        // at port 1, so the check cannot be made, and the add says why).
        // ferryctl runs as the user (root is nobody in ferryd's user namespace, and refused).
        try FileManager.default.copyItem(atPath: try Executables.path("ferryctl"), toPath: namespace.directory + "/bin/ferryctl")
        let ferryctl = SystemdNamespace.insideDirectory + "/bin/ferryctl"
        let added = try await namespace.runAsTestUser([ferryctl, "transport", "add", "relay", "relay", "https://127.0.0.1:1",
                                                       "--token", "fr1_" + String(repeating: "A", count: 43)])
        #expect(added.succeeded && added.stderr.contains("warning: the token could not be checked")
                && added.stderr.contains("the connection was refused") && !added.stderr.contains("helper"), "transport add under the sandbox: \(added)")
        let removed = try await namespace.runAsTestUser([ferryctl, "transport", "rm", "relay"])
        #expect(removed.succeeded, "\(removed)")
        try await expectSuccess(namespace.systemctl(["stop", service], manager: .testUser, timeout: .seconds(45)))
    }

    /// With WatchdogSec=3s ferryd stays up by itself (it pings at half the timeout at most);
    /// stopped with SIGSTOP it stops pinging, and systemd aborts, kills and restarts it.
    /// (3 s rather than less leaves room for a machine loaded by the other tests.)
    private static func watchdog(_ namespace: SystemdNamespace) async throws {
        let dropIn = namespace.directory + "/user/" + service + ".d"
        try FileManager.default.createDirectory(atPath: dropIn, withIntermediateDirectories: true)
        try "[Service]\nWatchdogSec=3s\n".write(toFile: dropIn + "/50-test-watchdog.conf", atomically: true, encoding: .utf8)
        try await expectSuccess(namespace.systemctl(["daemon-reload"], manager: .root))
        try await expectSuccess(namespace.systemctl(["restart", service], manager: .root, timeout: .seconds(30)))
        let started = try await namespace.show(service, ["ActiveState", "SubState", "MainPID", "NRestarts", "WatchdogUSec"])
        try #require(started["ActiveState"] == "active" && started["SubState"] == "running", "\(started)")
        try #require(started["WatchdogUSec"] == "3s", "the drop-in did not apply: \(started)")

        // More than two timeouts without a restart: ferryd's engine loop pings.
        try await Task.sleep(for: .seconds(7))
        let alive = try await namespace.show(service, ["ActiveState", "SubState", "MainPID", "NRestarts"])
        try #require(alive["MainPID"] == started["MainPID"] && alive["NRestarts"] == started["NRestarts"]
                        && alive["ActiveState"] == "active",
                     "ferryd was restarted without being stopped: it does not ping the watchdog in time: \(started) -> \(alive)")

        try await expectSuccess(
            namespace.systemctl(["kill", "--kill-who=main", "--signal=SIGSTOP", service], manager: .root))
        let restarted = try await SystemdNamespace.poll("the watchdog to restart the stopped ferryd", timeout: .seconds(45)) {
            let state = try await namespace.show(service, ["ActiveState", "SubState", "MainPID", "NRestarts"])
            let done = state["ActiveState"] == "active" && state["SubState"] == "running"
                && (Int(state["NRestarts"] ?? "") ?? 0) > (Int(started["NRestarts"] ?? "") ?? 0)
                && state["MainPID"] != started["MainPID"] && state["MainPID"] != "0"
            return (done ? state : nil, "\(state)")
        }
        #expect(restarted["NRestarts"] == "1", "\(restarted)")
        let managerLog = try await namespace.journal(["_SYSTEMD_UNIT=user@0.service"])
        let timeouts = managerLog.filter { ($0["MESSAGE"]?.stringValue ?? "").contains("ferryd.service: Watchdog timeout") }
        #expect(!timeouts.isEmpty, "the user manager logged no watchdog timeout for ferryd")

        try FileManager.default.removeItem(atPath: dropIn)
        try await expectSuccess(namespace.systemctl(["daemon-reload"], manager: .root))
    }

    /// `systemctl stop` (SIGTERM): ferryd exits by itself with status 0; the socket stays.
    private static func gracefulStop(_ namespace: SystemdNamespace) async throws {
        try await expectSuccess(namespace.systemctl(["stop", service], manager: .root, timeout: .seconds(45)))
        let state = try await namespace.show(service, ["ActiveState", "Result", "ExecMainCode", "ExecMainStatus"])
        #expect(state["ActiveState"] == "inactive", "\(state)")
        #expect(state["Result"] == "success", "\(state)")
        // ExecMainCode 1 is CLD_EXITED: ferryd returned, no signal ended it.
        #expect(state["ExecMainCode"] == "1" && state["ExecMainStatus"] == "0", "ferryd did not exit cleanly on SIGTERM: \(state)")
        let socketState = try await namespace.show(socket, ["ActiveState", "SubState"])
        #expect(socketState["ActiveState"] == "active" && socketState["SubState"] == "listening", "\(socketState)")
    }

    /// A STATUS= line that says what ferryd is doing: its idle line mentions what is pending;
    /// other states (syncing, reloading) are words, never empty or a bare number.
    private static func isSensibleStatus(_ status: String) -> Bool {
        let text = status.lowercased()
        return text.contains("idle") || text.contains("pending") || text.contains("sync")
    }

    private static func expectSuccess(_ output: SystemdCommand.Output, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try #require(output.succeeded, "\(output)", sourceLocation: sourceLocation)
    }
}
