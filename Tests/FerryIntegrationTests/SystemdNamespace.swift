import FerryJSON
import FerryTestSupport
import Foundation
import Glibc

/// A real systemd booted as PID 1 in new PID, mount, UTS, IPC and network namespaces, with
/// root's user manager (`user@0.service`) running in it, for testing ferryd as a service.
/// An unprivileged user, `testUser`, exists only inside (a private /etc/passwd and
/// /etc/group, a home on a private /home); its user manager starts on demand.
///
/// It sees only the units the test gives it: `SYSTEMD_UNIT_PATH` names the test directory
/// alone, so none of the host image's units (PostgreSQL, `systemd-tmpfiles-setup`, which
/// would empty the shared `/tmp`, timers, gettys) exist for it. What it could change on the
/// host is made private before it starts: `/run`, `/tmp`, `/var/tmp`, `/root` (the user
/// manager's home, where ferryd keeps its state), `/home`, `/var/log/journal` and `/dev` are
/// fresh tmpfs mounts in its mount namespace, and the cgroup tree it manages is a new subtree of the
/// test's own cgroup. The root file system is otherwise shared, read and write, as the
/// systemd user of a real machine would see it.
///
/// Host-side paths of files inside: `hostPath(inside:)` (through `/proc/PID/root`).
/// `tearDown()` kills its PID 1, which takes every process of the namespace with it, then
/// removes the cgroup subtree and the test directory.
final class SystemdNamespace: @unchecked Sendable {
    // @unchecked: every stored property is a constant; `launcher` is only polled and waited on.

    /// The test directory as the namespace sees it.
    static let insideDirectory = "/run/ferry-test"
    /// Where the user manager looks for units (its `SYSTEMD_UNIT_PATH`).
    static let userUnitDirectory = insideDirectory + "/user"
    /// The runtime directory of root's user manager (`%t` in user units).
    static let userRuntimeDirectory = "/run/user/0"
    /// The unprivileged user that exists only in the namespace.
    static let testUserName = "ferry-test"

    /// Which service manager a `systemctl` call talks to.
    enum Manager: Sendable {
        /// PID 1.
        case system
        /// Root's user manager, `user@0.service`.
        case root
        /// The user manager of `testUser` (started with `startTestUserManager()`), called
        /// as that user.
        case testUser
    }

    /// The test directory on the host, bind-mounted at `insideDirectory`.
    let directory: String
    /// The host's process id of the namespace's PID 1.
    let initPID: pid_t
    /// The host path of the cgroup subtree the namespace's systemd manages.
    let cgroup: String
    /// The uid (and gid) of `testUserName`: one the host's /etc/passwd does not use.
    let testUser: uid_t
    private let launcher: Process
    private let tools: Tools

    /// The host tools the test drives, found before anything starts.
    struct Tools: Sendable {
        var unshare: String
        var nsenter: String
        var setpriv: String
        var systemctl: String
        var journalctl: String
        var systemd: String

        static func find() throws -> Tools {
            Tools(
                unshare: try SystemdCommand.find("unshare", package: "util-linux"),
                nsenter: try SystemdCommand.find("nsenter", package: "util-linux"),
                setpriv: try SystemdCommand.find("setpriv", package: "util-linux"),
                systemctl: try SystemdCommand.find("systemctl", package: "systemd"),
                journalctl: try SystemdCommand.find("journalctl", package: "systemd"),
                systemd: try SystemdCommand.first(
                    of: ["/lib/systemd/systemd", "/usr/lib/systemd/systemd"], package: "systemd"))
        }
    }

    private init(directory: String, initPID: pid_t, cgroup: String, testUser: uid_t, launcher: Process, tools: Tools) {
        self.directory = directory
        self.initPID = initPID
        self.cgroup = cgroup
        self.testUser = testUser
        self.launcher = launcher
        self.tools = tools
    }

    // MARK: Boot and tear-down

