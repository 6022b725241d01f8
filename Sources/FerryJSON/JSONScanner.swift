/// The RFC 8259 grammar, walked once over a byte buffer without recursion.
///
/// Nesting is tracked in a `ContainerStack` capped at `maxDepth`, so hostile
/// input (say, a million `[`) fails with `.tooDeep` instead of exhausting the
/// stack. Every index is compared with `end` before it is read.
struct JSONScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    let end: Int
    let maxDepth: Int
    /// Next byte to read.
    var pos = 0
    /// Decoded text of the last string with escapes; reused across strings.
    var scratch: [UInt8] = []

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.end = bytes.count
        self.maxDepth = max(0, maxDepth)
    }

    /// Reads exactly one value, reporting it to `sink`, and returns the kind of
    /// the top-level value. Throws the first rule the input breaks. With `stopAfterValue`,
    /// returns as soon as the value ends, with `pos` just past it, whatever follows.
    mutating func run<Sink: JSONSink>(into sink: inout Sink, stopAfterValue: Bool = false) throws(JSONError) -> JSONTopLevel {
        skipWhitespace()
        guard pos < end else { throw JSONError(kind: .empty, offset: pos) }
        let topLevel = Self.topLevel(startingWith: bytes[pos])
        var stack = ContainerStack()

        nextValue: while true {
            // A value must start at `pos` (whitespace already skipped).
            guard pos < end else { throw unexpectedEnd() }
            let parent = stack.top
            let byte = bytes[pos]
            switch byte {
            case UInt8(ascii: "{"):
                guard stack.depth < maxDepth else { throw JSONError(kind: .tooDeep, offset: pos) }
                stack.push(object: true)
                sink.beginObject(at: pos, in: parent)
                pos += 1
                skipWhitespace()
                if pos < end && bytes[pos] == UInt8(ascii: "}") {
                    pos += 1
                    stack.pop()
                    sink.endObject(in: parent, end: pos)
                } else {
                    try readKey(into: &sink)
                    continue nextValue
                }
            case UInt8(ascii: "["):
                guard stack.depth < maxDepth else { throw JSONError(kind: .tooDeep, offset: pos) }
                stack.push(object: false)
                sink.beginArray(at: pos, in: parent)
                pos += 1
                skipWhitespace()
                if pos < end && bytes[pos] == UInt8(ascii: "]") {
                    pos += 1
                    stack.pop()
                    sink.endArray(in: parent)
                } else {
                    continue nextValue
                }
            case UInt8(ascii: "\""):
                let build = Sink.buildsValues && sink.building
                let token = try scanString(decode: build)
                if build {
                    sink.value(.string(makeString(token)), in: parent)
                }
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                let token = try scanNumber()
                if Sink.buildsValues && sink.building {
                    sink.value(try numberValue(token), in: parent)
                } else {
                    do { try checkNumber(token) } catch { try sink.numberOutOfRange(error) }
                }
            case UInt8(ascii: "t"):
                try expectLiteral("true")
                if Sink.buildsValues && sink.building { sink.value(.bool(true), in: parent) }
            case UInt8(ascii: "f"):
                try expectLiteral("false")
                if Sink.buildsValues && sink.building { sink.value(.bool(false), in: parent) }
            case UInt8(ascii: "n"):
                try expectLiteral("null")
                if Sink.buildsValues && sink.building { sink.value(.null, in: parent) }
            default:
                throw JSONError(kind: .unexpectedByte, offset: pos, byte: byte)
            }

            // A value just ended: close containers until one expects another value.
            while true {
                if stopAfterValue && stack.depth == 0 { return topLevel }
                skipWhitespace()
                switch stack.top {
                case .none:
                    if pos < end {
                        throw JSONError(kind: .trailingData, offset: pos, byte: bytes[pos])
                    }
                    return topLevel
                case .array:
                    guard pos < end else { throw unexpectedEnd() }
                    let next = bytes[pos]
                    if next == UInt8(ascii: ",") {
                        pos += 1
                        skipWhitespace()
                        continue nextValue
                    } else if next == UInt8(ascii: "]") {
                        pos += 1
                        stack.pop()
                        sink.endArray(in: stack.top)
                    } else {
                        throw JSONError(kind: .unexpectedByte, offset: pos, byte: next)
                    }
                case .object:
                    guard pos < end else { throw unexpectedEnd() }
                    let next = bytes[pos]
                    if next == UInt8(ascii: ",") {
                        pos += 1
                        skipWhitespace()
                        try readKey(into: &sink)
                        continue nextValue
                    } else if next == UInt8(ascii: "}") {
                        pos += 1
                        stack.pop()
                        sink.endObject(in: stack.top, end: pos)
                    } else {
                        throw JSONError(kind: .unexpectedByte, offset: pos, byte: next)
                    }
                }
            }
        }
    }

    /// Reads `"key"` `:` and the whitespace after it; leaves `pos` at the member's value.
    private mutating func readKey<Sink: JSONSink>(into sink: inout Sink) throws(JSONError) {
        guard pos < end else { throw unexpectedEnd() }
        guard bytes[pos] == UInt8(ascii: "\"") else {
            throw JSONError(kind: .unexpectedByte, offset: pos, byte: bytes[pos])
        }
        let keyOffset = pos
        let token = try scanString(decode: true)
        if token.isASCII {
            try sink.key(ascii: UnsafeBufferPointer(rebasing: bytes[token.start..<token.end]), offset: keyOffset)
        } else {
            try sink.key(makeString(token), offset: keyOffset)
        }
        skipWhitespace()
        guard pos < end else { throw unexpectedEnd() }
        guard bytes[pos] == UInt8(ascii: ":") else {
            throw JSONError(kind: .unexpectedByte, offset: pos, byte: bytes[pos])
        }
        pos += 1
        skipWhitespace()
    }

    /// Reads `literal` (`true`, `false`, `null`) at `pos`.
    private mutating func expectLiteral(_ literal: StaticString) throws(JSONError) {
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        for index in 0..<expected.count {
            let at = pos + index
            guard at < end else { throw unexpectedEnd() }
            guard bytes[at] == expected[index] else {
                throw JSONError(kind: .unexpectedByte, offset: at, byte: bytes[at])
            }
        }
        pos += expected.count
    }

    @inline(__always)
    mutating func skipWhitespace() {
        while pos < end {
            switch bytes[pos] {
            case 0x20, 0x0A, 0x0D, 0x09: pos += 1
            default: return
            }
        }
    }

    func unexpectedEnd() -> JSONError {
        JSONError(kind: .unexpectedEnd, offset: end)
    }

    private static func topLevel(startingWith byte: UInt8) -> JSONTopLevel {
        switch byte {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "n"): return .null
        default: return .number
        }
    }
}
