import FerryAPI
import FerryJSON
import Glibc

extension FerryClient {
    /// Stores `data` as an attachment, sent inline (`io.ferry.Store.PutAttachment`; up to
    /// 8 MiB: use `putAttachment(path:)` for larger files).
    /// - Parameter sha256: when given, the daemon checks the bytes hash to it.
    /// - Returns: the SHA-256 to list in a record's `attachments`, and the size.
    /// - Throws: `FerryClientError.remote` with `AttachmentTooLarge`, `AttachmentMismatch`,
    ///   `StorageFailure`; or a connection error.
    public func putAttachment(data: [UInt8], sha256: String? = nil) async throws(FerryClientError) -> AttachmentInfo {
        var parameters: [String: JSONValue] = ["data": .string(Base64.encode(data))]
        parameters.setIfPresent("sha256", sha256.json)
        let reply = try await call("io.ferry.Store.PutAttachment", parameters)
        return try decode { () throws(WireError) in try AttachmentInfo(json: reply) }
    }

    /// Stores the file at `path` as an attachment: the daemon reads it itself, streaming, so
    /// any size works. A relative path is resolved against this process's working directory.
    /// The daemon must be able to read the file (it runs as the same user, but a sandboxed
    /// service may not see every directory, such as a private /tmp).
    /// - Returns: the SHA-256 and the size.
    /// - Throws: `FerryClientError.remote` with `InvalidArgument` (a file the daemon cannot
    ///   read), `AttachmentTooLarge`, `AttachmentMismatch`, `StorageFailure`; or a connection
    ///   error.
    public func putAttachment(path: String, sha256: String? = nil) async throws(FerryClientError) -> AttachmentInfo {
        var parameters: [String: JSONValue] = ["path": .string(Self.absolute(path))]
        parameters.setIfPresent("sha256", sha256.json)
        let reply = try await call("io.ferry.Store.PutAttachment", parameters)
        return try decode { () throws(WireError) in try AttachmentInfo(json: reply) }
    }

    /// Reads an attachment (`io.ferry.Store.GetAttachment`): inline when it is at most
    /// `maxInline` bytes (nil: the daemon's default, 1 MiB), otherwise as the path of the
    /// daemon's read-only copy.
    /// - Throws: `FerryClientError.remote` with `AttachmentMissing` when the daemon does not
    ///   hold it (see `FerryClientError.isNotFound`); or a connection error.
    public func getAttachment(sha256: String, maxInline: Int? = nil) async throws(FerryClientError) -> FetchedAttachment {
        var parameters: [String: JSONValue] = ["sha256": .string(sha256)]
        parameters.setIfPresent("maxInline", maxInline.map { .int(Int64($0)) })
        let reply = try await call("io.ferry.Store.GetAttachment", parameters)
        return try decode { () throws(WireError) in try FetchedAttachment(json: reply) }
    }

    /// `path` made absolute against the working directory (the daemon's differs).
    static func absolute(_ path: String) -> String {
        guard !path.hasPrefix("/") else { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let directory = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var relative = Substring(path)
        while relative.hasPrefix("./") { relative = relative.dropFirst(2) }
        return directory == "/" ? "/" + relative : directory + "/" + relative
    }
}
