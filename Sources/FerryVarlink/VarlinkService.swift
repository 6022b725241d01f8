import FerryJSON

/// The set of interfaces a server provides, each with its definition and method
/// handlers, plus the built-in `org.varlink.service`.
///
/// Build it up with `register` before handing it to a `VarlinkServer`; it is a value, so
/// the server works on a frozen copy.
public struct VarlinkService: Sendable {
    /// What `org.varlink.service.GetInfo` reports.
    public struct Info: Sendable, Hashable {
        public var vendor: String
        public var product: String
        public var version: String
        public var url: String

        public init(vendor: String, product: String, version: String, url: String) {
            self.vendor = vendor
            self.product = product
            self.version = version
            self.url = url
        }
    }

    public let info: Info
    private var interfaces: [String: VarlinkInterface] = [:]
    private var methods: [String: [String: VarlinkMethod]] = [:]
    /// Interface names in registration order, `org.varlink.service` first.
    public private(set) var interfaceNames: [String] = []
    /// Every method's capture paths from the message's top level (`parameters` first), each
    /// once; a message is decoded with all of them (its method is not known before).
    private(set) var capturePaths: [[JSONPathComponent]] = []
    /// Per qualified method name: the indices in `capturePaths` of its own capture paths.
    private var methodCapturePaths: [String: Set<Int>] = [:]
    /// The batched methods with a direct decoder (`VarlinkMethod.direct`): their qualified
    /// names as a call message spells them, and what a call of theirs goes to. A handful at most.
    private(set) var directMethods: [DirectMethod] = []

    struct DirectMethod: Sendable {
        var qualifiedName: [UInt8]
        var interface: String
        var method: String
        var decode: VarlinkDirectDecoder
        var handler: VarlinkBatchHandler
    }

    public init(info: Info) {
        self.info = info
        let builtin = VarlinkServiceInterface.interface
        interfaces[builtin.name] = builtin
        interfaceNames.append(builtin.name)
    }

    public init(vendor: String, product: String, version: String, url: String) {
        self.init(info: Info(vendor: vendor, product: product, version: version, url: url))
    }

    /// Adds an interface from its definition text and the handlers of its methods.
    ///
    /// Methods the definition declares but `methods` lacks answer
    /// `org.varlink.service.MethodNotImplemented`.
    /// - Returns: the parsed interface.
    /// - Throws: `VarlinkServiceError` if the definition does not parse, the interface is
    ///   already registered, or a handler names a method the definition lacks.
    @discardableResult
    public mutating func register(
        _ definition: String, methods handlers: [String: VarlinkMethod]
    ) throws(VarlinkServiceError) -> VarlinkInterface {
        let interface: VarlinkInterface
        do {
            interface = try VarlinkInterface.parse(definition)
        } catch {
            throw .invalidDefinition(error)
        }
        guard interfaces[interface.name] == nil else { throw .duplicateInterface(interface.name) }
        for name in handlers.keys where interface.methods[name] == nil {
            throw .unknownMethod(interface: interface.name, method: name)
        }
        var paths = capturePaths, perMethod = methodCapturePaths
        for (name, method) in handlers where !method.capturing.isEmpty {
            var own = Set<Int>()
            for path in method.capturing {
                let full = [JSONPathComponent.key("parameters")] + path
                if let i = paths.firstIndex(of: full) {
                    own.insert(i)
                } else {
                    guard paths.count < 64 else { throw .tooManyCapturePaths(interface: interface.name) }
                    own.insert(paths.count)
                    paths.append(full)
                }
            }
            perMethod[interface.name + "." + name] = own
        }
        capturePaths = paths
        methodCapturePaths = perMethod
        for (name, method) in handlers {
            guard let decode = method.direct, case .batch(let handler) = method.kind else { continue }
            directMethods.append(DirectMethod(qualifiedName: Array((interface.name + "." + name).utf8), interface: interface.name,
                                              method: name, decode: decode, handler: handler))
        }
        interfaces[interface.name] = interface
        methods[interface.name] = handlers
        interfaceNames.append(interface.name)
        return interface
    }

