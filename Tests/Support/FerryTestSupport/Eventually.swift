/// Polls `condition` every `poll` until it holds or `timeout` passed; returns its last value.
/// For waiting on other processes and background loops without fixed sleeps.
public func eventually(_ timeout: Duration = .seconds(30), poll: Duration = .milliseconds(20),
                       _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: poll)
    }
    return try await condition()
}
