// ferry-bench: Ferry's benchmarks, one machine-readable line per figure (see STYLE.md, habit 9).
//   ferry-bench store --records N ...   the core store against raw SQLite
//   ferry-bench ipc ...                 a real ferryd against a raw socket + SQLite baseline
//   ferry-bench folder ...              two ferryd syncing through a shared folder
//   ferry-bench relay ...               ferry-relay with two ferryd, and under many clients
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())

func fail(_ message: String, usage: String?, code: Int32) -> Never {
    if !message.isEmpty { FileHandle.standardError.write(Data("ferry-bench: \(message)\n".utf8)) }
    if let usage { FileHandle.standardError.write(Data((usage + "\n").utf8)) }
    exit(code)
}

func parentDirectory(_ arguments: [String]) -> String {
    if let i = arguments.firstIndex(of: "--dir"), i + 1 < arguments.count { return arguments[i + 1] }
    return "/tmp"
}

/// Runs a benchmark that lives in a scratch directory of its own, removed afterwards: usage
/// mistakes exit 2 with `usage`, failures exit 1.
func runInScratch(usage: String, _ body: (ScratchDirectory) async throws -> Void) async -> Never {
    let scratch: ScratchDirectory
    do { scratch = try ScratchDirectory(under: parentDirectory(arguments)) } catch { fail("\(error)", usage: nil, code: 1) }
    do {
        try await body(scratch)
        scratch.remove()
        exit(0)
    } catch let error as BenchError where error.isUsage {
        scratch.remove()
        fail(error.message, usage: usage, code: error.message.isEmpty ? 0 : 2)
    } catch {
        scratch.remove()
        fail("\(error)", usage: nil, code: 1)
    }
}

switch arguments.first {
case RawPingPong.serveCommand:
    do { try RawPingPong.serveStandardInput(arguments.dropFirst()) } catch { fail("\(error)", usage: nil, code: 2) }
case "folder":
    await runInScratch(usage: FolderBenchmark.usage) { try await FolderBenchmark(arguments: arguments.dropFirst(), scratch: $0).run() }
case "relay":
    await runInScratch(usage: RelayBenchmark.usage) { try await RelayBenchmark(arguments: arguments.dropFirst(), scratch: $0).run() }
case "ipc":
    await runInScratch(usage: IPCBenchmark.usage) { try await IPCBenchmark(arguments: arguments.dropFirst(), scratch: $0).run() }
default:
    let options: BenchOptions
    do {
        options = try BenchOptions(arguments: arguments)
    } catch let error as BenchError {
        fail(error.message, usage: BenchOptions.usage + "\n\n" + IPCBenchmark.usage, code: error.message.isEmpty ? 0 : 2)
    }
    let scratch: ScratchDirectory
    do { scratch = try ScratchDirectory(under: options.parent) } catch { fail("\(error)", usage: nil, code: 1) }
    do {
        _ = try StoreBenchmark(options: options, scratch: scratch).run()
        scratch.remove()
    } catch {
        scratch.remove()
        fail("\(error)", usage: nil, code: 1)
    }
}
