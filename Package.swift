// swift-tools-version:6.0
// Ferry: a local-first sync daemon for Linux. See README.md for the layout.
import PackageDescription

let package = Package(
    name: "Ferry",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "FerryStore", targets: ["FerryStore"]),
        .library(name: "FerryVarlink", targets: ["FerryVarlink"]),
        .executable(name: "ferry-bench", targets: ["ferry-bench"]),
    ],
    targets: [
        // C libraries, each behind one system-library module (see STYLE.md, habit 1).
        .systemLibrary(
            name: "CSQLite", path: "Sources/C/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CSodium", path: "Sources/C/CSodium", pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]),

        // Pure layers: no I/O.
        .target(name: "FerryJSON"),
        .target(name: "FerryModel", dependencies: ["FerryJSON"]),

        // Thin Swift wrappers over the C libraries.
        .target(name: "FerrySQLite", dependencies: ["CSQLite"]),
        .target(name: "FerryCrypto", dependencies: ["CSodium"]),

        // Storage: records, outbox, change log, attachments on SQLite.
        .target(name: "FerryStore", dependencies: ["FerryModel", "FerrySQLite", "FerryCrypto", "FerryJSON"]),

        // IPC: the Varlink protocol (framing, messages, service dispatch, client).
        .target(name: "FerryVarlink", dependencies: ["FerryJSON"]),

        // Executables.
        .executableTarget(name: "ferry-bench", dependencies: ["FerryStore", "FerrySQLite", "FerryModel"]),
        .executableTarget(name: "ferry-demo", dependencies: ["FerryStore"]),

        // Test support executables (real processes that tests start).
        .executableTarget(
            name: "ferry-crash-writer", dependencies: ["FerryStore"],
            path: "Tests/Support/ferry-crash-writer"),
        .executableTarget(
            name: "varlink-certification", dependencies: ["FerryVarlink"],
            path: "Tests/Support/varlink-certification"),

        // Tests (Swift Testing).
        .testTarget(name: "FerryJSONTests", dependencies: ["FerryJSON"]),
        .testTarget(name: "FerryModelTests", dependencies: ["FerryModel"]),
        .testTarget(name: "FerryStoreTests", dependencies: ["FerryStore", "FerrySQLite", "FerryModel"]),
        .testTarget(name: "FerryVarlinkTests", dependencies: ["FerryVarlink"]),
    ],
    swiftLanguageModes: [.v6]
)
