/// The order `list` returns records in.
public enum ListOrder: String, Sendable, Hashable, CaseIterable {
    /// By id, compared as given (the default).
    case id
    /// By version stamp, oldest first.
    case stamp
}
