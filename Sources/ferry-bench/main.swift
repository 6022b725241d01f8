// ferry-bench: Ferry's benchmarks, one machine-readable line per figure (see STYLE.md, habit 9).
//   ferry-bench store --records N ...   the core store against raw SQLite
//   ferry-bench ipc ...                 a real ferryd against a raw socket + SQLite baseline
//   ferry-bench folder ...              two ferryd syncing through a shared folder
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

switch arguments.first {
case "folder":
    let scratch: ScratchDirectory
    do { scratch = try ScratchDirectory(under: parentDirectory(arguments)) } catch { fail("\(error)", usage: nil, code: 1) }
    do {
        try await FolderBenchmark(arguments: arguments.dropFirst(), scratch: scratch).run()
        scratch.remove()
    } catch let error as BenchError where error.isUsage {
        scratch.remove()
        fail(error.message, usage: FolderBenchmark.usage, code: error.message.isEmpty ? 0 : 2)
    } catch {
        scratch.remove()
        fail("\(error)", usage: nil, code: 1)
    }
case "ipc":
    let scratch: ScratchDirectory
    do { scratch = try ScratchDirectory(under: parentDirectory(arguments)) } catch { fail("\(error)", usage: nil, code: 1) }
    do {
        let bench = try IPCBenchmark(arguments: arguments.dropFirst(), scratch: scratch)
        try await bench.run()
        scratch.remove()
    } catch let error as BenchError where error.isUsage {
        scratch.remove()
        fail(error.message, usage: IPCBenchmark.usage, code: error.message.isEmpty ? 0 : 2)
    } catch {
        scratch.remove()
        fail("\(error)", usage: nil, code: 1)
    }
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
