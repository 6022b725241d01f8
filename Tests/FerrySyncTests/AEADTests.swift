import FerryCrypto
import FerryTestSupport
import Foundation
import Testing
@testable import FerrySync

@Suite struct AEADTests {
    static let key = Fixtures.keys.dataKey

    /// Every seal takes a nonce of its own, also across refills of the nonce pool and from
    /// several threads at once, and what is sealed opens again.
    @Test func everySealHasItsOwnNonceAndOpens() async {
        let plaintext = Array("the same text every time".utf8)
        let sealed = await withTaskGroup(of: [[UInt8]].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<500).map { _ in AEAD.seal(plaintext, associatedData: [1, 2, 3], key: Self.key) } }
            }
            var all: [[UInt8]] = []
            for await part in group { all += part }
            return all
        }
        #expect(sealed.count == 2000)
        let nonces = Set(sealed.map { Array($0.prefix(AEAD.nonceBytes)) })
        #expect(nonces.count == sealed.count)
        #expect(!nonces.contains([UInt8](repeating: 0, count: AEAD.nonceBytes)))
        for box in sealed.prefix(50) {
            #expect((try? AEAD.open(box, associatedData: [1, 2, 3], key: Self.key)) == plaintext)
            #expect(throws: CryptoError.self) { try AEAD.open(box, associatedData: [1, 2, 4], key: Self.key) }
        }
    }
}
