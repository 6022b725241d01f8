import FerryJSON
import Foundation

/// A reader's progress through a synced folder: per writing device, which of its files were
/// consumed and how far into the partly read ones. Its text (compact JSON, see docs/protocol.md
/// "The folder transport") is the opaque cursor of `FolderTransport.pull`.
///
/// Parsing is capped: at most `maxTextBytes` of text, `maxDevices` devices and, per device,
/// `maxPending` read-ahead segments, `maxNames` conflict copies and partial offsets.
struct FolderCursor: Sendable, Equatable {
    /// One writing device's progress.
    struct Device: Sendable, Equatable {
        /// Every segment seq up to and including `floor` is consumed, directly or through a
        /// snapshot that superseded it.
        var floor: UInt64 = 0
        /// Segments above `floor` consumed out of order (a lower one has not arrived yet); sorted.
        var ahead: [UInt64] = []
        /// Non-canonical files (conflict copies) and unusable snapshots already consumed.
        var names: [String] = []
        /// Byte offsets of the next unread frame in partly read files, by file name.
        var partial: [String: UInt64] = [:]

        /// Marks segment `seq` consumed and moves the floor over every consecutive one.
        mutating func consumeSegment(_ seq: UInt64) {
            guard seq > floor else { return }
            if let i = ahead.firstIndex(where: { $0 >= seq }) {
                if ahead[i] != seq { ahead.insert(seq, at: i) }
            } else {
                ahead.append(seq)
            }
            fold()
        }

        /// Moves the floor to `seq`: a snapshot superseding every segment up to it was consumed.
        mutating func supersede(through seq: UInt64) {
            guard seq > floor else { return }
            floor = seq
            ahead.removeAll { $0 <= seq }
            fold()
        }

        /// Moves the floor over segments already read just above it.
        private mutating func fold() {
            while let first = ahead.first, first <= floor + 1 {
                floor = max(floor, first)
                ahead.removeFirst()
            }
        }

        func consumed(segment seq: UInt64) -> Bool { seq <= floor || ahead.contains(seq) }
    }

    static let maxTextBytes = 1 << 20
    static let maxDevices = 4096
    static let maxPending = 4096
    static let maxNames = 1024

    var devices: [UInt64: Device] = [:]
    /// The reading device's writer epoch when the cursor was made (`FolderWriterState.epoch`):
    /// a cursor of an older epoch was made before this device last found its own files lost.
    var epoch: UInt64 = 0

    init() {}

    /// Reads a cursor's text; nil or empty text is the start of the folder.
    init(parsing text: String?) throws(FolderCursorError) {
        guard let text, !text.isEmpty else { return }
        guard text.utf8.count <= Self.maxTextBytes else {
            throw FolderCursorError("the cursor is \(text.utf8.count) bytes, more than the limit of \(Self.maxTextBytes)")
        }
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: Data(text.utf8))
        } catch {
            throw FolderCursorError("the cursor is not a folder transport cursor (\(error))")
        }
        guard wire.v == 1 else { throw FolderCursorError("the cursor has version \(wire.v); this build reads version 1") }
        guard wire.d.count <= Self.maxDevices else { throw FolderCursorError("the cursor names more than \(Self.maxDevices) devices") }
        for (key, w) in wire.d {
            guard let id = FolderFileName.device(key) else { throw FolderCursorError("the cursor names a device \"\(key.prefix(40))\" that is not 16 hex digits") }
            let ahead = (w.x ?? []).sorted()
            let names = w.n ?? [], partial = w.p ?? [:]
            guard ahead.count <= Self.maxPending, names.count <= Self.maxNames, partial.count <= Self.maxNames,
                  (names + Array(partial.keys)).allSatisfy({ $0.utf8.count <= FolderFileName.maxNameBytes }) else {
                throw FolderCursorError("the cursor's entry for device \(key) exceeds its limits")
            }
            devices[id] = Device(floor: w.f, ahead: ahead, names: names, partial: partial)
        }
        epoch = wire.w ?? 0
    }

    /// The compact JSON text, keys sorted. Written by hand: a pull makes one per page, and a
    /// general-purpose encoder cost more than reading the page's file names.
    var text: String {
        var out: [UInt8] = []
        out.reserveCapacity(32 + devices.count * 48)
        func append(_ ascii: StaticString) { JSONWriter.appendRaw(ascii, to: &out) }
        func append(_ n: UInt64) { out.append(contentsOf: String(n).utf8) }
        append("{\"d\":{")
        for (i, id) in devices.keys.sorted().enumerated() {
            let dev = devices[id]!
            if i > 0 { append(",") }
            JSONWriter.appendString(FolderFileName.hex16(id), to: &out)
            append(":{\"f\":")
            append(dev.floor)
            if !dev.names.isEmpty {
                append(",\"n\":[")
                for (j, name) in dev.names.sorted().enumerated() {
                    if j > 0 { append(",") }
                    JSONWriter.appendString(name, to: &out)
                }
                append("]")
            }
            if !dev.partial.isEmpty {
                append(",\"p\":{")
                for (j, (name, offset)) in dev.partial.sorted(by: { $0.key < $1.key }).enumerated() {
                    if j > 0 { append(",") }
                    JSONWriter.appendString(name, to: &out)
                    append(":")
                    append(offset)
                }
                append("}")
            }
            if !dev.ahead.isEmpty {
                append(",\"x\":[")
                for (j, seq) in dev.ahead.enumerated() {
                    if j > 0 { append(",") }
                    append(seq)
                }
                append("]")
            }
            append("}")
        }
        append("},\"v\":1")
        if epoch != 0 {
            append(",\"w\":")
            append(epoch)
        }
        append("}")
        return String(decoding: out, as: UTF8.self)
    }

    private struct Wire: Decodable {
        var v: Int
        var d: [String: WireDevice]
        var w: UInt64?
    }

    private struct WireDevice: Decodable {
        var f: UInt64
        var x: [UInt64]?
        var n: [String]?
        var p: [String: UInt64]?
    }
}
