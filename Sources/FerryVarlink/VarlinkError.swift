import FerryJSON

/// A Varlink error as it travels on the wire: a fully qualified error name and its
/// parameters, e.g. `org.varlink.service.InvalidParameter` with `{"parameter": "path"}`.
///
/// Method handlers throw it to answer a call with an error; `VarlinkClient` surfaces
/// error replies as `VarlinkClientError.remote(VarlinkError)`. The standard errors of
/// `org.varlink.service` are built only by the static functions below, so their names
/// and parameter shapes are spelled in this one place.
public struct VarlinkError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Fully qualified error name, `interface.ErrorName`.
    public var name: String
    /// The error's parameters (an empty object when it has none).
    public var parameters: [String: JSONValue]

    public init(_ name: String, parameters: [String: JSONValue] = [:]) {
        self.name = name
        self.parameters = parameters
    }

    public var description: String {
        parameters.isEmpty ? name : "\(name) \(JSONWriter.string(.object(parameters)))"
    }

    /// Error names defined by `org.varlink.service`.
    public enum StandardName {
        public static let interfaceNotFound = "org.varlink.service.InterfaceNotFound"
        public static let methodNotFound = "org.varlink.service.MethodNotFound"
        public static let methodNotImplemented = "org.varlink.service.MethodNotImplemented"
        public static let invalidParameter = "org.varlink.service.InvalidParameter"
        public static let permissionDenied = "org.varlink.service.PermissionDenied"
        public static let expectedMore = "org.varlink.service.ExpectedMore"
    }

    /// The called interface is not provided by this service.
    public static func interfaceNotFound(_ interface: String) -> VarlinkError {
        VarlinkError(StandardName.interfaceNotFound, parameters: ["interface": .string(interface)])
    }

    /// The interface exists but defines no such method (`method` is fully qualified).
    public static func methodNotFound(_ method: String) -> VarlinkError {
        VarlinkError(StandardName.methodNotFound, parameters: ["method": .string(method)])
    }

    /// The interface defines the method but the service has no handler for it.
    public static func methodNotImplemented(_ method: String) -> VarlinkError {
        VarlinkError(StandardName.methodNotImplemented, parameters: ["method": .string(method)])
    }

    /// The parameter `parameter` is missing, of the wrong type, or not defined.
    public static func invalidParameter(_ parameter: String) -> VarlinkError {
        VarlinkError(StandardName.invalidParameter, parameters: ["parameter": .string(parameter)])
    }

    /// The peer may not make this call (or any call).
    public static let permissionDenied = VarlinkError(StandardName.permissionDenied)

    /// The method streams its replies and must be called with `"more": true`.
    public static let expectedMore = VarlinkError(StandardName.expectedMore)
}
