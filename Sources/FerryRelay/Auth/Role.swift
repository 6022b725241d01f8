/// What a grant lets a token do on one owner. Stored by name in the grants table.
///
/// Only `owner` is issued today; `editor` and `viewer` are the member roles the table is
/// designed for, and every right check goes through `allows(_:)`.
public enum Role: String, Sendable, CaseIterable {
    case owner, editor, viewer

    /// True when this role carries `right`.
    public func allows(_ right: Right) -> Bool {
        switch (self, right) {
        case (.owner, _): true
        case (.editor, .read), (.editor, .write): true
        case (.viewer, .read): true
        default: false
        }
    }
}

/// A right an endpoint needs: read (pull, blob get), write (push, blob put), owner (tokens,
/// pairing, deleting the relay copy, usage).
public enum Right: String, Sendable {
    case read, write, owner
}