    /// Boots systemd in its namespaces, waits until it is up (`running` or `degraded`), and
    /// starts root's user manager.
    /// - Throws: `SystemdCommand.Failure` when not root, when a tool is missing, or when
    ///   systemd does not come up (with its console output and journal).
    static func boot() async throws -> SystemdNamespace {
        guard geteuid() == 0 else {
            throw SystemdCommand.Failure(
                "the systemd test boots systemd as PID 1 in new namespaces and needs root (CI and make test run as root)")
        }
        let tools = try Tools.find()
        let hierarchy = try SystemdCgroupHierarchy.find()
        hierarchy.removeStaleSubtrees()

        let tag = "ferry-systemd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let directory = NSTemporaryDirectory().hasSuffix("/")
            ? NSTemporaryDirectory() + tag : NSTemporaryDirectory() + "/" + tag
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let cgroup = hierarchy.ownPath + "/" + tag
        let testUser: uid_t
        do {
            testUser = try writeAccounts(into: directory)
            try writeUnits(into: directory, systemdPath: tools.systemd)
            try bootScript.write(toFile: directory + "/boot.sh", atomically: true, encoding: .utf8)
            guard mkdir(cgroup, 0o755) == 0 else {
                throw SystemdCommand.Failure("cannot create the cgroup \(cgroup): \(String(cString: strerror(errno)))")
            }
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }

        let launcher = Process()
        launcher.executableURL = URL(fileURLWithPath: tools.unshare)
        launcher.arguments = [
            "--pid", "--fork", "--kill-child", "--mount", "--mount-proc", "--propagation", "private",
            "--uts", "--ipc", "--net", "--",
            "/bin/sh", directory + "/boot.sh", directory, cgroup, hierarchy.needsRemount ? "remount" : "keep",
            tools.systemd, testUserName, String(testUser),
        ]
        launcher.standardInput = FileHandle.nullDevice
        _ = FileManager.default.createFile(atPath: directory + "/console.log", contents: nil)
        let console = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/console.log"))
        launcher.standardOutput = console
        launcher.standardError = console
        do {
            try launcher.run()
        } catch {
            SystemdCgroupHierarchy.removeSubtree(cgroup)
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }

        // The child unshare forks becomes PID 1 and execs systemd once its mounts are made.
        let initPID: pid_t
        do {
            initPID = try await poll("the namespace's PID 1 to exec systemd", timeout: .seconds(20)) {
                guard launcher.isRunning else {
                    throw SystemdCommand.Failure("the namespace setup exited with status \(launcher.terminationStatus)")
                }
                guard let child = childProcesses(of: launcher.processIdentifier).first else { return (nil, "no child yet") }
                let command = (try? String(contentsOfFile: "/proc/\(child)/comm", encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
                return (command == "systemd" ? child : nil, "PID 1 runs \(command)")
            }
        } catch {
            if launcher.isRunning { kill(launcher.processIdentifier, SIGKILL) }
            launcher.waitUntilExit()
            let log = (try? String(contentsOfFile: directory + "/console.log", encoding: .utf8)) ?? ""
            SystemdCgroupHierarchy.removeSubtree(cgroup)
            try? FileManager.default.removeItem(atPath: directory)
            throw SystemdCommand.Failure("\(error)\nconsole:\n\(log)")
        }

        let namespace = SystemdNamespace(
            directory: directory, initPID: initPID, cgroup: cgroup, testUser: testUser, launcher: launcher, tools: tools)
        do {
            _ = try await poll("systemd in the namespace to finish booting", timeout: .seconds(30)) {
                let state = try await namespace.systemctl(["is-system-running"]).stdout
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                return (state == "running" || state == "degraded" ? state : nil, "is-system-running: \(state)")
            }
            let started = try await namespace.systemctl(["start", "user@0.service"], timeout: .seconds(30))
            guard started.succeeded else { throw SystemdCommand.Failure("root's user manager did not start: \(started)") }
            _ = try await poll("root's user manager to finish starting", timeout: .seconds(30)) {
                let state = try await namespace.systemctl(["is-system-running"], manager: .root).stdout
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                return (state == "running" || state == "degraded" ? state : nil, "is-system-running --user: \(state)")
            }
        } catch {
            let diagnostics = await namespace.diagnostics()
            await namespace.tearDown()
            throw SystemdCommand.Failure("\(error)\n\(diagnostics)")
        }
        return namespace
    }

    /// Kills the namespace's PID 1 (the kernel then kills every other process in the PID
    /// namespace, and the mount namespace goes with the last of them), waits for the
    /// launcher to exit, and removes the cgroup subtree and the test directory.
    func tearDown() async {
        kill(initPID, SIGKILL)
        let deadline = ContinuousClock.now + .seconds(20)
        while launcher.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if launcher.isRunning {
            kill(launcher.processIdentifier, SIGKILL)
        }
        launcher.waitUntilExit()
        SystemdCgroupHierarchy.removeSubtree(cgroup)
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: Commands inside

    /// Runs a command in the namespace's mount, PID, UTS, IPC and network namespaces, with
    /// its root and working directory.
    func run(_ command: [String], timeout: Duration = .seconds(60)) async throws -> SystemdCommand.Output {
        try await SystemdCommand.run(
            tools.nsenter,
            ["--target", String(initPID), "--mount", "--pid", "--uts", "--ipc", "--net", "--root", "--wd", "--"]
                + command,
            timeout: timeout)
    }

    /// Runs a command inside as the test user, with its runtime directory.
    func runAsTestUser(_ command: [String], timeout: Duration = .seconds(60)) async throws -> SystemdCommand.Output {
        try await run([tools.setpriv, "--reuid=\(testUser)", "--regid=\(testUser)", "--clear-groups",
                       "/usr/bin/env", "XDG_RUNTIME_DIR=/run/user/\(testUser)"] + command, timeout: timeout)
    }

    /// Runs `systemctl` against `manager`.
    func systemctl(_ arguments: [String], manager: Manager = .system, timeout: Duration = .seconds(60)) async throws
        -> SystemdCommand.Output
    {
        switch manager {
        case .system:
            return try await run([tools.systemctl, "--no-pager"] + arguments, timeout: timeout)
        case .root:
            return try await run(
                ["/usr/bin/env", "XDG_RUNTIME_DIR=" + Self.userRuntimeDirectory, tools.systemctl, "--user", "--no-pager"]
                    + arguments, timeout: timeout)
        case .testUser:
            return try await run(
                [tools.setpriv, "--reuid=\(testUser)", "--regid=\(testUser)", "--clear-groups",
                 "/usr/bin/env", "XDG_RUNTIME_DIR=/run/user/\(testUser)", tools.systemctl, "--user", "--no-pager"]
                    + arguments, timeout: timeout)
        }
    }

    /// Starts the user manager of `testUser` and waits until it is up.
    func startTestUserManager() async throws {
        let started = try await systemctl(["start", "user@\(testUser).service"], timeout: .seconds(30))
        guard started.succeeded else { throw SystemdCommand.Failure("the test user's manager did not start: \(started)") }
        _ = try await Self.poll("the test user's manager to finish starting", timeout: .seconds(30)) {
            let state = try await systemctl(["is-system-running"], manager: .testUser).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return (state == "running" || state == "degraded" ? state : nil, "is-system-running --user: \(state)")
        }
    }

    /// The unit's properties (`systemctl show -p ...`) in `manager`, by name.
    func show(_ unit: String, _ properties: [String], manager: Manager = .root) async throws -> [String: String] {
        let output = try await systemctl(["show", unit] + properties.flatMap { ["-p", $0] }, manager: manager)
        guard output.succeeded else { throw SystemdCommand.Failure("cannot read the properties of \(unit): \(output)") }
        var values: [String: String] = [:]
        for line in output.stdout.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return values
    }

    /// The journal entries (`journalctl -o json`) that match `matches` (`FIELD=value`).
    func journal(_ matches: [String]) async throws -> [[String: JSONValue]] {
        let output = try await run([tools.journalctl, "--no-pager", "-o", "json"] + matches)
        guard output.status == 0 else { throw SystemdCommand.Failure("journalctl failed: \(output)") }
        var entries: [[String: JSONValue]] = []
        for line in output.stdout.split(separator: "\n") where !line.isEmpty {
            guard case .object(let entry) = try JSONParser.parse(String(line)) else {
                throw SystemdCommand.Failure("journalctl printed a line that is not a JSON object: \(line)")
            }
            entries.append(entry)
        }
        return entries
    }

    /// The console output and the end of the namespace's journal, for failure messages.
    func diagnostics() async -> String {
        let journal = (try? await run([tools.journalctl, "--no-pager", "-n", "150", "-o", "short-monotonic"]))?
            .stdout ?? "(journalctl did not run)"
        let console = (try? String(contentsOfFile: directory + "/console.log", encoding: .utf8)) ?? ""
        return "--- namespace console ---\n\(console)\n--- namespace journal (last 150 entries) ---\n\(journal)"
    }

    /// The host path of `path` inside the namespace.
    func hostPath(inside path: String) -> String {
        "/proc/\(initPID)/root" + path
    }

    /// Polls `probe` until it returns a value, at most for `timeout`. The probe also returns
    /// what it saw, for the message when time runs out.
    static func poll<T: Sendable>(
        _ what: String, timeout: Duration, interval: Duration = .milliseconds(100),
        _ probe: () async throws -> (T?, String)
    ) async throws -> T {
        let deadline = ContinuousClock.now + timeout
        var seen = ""
        while true {
            let (value, observation) = try await probe()
            if let value { return value }
            seen = observation
            if ContinuousClock.now >= deadline { break }
            try await Task.sleep(for: interval)
        }
        throw SystemdCommand.Failure("timed out after \(timeout) waiting for \(what); last seen: \(seen)")
    }

    // MARK: Setup

    /// Runs as PID 1 of the new namespaces: joins the cgroup made for it, makes the private
    /// mounts, then becomes systemd. Arguments: the test directory, the cgroup, whether to
    /// mount the cgroup2 hierarchy over /sys/fs/cgroup (hybrid hosts), systemd's path, the
    /// test user's name and uid.
    private static let bootScript = """
        set -eu
        dir=$1 cgroup=$2 remount=$3 systemd=$4 user=$5 uid=$6
        echo 0 > "$cgroup/cgroup.procs"
        if [ "$remount" = remount ]; then
            # Unified mode: the v1 controllers of a hybrid host stay out of the namespace.
            mount -t cgroup2 cgroup2 /sys/fs/cgroup
        fi
        mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
        mkdir /run/ferry-test
        mount --bind "$dir" /run/ferry-test
        mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
        mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /var/tmp
        mount -t tmpfs -o mode=0700 tmpfs /root
        # The test user: in the namespace's accounts only, with a home on a private /home.
        mount --bind /run/ferry-test/passwd /etc/passwd
        mount --bind /run/ferry-test/group /etc/group
        mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /home
        mkdir -m 0700 "/home/$user"
        chown "$uid:$uid" "/home/$user"
        if [ -d /var/log/journal ]; then mount -t tmpfs -o mode=2755 tmpfs /var/log/journal; fi
        # A /dev of its own, so that nothing systemd does there reaches the host's.
        mount -t tmpfs -o mode=0755,nosuid tmpfs /dev
        mknod -m 666 /dev/null c 1 3
        mknod -m 666 /dev/zero c 1 5
        mknod -m 666 /dev/full c 1 7
        mknod -m 666 /dev/random c 1 8
        mknod -m 666 /dev/urandom c 1 9
        mknod -m 666 /dev/tty c 5 0
        mkdir /dev/shm
        mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
        ln -s /proc/self/fd /dev/fd
        ln -s /proc/self/fd/0 /dev/stdin
        ln -s /proc/self/fd/1 /dev/stdout
        ln -s /proc/self/fd/2 /dev/stderr
        exec env -i container=ferry-test SYSTEMD_UNIT_PATH=/run/ferry-test/system "$systemd" --system
        """

    /// Copies the host's /etc/passwd and /etc/group with the test user (and its group) added,
    /// under a uid neither file uses. Returns the uid.
    private static func writeAccounts(into directory: String) throws -> uid_t {
        let passwd = try String(contentsOfFile: "/etc/passwd", encoding: .utf8)
        let group = try String(contentsOfFile: "/etc/group", encoding: .utf8)
        func ids(_ text: String) -> Set<uid_t> {
            Set(text.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: ":", omittingEmptySubsequences: false)
                return fields.count > 2 ? uid_t(fields[2]) : nil
            })
        }
        let taken = ids(passwd).union(ids(group))
        guard let uid = (4242..<60000).lazy.map({ uid_t($0) }).first(where: { !taken.contains($0) }) else {
            throw SystemdCommand.Failure("no free uid for the test user")
        }
        func appending(_ text: String, _ line: String) -> String {
            (text.hasSuffix("\n") || text.isEmpty ? text : text + "\n") + line + "\n"
        }
        try appending(passwd, "\(testUserName):x:\(uid):\(uid):Ferry systemd test:/home/\(testUserName):/bin/sh")
            .write(toFile: directory + "/passwd", atomically: true, encoding: .utf8)
        try appending(group, "\(testUserName):x:\(uid):")
            .write(toFile: directory + "/group", atomically: true, encoding: .utf8)
        return uid
    }

    /// The only units the two managers know: empty targets for the dependencies every unit
    /// has by default, the host's journald, and a user manager for root that needs neither
    /// PAM nor logind.
    private static func writeUnits(into directory: String, systemdPath: String) throws {
        let system = directory + "/system"
        let user = directory + "/user"
        for path in [system, user, directory + "/bin"] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        for target in ["sysinit", "basic", "sockets", "timers", "paths", "slices", "local-fs", "swap", "shutdown"] {
            try "[Unit]\nDescription=Ferry test: \(target) (empty)\n"
                .write(toFile: "\(system)/\(target).target", atomically: true, encoding: .utf8)
        }
        try """
            [Unit]
            Description=Ferry test: boot target (journald only)
            Wants=systemd-journald.service
            """.write(toFile: system + "/default.target", atomically: true, encoding: .utf8)
        for name in ["systemd-journald.service", "systemd-journald.socket"] {
            let candidates = ["/lib/systemd/system/" + name, "/usr/lib/systemd/system/" + name]
            guard let source = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
                throw SystemdCommand.Failure("\(name) is not installed: install the Debian package systemd (make test does)")
            }
            try FileManager.default.copyItem(atPath: source, toPath: system + "/" + name)
        }
        try """
            [Unit]
            Description=Ferry test: user manager for UID %i
            After=systemd-journald.socket

            [Service]
            User=%i
            Type=notify
            ExecStart=\(systemdPath) --user
            Environment=XDG_RUNTIME_DIR=/run/user/%i SYSTEMD_UNIT_PATH=\(userUnitDirectory)
            RuntimeDirectory=user/%i
            RuntimeDirectoryMode=0700
            Slice=user-%i.slice
            KillMode=mixed
            Delegate=yes
            TasksMax=infinity
            """.write(toFile: system + "/user@.service", atomically: true, encoding: .utf8)
        for target in ["default", "basic", "sockets", "timers", "paths", "shutdown", "exit"] {
            try "[Unit]\nDescription=Ferry test: \(target) (user, empty)\n"
                .write(toFile: "\(user)/\(target).target", atomically: true, encoding: .utf8)
        }
    }

