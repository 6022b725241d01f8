/// A cursor text that is not a folder transport cursor, with the reason.
struct FolderCursorError: Error, Sendable, Equatable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
