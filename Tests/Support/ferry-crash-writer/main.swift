// A child process for the crash test: writes to a store in a loop and prints "ack <n>" after
// each write returned (so was acknowledged), until it is killed with SIGKILL.
//
// Usage: ferry-crash-writer STATE_DIR START
// Writes record w-<n> for n = START, START+1, ...: single puts, batches of 5 (one ack line per
// record after the batch returned), a delete of an earlier record every 7th, and writes to a
// second space ("team").
import FerryStore
import Foundation

/// Writes a line straight to the pipe (no buffering: a line printed is a write acknowledged).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let start = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: ferry-crash-writer STATE_DIR START\n".utf8))
    exit(2)
}
let store: Store
do {
    store = try Store(configuration: StoreConfiguration(directory: arguments[1]))
    if !store.spaces().contains(where: { $0.name == "team" }) { try store.createSpace(name: "team") }
} catch {
    FileHandle.standardError.write(Data("cannot open the store: \(error)\n".utf8))
    exit(1)
}
say("ready")
var n = start
while true {
    do {
        switch n % 4 {
        case 0:
            let batch = (n..<(n + 5)).map { PutRequest(entity: "item", id: "w-\($0)", payload: #"{"n":\#($0),"pad":"\#(String(repeating: "x", count: $0 % 300))"}"#) }
            _ = try store.putMany(batch)
            for i in n..<(n + 5) { say("ack put \(i)") }
            n += 5
            continue
        case 1:
            try store.put(space: "team", entity: "item", id: "w-\(n)", payload: #"{"n":\#(n)}"#)
            say("ack team \(n)")
        default:
            try store.put(entity: "item", id: "w-\(n)", payload: #"{"n":\#(n)}"#)
            say("ack put \(n)")
        }
        if n % 7 == 0 && n > start + 10 {
            let victim = n - 10
            if try store.get(entity: "item", id: "w-\(victim)") != nil {
                try store.delete(entity: "item", id: "w-\(victim)")
                say("ack delete \(victim)")
            }
        }
    } catch {
        FileHandle.standardError.write(Data("write failed: \(error)\n".utf8))
        exit(1)
    }
    n += 1
}