    /// The processes whose parent is `parent`, from `/proc/*/stat`.
    private static func childProcesses(of parent: pid_t) -> [pid_t] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var children: [pid_t] = []
        for entry in entries {
            guard let pid = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After "pid (comm)": state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, pid_t(fields[1]) == parent { children.append(pid) }
        }
        return children
    }
}

/// The cgroup2 hierarchy the namespace's systemd manages a subtree of.
struct SystemdCgroupHierarchy {
    /// The host path of the test process's own cgroup in the hierarchy.
    var ownPath: String
    /// True on a hybrid host (cgroup2 at /sys/fs/cgroup/unified): the namespace mounts the
    /// cgroup2 hierarchy over /sys/fs/cgroup so that its systemd runs in unified mode.
    var needsRemount: Bool

    static func find() throws -> SystemdCgroupHierarchy {
        let mount: String
        let remount: Bool
        if isCgroup2("/sys/fs/cgroup") {
            (mount, remount) = ("/sys/fs/cgroup", false)
        } else if isCgroup2("/sys/fs/cgroup/unified") {
            (mount, remount) = ("/sys/fs/cgroup/unified", true)
        } else {
            throw SystemdCommand.Failure("no cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified")
        }
        let own = (try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("0::") }
            .map { String($0.dropFirst(3)) }
        guard let own else { throw SystemdCommand.Failure("/proc/self/cgroup has no cgroup2 (0::) line") }
        let path = own == "/" ? mount : mount + own
        return SystemdCgroupHierarchy(ownPath: path, needsRemount: remount)
    }

