import FerryAPI
import FerryJSON

/// What the daemon says about itself (the reply of `org.varlink.service.GetInfo`).
public struct ServiceInfo: Sendable, Hashable {
    public var vendor: String
    public var product: String
    public var version: String
    public var url: String
    /// The interfaces it serves, for example `io.ferry.Store`.
    public var interfaces: [String]

    public init(vendor: String, product: String, version: String, url: String, interfaces: [String]) {
        self.vendor = vendor
        self.product = product
        self.version = version
        self.url = url
        self.interfaces = interfaces
    }

    /// Reads the wire form.
    /// - Throws: `WireError` naming the field that is missing or of the wrong type.
    public init(json: [String: JSONValue]) throws(WireError) {
        vendor = try json.string("vendor")
        product = try json.string("product")
        version = try json.string("version")
        url = try json.string("url")
        interfaces = try json.strings("interfaces")
    }

    /// The wire form.
    public var json: JSONValue {
        .object([
            "vendor": .string(vendor), "product": .string(product), "version": .string(version), "url": .string(url),
            "interfaces": .array(interfaces.map(JSONValue.string)),
        ])
    }
}
