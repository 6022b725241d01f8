// swift-tools-version:6.0
// Ferry: a local-first sync daemon for Linux. See README.md for the layout.
import PackageDescription

let package = Package(
    name: "Ferry",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "FerryStore", targets: ["FerryStore"]),
        .library(name: "FerryVarlink", targets: ["FerryVarlink"]),
        .library(name: "FerryClient", targets: ["FerryClient"]),
        .executable(name: "ferryd", targets: ["ferryd"]),
        .executable(name: "ferryctl", targets: ["ferryctl"]),
        .executable(name: "ferry-bench", targets: ["ferry-bench"]),
        .executable(name: "ferry-relay", targets: ["ferry-relay"]),
    ],
    targets: [
        // C libraries, each behind one system-library module (see STYLE.md, habit 1).
        .systemLibrary(
            name: "CSQLite", path: "Sources/C/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CSystemd", path: "Sources/C/CSystemd", pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(
            name: "CSodium", path: "Sources/C/CSodium", pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(
            name: "CMicroHTTPD", path: "Sources/C/CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(
            name: "CPostgres", path: "Sources/C/CPostgres", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),

        // Pure layers: no I/O.
        .target(name: "FerryJSON"),
        .target(name: "FerryModel", dependencies: ["FerryJSON"]),
        // The systemd-style INI parser of ferryd.conf and ferry-relay.conf.
        .target(name: "FerryINI"),

        // Thin Swift wrappers over the C libraries.
        .target(name: "FerrySQLite", dependencies: ["CSQLite"]),
        .target(name: "FerryCrypto", dependencies: ["CSodium"]),
        .target(name: "FerrySystemd", dependencies: ["CSystemd"]),
        .target(name: "FerryPostgres", dependencies: ["CPostgres"]),

        // Storage: records, outbox, change log, attachments on SQLite.
        .target(name: "FerryStore", dependencies: ["FerryModel", "FerrySQLite", "FerryCrypto", "FerryJSON"]),

        // Sync: sealed envelopes, owner keys, the transport contract, the folder transport and
        // the sync engine over the store.
        .target(name: "FerrySync", dependencies: ["FerryModel", "FerryCrypto", "FerryJSON", "FerryStore", "CSodium"]),

        // IPC: the Varlink protocol (framing, messages, service dispatch, client).
        .target(name: "FerryVarlink", dependencies: ["FerryJSON"]),
        // The API contract: interface definitions and wire forms shared by daemon and clients.
        .target(name: "FerryAPI", dependencies: ["FerryJSON"]),
        // The typed Swift client of ferryd's API (used by ferryctl; apps can use it too).
        .target(name: "FerryClient", dependencies: ["FerryAPI", "FerryVarlink", "FerryJSON"]),

        // The daemon: configuration, logging, the API service over the store, watchers.
        .target(name: "FerryDaemon", dependencies: [
            "FerryAPI", "FerryStore", "FerrySync", "FerryVarlink", "FerrySystemd", "FerryJSON", "FerryModel", "FerryINI"]),

        // The relay: HTTP request model, routes, handlers, auth, storage (SQLite or PostgreSQL), long-poll hub,
        // metrics, configuration; the libmicrohttpd glue sits in Server/ and is the only importer
        // of CMicroHTTPD.
        .target(name: "FerryRelay", dependencies: [
            "FerrySync", "FerryModel", "FerrySQLite", "FerryPostgres", "FerryCrypto", "FerrySystemd", "FerryJSON", "FerryINI", "CMicroHTTPD"]),

        // Executables.
        .executableTarget(name: "ferry-bench", dependencies: ["FerryStore", "FerrySQLite", "FerryModel", "FerryVarlink", "FerryJSON", "FerryClient", "FerrySync",
                                                         // a throwaway PostgreSQL cluster for `relay --postgresql`
                                                         "FerryTestSupport"]),
        .executableTarget(name: "ferryd", dependencies: ["FerryDaemon"]),
        .executableTarget(name: "ferryctl", dependencies: ["FerryClient", "FerryAPI", "FerryJSON"]),
        .executableTarget(name: "ferry-relay", dependencies: ["FerryRelay", "FerrySystemd", "FerryAPI"]),

        // Test support executables (real processes that tests start).
        .executableTarget(
            name: "ferry-crash-writer", dependencies: ["FerryStore"],
            path: "Tests/Support/ferry-crash-writer"),
        .target(name: "FerryTestSupport", path: "Tests/Support/FerryTestSupport"),
        .executableTarget(
            name: "varlink-certification", dependencies: ["FerryVarlink"],
            path: "Tests/Support/varlink-certification"),

        // Tests (Swift Testing).
        .testTarget(name: "FerryJSONTests", dependencies: ["FerryJSON", "FerryTestSupport"]),
        .testTarget(name: "FerryModelTests", dependencies: ["FerryModel"]),
        .testTarget(name: "FerryStoreTests", dependencies: ["FerryStore", "FerrySQLite", "FerryModel", "FerryTestSupport"]),
        .testTarget(name: "FerryVarlinkTests", dependencies: ["FerryVarlink", "FerryTestSupport"]),
        .testTarget(name: "FerrySyncTests", dependencies: ["FerrySync", "FerryStore", "FerryModel", "FerryCrypto", "FerryTestSupport"]),
        .testTarget(name: "FerryDaemonTests", dependencies: ["FerryDaemon", "FerryINI", "FerryAPI", "FerryJSON", "FerryModel", "FerryStore", "FerrySync", "FerryVarlink"]),
        .testTarget(name: "FerryClientTests", dependencies: ["FerryClient", "FerryAPI", "FerryJSON"]),
        // Unit tests of the relay's pure parts and storage, and a real ferry-relay process.
        .testTarget(name: "FerryRelayTests", dependencies: [
            "FerryRelay", "FerryPostgres", "FerrySync", "FerryModel", "FerryJSON", "FerryCrypto", "FerryAPI", "FerrySQLite", "FerryTestSupport"]),
        // Real processes: ferryd, ferryctl, systemd as PID 1 in a namespace.
        .testTarget(name: "FerryIntegrationTests", dependencies: ["FerryClient", "FerryAPI", "FerryVarlink", "FerryJSON", "FerryTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