    /// Whether the file system mounted last at `path` is cgroup2, from /proc/self/mountinfo
    /// ("ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE ...").
    private static func isCgroup2(_ path: String) -> Bool {
        guard let mounts = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return false }
        var type: Substring?
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 4, fields[4] == path, let dash = fields.firstIndex(of: "-"),
                fields.index(after: dash) < fields.endIndex
            else { continue }
            type = fields[fields.index(after: dash)]
        }
        return type == "cgroup2"
    }

    /// Removes the subtrees of earlier runs whose test process is gone (a crashed run could
    /// not tear down): kills what still runs in them first.
    func removeStaleSubtrees() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: ownPath) else { return }
        for entry in entries where entry.hasPrefix("ferry-systemd-test-") {
            let owner = entry.dropFirst("ferry-systemd-test-".count).split(separator: "-").first.flatMap { pid_t($0) }
            if let owner, kill(owner, 0) == 0 || errno != ESRCH { continue }
            Self.removeSubtree(ownPath + "/" + entry)
        }
    }

    /// Kills whatever still runs in the cgroup subtree at `path` and removes it, children
    /// first, retrying while the killed processes are reaped.
    static func removeSubtree(_ path: String) {
        guard FileManager.default.fileExists(atPath: path) else { return }
        let killFile = open(path + "/cgroup.kill", O_WRONLY | O_CLOEXEC)
        if killFile >= 0 {
            _ = write(killFile, "1", 1)
            close(killFile)
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while FileManager.default.fileExists(atPath: path) && ContinuousClock.now < deadline {
            removeDirectories(path)
            if FileManager.default.fileExists(atPath: path) { usleep(20_000) }
        }
    }

    private static func removeDirectories(_ path: String) {
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: path) {
            for entry in entries {
                var isDirectory: ObjCBool = false
                let child = path + "/" + entry
                if FileManager.default.fileExists(atPath: child, isDirectory: &isDirectory), isDirectory.boolValue {
                    removeDirectories(child)
                }
            }
        }
        rmdir(path)
    }
}
