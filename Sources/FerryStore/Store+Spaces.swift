import FerryModel

extension Store {
    /// Every space of this device, by name.
    public func spaces() -> [SpaceInfo] {
        catalog.all()
    }

    /// Creates a space shared with this device (or a second dataset of the user's own).
    /// - Throws: `invalidSpaceName`, `spaceExists`.
    @discardableResult
    public func createSpace(name: String, kind: SpaceInfo.Kind = .shared, ownerID: String? = nil) throws(FerryError) -> SpaceInfo {
        guard Names.isValidName(name) else { throw .invalidSpaceName(name.clipped(to: 80)) }
        if catalog.space(named: name) != nil { throw .spaceExists(name) }
        let catalog = self.catalog
        let now = configuration.wallClock()
        return try write("creating space \(name)") { writer in
            let statement = try writer.db.prepare(
                "INSERT INTO spaces (name, kind, owner_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING")
            statement.bind(1, name); statement.bind(2, kind.rawValue); statement.bind(3, ownerID); statement.bind(4, now)
            try statement.run()
            guard writer.db.changes == 1 else { throw FerryError.spaceExists(name) }
            let info = SpaceInfo(name: name, kind: kind, ownerID: ownerID, createdAt: now)
            let sid = writer.db.lastInsertRowID
            writer.whenCommitted { catalog.insert(Catalog.Space(sid: sid, info: info, transports: [])) }
            return info
        }
    }

    /// Sets the owner id of a space (the sync layer's owner identity).
    public func setOwner(space: String, ownerID: String?) throws(FerryError) {
        let sid = try catalog.sid(space)
        let catalog = self.catalog
        try write("setting the owner of \(space)") { writer in
            let statement = try writer.db.prepare("UPDATE spaces SET owner_id = ? WHERE sid = ?")
            statement.bind(1, ownerID); statement.bind(2, sid)
            try statement.run()
            writer.whenCommitted { catalog.update(space) { $0.info.ownerID = ownerID } }
        }
    }
}
