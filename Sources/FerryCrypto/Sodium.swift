import CSodium

/// libsodium's one-time initialisation. `sodium_init` is thread-safe and idempotent; calling it
/// before every first use keeps callers from having to remember.
enum Sodium {
    static let initialized: Bool = sodium_init() >= 0

    static func ensureInitialized() {
        precondition(initialized, "libsodium could not be initialised")
    }
}
