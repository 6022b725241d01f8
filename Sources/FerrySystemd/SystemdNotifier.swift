import CSystemd
import Glibc

/// Tells the service manager about the daemon's state through `sd_notify(3)`.
///
/// Every call is a no-op that returns `false` when the process was not started by systemd
/// with `Type=notify` (no `NOTIFY_SOCKET`), so the daemon calls these unconditionally.
/// The environment is left as it is (`unset_environment` is 0): the daemon notifies many
/// times over its life. `sd_notify` is thread-safe, so any thread or task may call these.
public enum SystemdNotifier {
    /// True when `NOTIFY_SOCKET` is set: the process runs under systemd with
    /// `Type=notify` (or another supervisor speaking the same protocol).
    public static var isAvailable: Bool {
        guard let socket = getenv("NOTIFY_SOCKET") else { return false }
        return socket.pointee != 0
    }

    /// Sends raw state assignments, one per line (for example `"READY=1\nSTATUS=idle"`).
    /// - Returns: true when the message was sent; false when not under systemd or when
    ///   sending failed (the daemon goes on either way: a notification is advisory).
    @discardableResult
    public static func notify(_ state: String) -> Bool {
        guard isAvailable else { return false }
        return sd_notify(0, state) > 0
    }

    /// Says that start-up is complete (`READY=1`), with the status line to show.
    /// Also sent after a reload has finished (see `reloading(status:)`).
    @discardableResult
    public static func ready(status: String) -> Bool {
        notify("READY=1\nSTATUS=\(statusLine(status))")
    }

    /// Updates the free-form status `systemctl status` shows (`STATUS=`).
    @discardableResult
    public static func status(_ text: String) -> Bool {
        notify("STATUS=\(statusLine(text))")
    }

    /// Keeps the service watchdog from firing (`WATCHDOG=1`). Send it at least every
    /// half of `watchdogTimeout`, from the loop whose liveness it vouches for.
    @discardableResult
    public static func watchdog() -> Bool {
        notify("WATCHDOG=1")
    }

    /// Says that the daemon has begun to shut down (`STOPPING=1`), with a status line.
    @discardableResult
    public static func stopping(status: String) -> Bool {
        notify("STOPPING=1\nSTATUS=\(statusLine(status))")
    }

    /// Says that the daemon is reloading its configuration (`RELOADING=1`), with a status
    /// line. The daemon must send `ready(status:)` when the reload is done; until then
    /// systemd shows the unit as `reloading`.
    ///
    /// `MONOTONIC_USEC=` (the current `CLOCK_MONOTONIC` time in microseconds) goes with it:
    /// systemd 253 and later require it to match reloads with `Type=notify-reload`, and
    /// older managers (Debian 12 ships 252) ignore assignments they do not know, so it is
    /// always sent.
    @discardableResult
    public static func reloading(status: String) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
        return notify("RELOADING=1\nMONOTONIC_USEC=\(microseconds)\nSTATUS=\(statusLine(status))")
    }

    /// The watchdog timeout systemd set for this process (`WATCHDOG_USEC`, honoured only
    /// when `WATCHDOG_PID` is unset or names this process, as `sd_watchdog_enabled(3)`
    /// reads it), or nil when the watchdog is off or the variables are malformed.
    public static var watchdogTimeout: Duration? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        return .microseconds(Int64(clamping: microseconds))
    }

    /// A newline would end the `STATUS=` assignment and start another one, so a status
    /// text is kept to one line.
    private static func statusLine(_ text: String) -> String {
        guard text.contains(where: { $0 == "\n" || $0 == "\r" }) else { return text }
        return String(text.map { $0 == "\n" || $0 == "\r" ? " " : $0 })
    }
}