    /// `call` with the text of the objects captured at its method's own capture paths; objects
    /// captured at other methods' paths are built into its parameters after all, so a
    /// handler only ever sees placeholders where it asked for them.
    /// - Throws: what building such an object finds that capturing does not check (a duplicate
    ///   key, a number out of range): the message is not JSON `parse` accepts.
    func attach(_ captures: [JSONCapture], frame: [UInt8], limits: JSONLimits, to call: VarlinkCall) throws(JSONError) -> VarlinkCall {
        guard !captures.isEmpty else { return call }
        let own = methodCapturePaths[call.qualifiedMethod] ?? []
        if captures.allSatisfy({ own.contains($0.path) }) {
            var call = call
            call.captured = VarlinkCapturedText(frame: frame, captures: captures, limits: limits)
            return call
        }
        guard case .object(let parameters) = try JSONCapture.materialize(.object(call.parameters), captures: captures,
                                                                          bytes: frame, limits: limits) else {
            return call
        }
        return VarlinkCall(interface: call.interface, method: call.method, parameters: parameters,
                           oneway: call.oneway, more: call.more, peer: call.peer)
    }

    /// The registered interface called `name`, including `org.varlink.service`.
    public func interface(named name: String) -> VarlinkInterface? {
        interfaces[name]
    }

    /// What to do with one decoded call.
    enum Resolution: Sendable {
        /// Answer at once with these reply parameters (built-in methods).
        case reply([String: JSONValue])
        /// Answer at once with this error.
        case failure(VarlinkError)
        /// Run this handler with this call.
        case handler(VarlinkMethod, VarlinkCall)
    }

    /// Resolves a call to a handler or an immediate answer, checking in order: interface,
    /// method in the definition, `upgrade` (not supported), handler, `more` when
    /// required (and not `oneway` then), and the parameters against the input signature.
    func resolve(_ message: VarlinkCallMessage, peer: PeerCredentials?) -> Resolution {
        let interfaceName = message.interfaceName
        guard let interface = interfaces[interfaceName] else {
            return .failure(.interfaceNotFound(interfaceName))
        }
        let methodName = message.methodName
        guard let signature = interface.methods[methodName] else {
            return .failure(.methodNotFound(message.method))
        }
        if message.upgrade {
            // Connection upgrades are not implemented; refusing is the only safe answer
            // because a client that asked for one would switch protocols after our reply.
            return .failure(.invalidParameter("upgrade"))
        }
        if interfaceName == VarlinkServiceInterface.name {
            if let invalid = interface.invalidParameter(in: message.parameters, for: signature.input) {
                return .failure(.invalidParameter(invalid))
            }
            return builtin(methodName, message.parameters)
        }
        guard let method = methods[interfaceName]?[methodName] else {
            return .failure(.methodNotImplemented(message.method))
        }
        if method.requiresMore && !message.more {
            return .failure(.expectedMore)
        }
        // A stream nobody may answer would hold the connection for ever: refused (and, the
        // call being oneway, without a reply), and the next call goes on.
        if method.requiresMore && message.oneway {
            return .failure(.invalidParameter("oneway"))
        }
        if let invalid = interface.invalidParameter(in: message.parameters, for: signature.input) {
            return .failure(.invalidParameter(invalid))
        }
        let call = VarlinkCall(
            interface: interfaceName, method: methodName, parameters: message.parameters,
            oneway: message.oneway, more: message.more, peer: peer)
        return .handler(method, call)
    }

    private func builtin(_ method: String, _ parameters: [String: JSONValue]) -> Resolution {
        switch method {
        case "GetInfo":
            return .reply([
                "vendor": .string(info.vendor),
                "product": .string(info.product),
                "version": .string(info.version),
                "url": .string(info.url),
                "interfaces": .array(interfaceNames.map(JSONValue.string)),
            ])
        case "GetInterfaceDescription":
            let name = parameters["interface"]?.stringValue ?? ""
            guard let interface = interfaces[name] else { return .failure(.interfaceNotFound(name)) }
            return .reply(["description": .string(interface.description)])
        default:
            return .failure(.methodNotImplemented("\(VarlinkServiceInterface.name).\(method)"))
        }
    }
}
