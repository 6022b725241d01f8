import Foundation
import Glibc

/// Listening sockets passed in by systemd (or any supervisor using the same protocol),
/// read the way `sd_listen_fds(3)` reads them, without libsystemd.
///
/// The protocol: `LISTEN_PID` names the process the descriptors are meant for (so a
/// child that inherited the environment ignores them), `LISTEN_FDS` counts them, they are
/// numbered from 3 up, and `LISTEN_FDNAMES` optionally names them, colon-separated.
public enum SocketActivation {
    /// The first passed descriptor (`SD_LISTEN_FDS_START`).
    public static let firstDescriptor: Int32 = 3

    /// One passed descriptor and its name (`"unknown"` when none was given, as systemd does).
    public struct ListenDescriptor: Sendable, Hashable {
        public var fd: Int32
        public var name: String

        public init(fd: Int32, name: String) {
            self.fd = fd
            self.name = name
        }
    }

    /// Why the activation environment could not be used.
    public enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// `LISTEN_PID` or `LISTEN_FDS` is not a valid number.
        case malformed(variable: String, value: String)
        /// `LISTEN_FDNAMES` has a different number of names than `LISTEN_FDS`.
        case nameCountMismatch(descriptors: Int, names: Int)

        public var description: String {
            switch self {
            case let .malformed(variable, value): return "\(variable)=\"\(value)\" is not a valid number"
            case let .nameCountMismatch(descriptors, names):
                return "LISTEN_FDNAMES has \(names) names for \(descriptors) descriptors"
            }
        }
    }

    /// Reads the passed descriptors from `environment` for the process `processID`.
    ///
    /// Pure: it neither touches the descriptors nor changes the environment.
    /// - Returns: the descriptors, or `[]` when none were passed or they are meant for
    ///   another process (`LISTEN_PID` unset or different).
    /// - Throws: `SocketActivation.Failure` when the variables are malformed.
    public static func listenDescriptors(
        environment: [String: String], processID: Int32
    ) throws(Failure) -> [ListenDescriptor] {
        guard let pidText = environment["LISTEN_PID"] else { return [] }
        guard let pid = Int32(pidText.trimmingCharacters(in: .whitespaces)), pid > 0 else {
            throw .malformed(variable: "LISTEN_PID", value: pidText)
        }
        guard pid == processID else { return [] }
        guard let countText = environment["LISTEN_FDS"] else { return [] }
        guard let count = Int32(countText.trimmingCharacters(in: .whitespaces)), count >= 0,
            count <= Int32.max - firstDescriptor
        else {
            throw .malformed(variable: "LISTEN_FDS", value: countText)
        }
        var names = Array(repeating: "unknown", count: Int(count))
        if let namesText = environment["LISTEN_FDNAMES"], count > 0 {
            let given = namesText.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard given.count == Int(count) else {
                throw .nameCountMismatch(descriptors: Int(count), names: given.count)
            }
            names = given
        }
        return (0..<count).map { ListenDescriptor(fd: firstDescriptor + $0, name: names[Int($0)]) }
    }

    /// Takes the descriptors passed to this process: reads the real environment, marks
    /// each descriptor close-on-exec, and unsets `LISTEN_PID`, `LISTEN_FDS` and
    /// `LISTEN_FDNAMES` so children do not see them (like `sd_listen_fds(1)`).
    /// - Throws: `SocketActivation.Failure` when the variables are malformed.
    public static func takeListenDescriptors() throws(Failure) -> [ListenDescriptor] {
        let descriptors = try listenDescriptors(
            environment: ProcessInfo.processInfo.environment, processID: getpid())
        for descriptor in descriptors {
            _ = fcntl(descriptor.fd, F_SETFD, FD_CLOEXEC)
        }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        return descriptors
    }
}
