/// A hybrid-logical-clock version stamp.
///
/// Its text form is `YYYY-MM-DDTHH:MM:SS.sssZ-CCCC-NNNNNNNNNNNNNNNN`: UTC wall time in
/// milliseconds, a 4-digit lowercase hex counter and the 16-digit lowercase hex node id of the
/// device that made it. Every field is fixed-width, so comparing two stamps' text bytewise gives
/// the same order as comparing `(millis, counter, node)`, which is the order this type uses.
/// Stamps are unique per version: a device never issues the same stamp twice.
public struct Stamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z. Always within `Stamp.millisRange`.
    public let millis: Int64
    /// Orders stamps made within the same millisecond.
    public let counter: UInt16
    /// The device that issued the stamp.
    public let node: NodeID

    /// Years 0001 to 9999, the range the text form can hold.
    public static let millisRange: ClosedRange<Int64> = -62_135_596_800_000 ... 253_402_300_799_999
    /// The length of the text form.
    public static let textLength = 46

    /// Makes a stamp; `millis` is clamped into `millisRange`.
    public init(millis: Int64, counter: UInt16, node: NodeID) {
        self.millis = min(max(millis, Stamp.millisRange.lowerBound), Stamp.millisRange.upperBound)
        self.counter = counter
        self.node = node
    }

    public static func < (a: Stamp, b: Stamp) -> Bool {
        if a.millis != b.millis { return a.millis < b.millis }
        if a.counter != b.counter { return a.counter < b.counter }
        return a.node.value < b.node.value
    }

    /// The smallest stamp of `node` that is greater than `self`.
    public func successor(node: NodeID) -> Stamp {
        if counter == UInt16.max { return Stamp(millis: millis + 1, counter: 0, node: node) }
        return Stamp(millis: millis, counter: counter + 1, node: node)
    }

    /// The text form.
    public var text: String {
        String(unsafeUninitializedCapacity: Stamp.textLength) { buffer in
            writeText(to: buffer.baseAddress!)
            return Stamp.textLength
        }
    }

    /// Appends the text form's `textLength` bytes to `out`, without making a String.
    public func appendText(to out: inout [UInt8]) {
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: Stamp.textLength))
        out.withUnsafeMutableBufferPointer { writeText(to: $0.baseAddress! + start) }
    }

    /// Writes the text form at `p` (`textLength` bytes).
    private func writeText(to p: UnsafeMutablePointer<UInt8>) {
        let (year, month, day, hour, minute, second, ms) = CivilTime.fields(millis: millis)
        func digits(_ value: Int, _ count: Int, at offset: Int) {
            var v = value
            for k in stride(from: offset + count - 1, through: offset, by: -1) {
                p[k] = UInt8(truncatingIfNeeded: 48 + v % 10)
                v /= 10
            }
        }
        func hex(_ value: UInt64, _ count: Int, at offset: Int) {
            var v = value
            for k in stride(from: offset + count - 1, through: offset, by: -1) {
                let nibble = UInt8(truncatingIfNeeded: v & 0xF)
                p[k] = nibble < 10 ? 48 + nibble : 87 + nibble
                v >>= 4
            }
        }
        digits(year, 4, at: 0); p[4] = UInt8(ascii: "-")
        digits(month, 2, at: 5); p[7] = UInt8(ascii: "-")
        digits(day, 2, at: 8); p[10] = UInt8(ascii: "T")
        digits(hour, 2, at: 11); p[13] = UInt8(ascii: ":")
        digits(minute, 2, at: 14); p[16] = UInt8(ascii: ":")
        digits(second, 2, at: 17); p[19] = UInt8(ascii: ".")
        digits(ms, 3, at: 20); p[23] = UInt8(ascii: "Z"); p[24] = UInt8(ascii: "-")
        hex(UInt64(counter), 4, at: 25); p[29] = UInt8(ascii: "-")
        hex(node.value, 16, at: 30)
    }

    public var description: String { text }

    /// Parses the text form strictly: exact length, digits where digits belong, lowercase hex,
    /// a real calendar date and time.
    /// - Throws: `FerryError.invalidStamp` naming what is wrong.
    public init(parsing text: String) throws(FerryError) {
        guard let stamp = Stamp.parse(text) else {
            throw .invalidStamp(String(text.prefix(64)), reason: Stamp.formatReason)
        }
        self = stamp
    }

    static let formatReason = "a stamp is YYYY-MM-DDTHH:MM:SS.sssZ-CCCC-NNNNNNNNNNNNNNNN (UTC, 4 and 16 lowercase hex digits)"

    /// Parses the text form, or returns nil.
    public static func parse(_ text: String) -> Stamp? {
        var text = text
        return text.withUTF8 { b -> Stamp? in
            guard b.count == textLength else { return nil }
            func num(_ from: Int, _ n: Int) -> Int? {
                var v = 0
                for i in from..<(from + n) {
                    let c = b[i]
                    guard c >= 48 && c <= 57 else { return nil }
                    v = v * 10 + Int(c - 48)
                }
                return v
            }
            func lit(_ i: Int, _ c: UInt8) -> Bool { b[i] == c }
            guard lit(4, 45), lit(7, 45), lit(10, 84), lit(13, 58), lit(16, 58), lit(19, 46),
                  lit(23, 90), lit(24, 45), lit(29, 45) else { return nil }
            guard let year = num(0, 4), let month = num(5, 2), let day = num(8, 2),
                  let hour = num(11, 2), let minute = num(14, 2), let second = num(17, 2),
                  let ms = num(20, 3) else { return nil }
            guard year >= 1, (1...12).contains(month), day >= 1,
                  day <= CivilTime.daysInMonth(year: year, month: month),
                  hour < 24, minute < 60, second < 60 else { return nil }
            guard let counter = Hex.parse(b, from: 25, count: 4),
                  let node = Hex.parse(b, from: 30, count: 16) else { return nil }
            let days = CivilTime.daysFromCivil(year: year, month: month, day: day)
            let millis = ((Int64(days) * 24 + Int64(hour)) * 60 + Int64(minute)) * 60_000
                + Int64(second) * 1000 + Int64(ms)
            return Stamp(millis: millis, counter: UInt16(counter), node: NodeID(node))
        }
    }
}

