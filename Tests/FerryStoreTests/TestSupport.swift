import FerryTestSupport
import Foundation
import Synchronization
@testable import FerryModel
@testable import FerryStore

/// A wall clock the test moves by hand.
final class TestWall: Sendable {
    let now = Atomic<Int64>(1_764_417_600_000)
    func advance(_ delta: Int64) { now.add(delta, ordering: .relaxed) }
    var read: @Sendable () -> Int64 { { self.now.load(ordering: .relaxed) } }
}

func makeStore(_ dir: TempDir, wall: TestWall? = nil, immutable: Set<String> = [], node: UInt64? = nil,
               configure: (inout StoreConfiguration) -> Void = { _ in }) throws -> Store {
    var config = StoreConfiguration(directory: dir.path)
    config.durability = .normal
    config.immutableEntities = immutable
    if let wall { config.wallClock = wall.read }
    if let node { config.random64 = { node } }
    configure(&config)
    return try Store(configuration: config)
}

let sha256OfHello = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
