/// The container a value is being read into.
enum JSONParent {
    case none, array, object
}

/// The scanner's stack of open containers: one bit per level, so nesting up
/// to 64 levels costs no allocation and deeper nesting one word per 64 levels.
struct ContainerStack {
    /// Number of open containers.
    private(set) var depth = 0
    private var low: UInt64 = 0
    private var high: [UInt64] = []

    /// The innermost open container, or `.none` at top level.
    var top: JSONParent {
        guard depth > 0 else { return .none }
        return bit(depth - 1) ? .object : .array
    }

    mutating func push(object: Bool) {
        let level = depth
        let word = level >> 6
        let mask = UInt64(1) << UInt64(level & 63)
        if word == 0 {
            low = object ? (low | mask) : (low & ~mask)
        } else {
            if high.count < word { high.append(0) }
            high[word - 1] = object ? (high[word - 1] | mask) : (high[word - 1] & ~mask)
        }
        depth = level + 1
    }

    /// Closes the innermost container; callers only pop after a push.
    mutating func pop() {
        if depth > 0 { depth -= 1 }
    }

    private func bit(_ level: Int) -> Bool {
        let word = level >> 6
        let mask = UInt64(1) << UInt64(level & 63)
        return (word == 0 ? low : high[word - 1]) & mask != 0
    }
}
