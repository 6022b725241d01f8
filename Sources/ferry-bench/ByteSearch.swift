/// Byte-string search for the benchmarks' readers, so that parsing what they read costs them
/// little of the CPU the daemons they measure need (Foundation's `firstRange(of:)` on `[UInt8]`
/// showed up in the daemons' profiles).
enum ByteSearch {
    /// The first occurrence of `needle` in `haystack`.
    static func firstRange(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard let first = needle.first, haystack.count >= needle.count else { return nil }
        return haystack.withUnsafeBufferPointer { h in
            needle.withUnsafeBufferPointer { n -> Range<Int>? in
                var i = 0
                let last = h.count - n.count
                while i <= last {
                    if h[i] == first {
                        var k = 1
                        while k < n.count && h[i + k] == n[k] { k += 1 }
                        if k == n.count { return i..<(i + n.count) }
                    }
                    i += 1
                }
                return nil
            }
        }
    }
}