/// The 64-bit id of a device, written as 16 lowercase hex digits.
public struct NodeID: Sendable, Hashable, CustomStringConvertible {
    public let value: UInt64
    public init(_ value: UInt64) { self.value = value }

    /// Parses 16 lowercase hex digits.
    public init?(hex: String) {
        var hex = hex
        guard let v = hex.withUTF8({ b -> UInt64? in
            b.count == 16 ? Hex.parse(b, from: 0, count: 16) : nil
        }) else { return nil }
        value = v
    }

    public var description: String {
        var out = [UInt8]()
        Hex.append(value, width: 16, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}

/// Fixed-width lowercase hex for stamps and node ids.
enum Hex {
    static func append(_ value: UInt64, width: Int, to out: inout [UInt8]) {
        var shift = (width - 1) * 4
        while shift >= 0 {
            let nibble = UInt8((value >> UInt64(shift)) & 0xF)
            out.append(nibble < 10 ? 48 + nibble : 87 + nibble)
            shift -= 4
        }
    }

    static func parse(_ b: UnsafeBufferPointer<UInt8>, from: Int, count: Int) -> UInt64? {
        var v: UInt64 = 0
        for i in from..<(from + count) {
            let c = b[i]
            let nibble: UInt8
            switch c {
            case 48...57: nibble = c - 48
            case 97...102: nibble = c - 87
            default: return nil
            }
            v = (v << 4) | UInt64(nibble)
        }
        return v
    }
}

/// Proleptic Gregorian calendar arithmetic in UTC (Howard Hinnant's algorithms), so that stamps
/// need no Foundation and no time zone database.
enum CivilTime {
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z: Int) -> (year: Int, month: Int, day: Int) {
        let z = z + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    static func fields(millis: Int64) -> (Int, Int, Int, Int, Int, Int, Int) {
        let msPerDay: Int64 = 86_400_000
        var days = millis / msPerDay
        var rest = millis % msPerDay
        if rest < 0 { rest += msPerDay; days -= 1 }
        let (y, m, d) = civilFromDays(Int(days))
        let r = Int(rest)
        return (y, m, d, r / 3_600_000, (r / 60_000) % 60, (r / 1000) % 60, r % 1000)
    }
}
