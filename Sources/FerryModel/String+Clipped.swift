extension String {
    /// The string as an error may echo it: whole when it has at most `limit` characters,
    /// else its first `limit` characters and `…`, so a reader can tell it was cut.
    public func clipped(to limit: Int) -> String {
        var end = startIndex
        guard formIndex(&end, offsetBy: limit, limitedBy: endIndex), end != endIndex else { return self }
        return String(self[..<end]) + "…"
    }
}
