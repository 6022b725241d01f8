import FerryAPI
import FerryJSON
import FerryModel
import FerrySync
import FerryVarlink

/// The one place where Ferry's errors become Varlink errors. Every error carries a `message`
/// that says what happened and what to do next, plus its context fields.
enum ErrorMapping {
    static func varlink(_ error: FerryError, interface: String = StoreInterface.name) -> VarlinkError {
        if case .inBatch(let index, let inner) = error {
            // The inner error's name and fields, with the record's place and a message that
            // starts with it.
            let mapped = varlink(inner, interface: interface)
            var parameters = mapped.parameters
            parameters["index"] = .int(Int64(index))
            parameters["message"] = .string(error.description)
            return VarlinkError(mapped.name, parameters: parameters)
        }
        var p: [String: JSONValue] = ["message": .string(error.description)]
        var iface = interface
        switch error {
        case .invalidEntity(let e): p["entity"] = .string(e)
        case .invalidID(let e, let id, _): p["entity"] = .string(e); p["id"] = .string(id)
        case .invalidStamp(let s, _): p["hlc"] = .string(s)
        case .invalidPayload(let e, let id, _): p["entity"] = .string(e); p["id"] = .string(id)
        case .payloadTooLarge(let e, let id, let size, let limit):
            p["entity"] = .string(e); p["id"] = .string(id); p["size"] = .int(Int64(size)); p["limit"] = .int(Int64(limit))
        case .invalidAttachmentReference(let e, let id, let r):
            p["entity"] = .string(e); p["id"] = .string(id); p["reference"] = .string(r)
        case .immutableRecord(let e, let id): p["entity"] = .string(e); p["id"] = .string(id)
        case .notFound(let s, let e, let id): p["space"] = .string(s); p["entity"] = .string(e); p["id"] = .string(id)
        case .spaceNotFound(let s): p["space"] = .string(s)
        case .invalidSpaceName(let s): p["space"] = .string(s); iface = EngineInterface.name
        case .spaceExists(let s): p["space"] = .string(s); iface = EngineInterface.name
        case .batchTooLarge(let count, let limit): p["count"] = .int(Int64(count)); p["limit"] = .int(Int64(limit))
        case .attachmentMissing(let sha), .attachmentDamaged(let sha), .attachmentNotStored(let sha), .attachmentUnknown(let sha):
            p["sha256"] = .string(sha)
        case .attachmentMismatch(let expected, let actual): p["expected"] = .string(expected); p["actual"] = .string(actual)
        case .attachmentTooLarge(let size, let limit): p["size"] = .int(Int64(size)); p["limit"] = .int(Int64(limit))
        case .conflictNotFound(let e, let id, let stamp): p["entity"] = .string(e); p["id"] = .string(id); p["hlc"] = .string(stamp)
        case .invalidTransportName(let n): p["parameter"] = .string("name"); _ = n; return VarlinkError(iface + ".InvalidArgument", parameters: p)
        case .storage: break
        case .inBatch: break   // handled above
        }
        return VarlinkError(iface + "." + error.code, parameters: p)
    }

    /// No such transport in the space. The name as sent, cut at 80 characters and then ending in
    /// `…` (a call may send any string).
    /// - Parameter elsewhere: the spaces that do have a transport of that name, for the hint.
    static func transportNotFound(space: String, name: String, elsewhere: [String] = []) -> VarlinkError {
        let name = name.clipped(to: 80)
        let hint = elsewhere.isEmpty ? "see 'ferryctl transport ls'"
            : "space \(elsewhere[0]) has one: pass --space \(elsewhere[0])" + (elsewhere.count > 1 ? " (or another of \(elsewhere.joined(separator: ", ")))" : "")
        return VarlinkError(EngineInterface.name + ".TransportNotFound", parameters: [
            "space": .string(space), "name": .string(name),
            "message": .string("space \(space) has no transport named \(name); \(hint)"),
        ])
    }

    /// A transport the config file declares, which only the file can remove for good.
    /// A transport ferryd.conf declares was to be removed (`changing` false) or reconfigured
    /// here: a reload would undo it, so the file is where it changes.
    static func transportDeclared(space: String, name: String, file: String, changing: Bool = false) -> VarlinkError {
        VarlinkError(EngineInterface.name + ".TransportDeclared", parameters: [
            "space": .string(space), "name": .string(name), "file": .string(file),
            "message": .string("transport \(name) of space \(space) is declared in \(file) ([Transport \(name)]), so "
                + (changing ? "changing" : "removing") + " it here would last only until ferryd reloads or restarts: "
                + (changing ? "change" : "delete") + " its section in that file, then reload ferryd "
                + "('systemctl --user reload ferryd', or send it SIGHUP)"),
        ])
    }

    /// SyncNow while syncing is paused: nothing would start.
    static func syncPaused() -> VarlinkError {
        VarlinkError(EngineInterface.name + ".SyncPaused", parameters: [
            "message": .string("syncing is paused, so no round starts: resume it with 'ferryctl sync resume' (Resume), "
                + "which also starts a round"),
        ])
    }

    /// A recovery phrase that does not decode.
    static func invalidPhrase(_ error: RecoveryPhraseError) -> VarlinkError {
        VarlinkError(EngineInterface.name + ".InvalidRecoveryPhrase", parameters: ["message": .string("\(error)")])
    }

    /// A bundle that could not be written or read.
    static func bundleFailure(path: String, _ message: String) -> VarlinkError {
        VarlinkError(EngineInterface.name + ".BundleFailure", parameters: ["path": .string(path), "message": .string(message)])
    }

    /// A parameter the method cannot use.
    static func invalidArgument(_ parameter: String, _ message: String, interface: String = StoreInterface.name) -> VarlinkError {
        VarlinkError(interface + ".InvalidArgument", parameters: ["parameter": .string(parameter), "message": .string(message)])
    }
}
