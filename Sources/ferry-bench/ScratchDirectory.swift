import Foundation
import Glibc

/// A fresh directory of the benchmark's own (`ferry-bench.XXXXXX` under /tmp or `--dir`),
/// removed by `remove()`. Only this directory is ever removed, never the parent it was made in.
struct ScratchDirectory {
    let path: String

    /// - Throws: `BenchError` when the directory cannot be created.
    init(under parent: String) throws {
        var template = Array((parent + "/ferry-bench.XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw BenchError("mkdtemp in \(parent) failed: \(String(cString: strerror(errno)))")
        }
        path = String(cString: made)
    }

    /// Creates a subdirectory and returns its path.
    func subdirectory(_ name: String) throws -> String {
        let sub = path + "/" + name
        if mkdir(sub, 0o700) != 0 {
            throw BenchError("mkdir \(sub) failed: \(String(cString: strerror(errno)))")
        }
        return sub
    }

    /// How many regular files are under the directory `root`.
    static func fileCount(_ root: String) -> Int {
        guard let walker = FileManager.default.enumerator(atPath: root) else { return 0 }
        var count = 0
        while let rel = walker.nextObject() as? String {
            if (walker.fileAttributes?[.type] as? FileAttributeType) == .typeRegular, !rel.isEmpty { count += 1 }
        }
        return count
    }

    /// The total size of the regular files under the directory `root`, in bytes.
    static func treeBytes(_ root: String) -> Int64 {
        guard let walker = FileManager.default.enumerator(atPath: root) else { return 0 }
        var total: Int64 = 0
        while let name = walker.nextObject() as? String {
            var info = stat()
            if stat(root + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG { total += Int64(info.st_size) }
        }
        return total
    }

    /// The size of an SQLite database with its `-wal` and `-shm` files, in bytes.
    static func databaseBytes(_ path: String) -> Int64 {
        var total: Int64 = 0
        for file in [path, path + "-wal", path + "-shm"] {
            var info = stat()
            if stat(file, &info) == 0 { total += Int64(info.st_size) }
        }
        return total
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
