// A short tour of the core store, for `make run` until the daemon lands: opens a store in a
// temporary directory, writes, edits, deletes, merges a concurrent remote edit, and prints what
// happened at each step.
import FerryModel
import FerryStore
import Foundation

func show(_ title: String, _ record: Record?) {
    guard let r = record else { print("  \(title): (none)"); return }
    print("  \(title): \(r.entity)/\(r.id) hlc=\(r.hlc) deleted=\(r.deleted) seq=\(r.seq) payload=\(r.payload ?? "-")")
}

let directory = NSTemporaryDirectory() + "ferry-demo-\(getpid())"
defer { try? FileManager.default.removeItem(atPath: directory) }
do {
    let store = try Store(configuration: StoreConfiguration(directory: directory))
    print("Ferry store demo: state in \(directory), node \(store.nodeID)")
    let note = try store.put(entity: "note", payload: #"{"title":"Buy milk"}"#)
    show("put", note)
    show("edit", try store.put(entity: "note", id: note.id, payload: #"{"title":"Buy oat milk"}"#))

    // Another device edited the same note concurrently, with a later stamp: it wins, and our
    // version is kept as a losing version that can be restored.
    let theirs = RecordVersion(entity: "note", id: note.id, hlc: Stamp(millis: note.hlc.millis + 60_000, counter: 0, node: NodeID(0xfeed)),
                               deleted: false, payload: #"{"title":"Buy soy milk"}"#)
    print("  remote edit from node \(theirs.hlc.node): \(try store.applyRemote([theirs], origin: .remote(transport: "demo")))")
    show("after merge", try store.get(entity: "note", id: note.id))
    for loser in try store.conflicts(entity: "note", id: note.id) {
        print("  kept losing version \(loser.version.hlc) from \(loser.origin): \(loser.version.payload ?? "-")")
    }
    show("delete", try store.delete(entity: "note", id: note.id))
    let stats = try store.stats()
    print("  store: \(stats.records) records, \(stats.tombstones) tombstones, outbox \(stats.outbox), last seq \(stats.lastSeq)")
    print("The daemon (ferryd) replaces this demo with the daemon issue.")
} catch {
    FileHandle.standardError.write(Data("ferry-demo: \(error)\n".utf8))
    exit(1)
}
