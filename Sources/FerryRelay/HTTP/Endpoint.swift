import FerrySync

/// One operation of the wire API, resolved from a method and a path (see docs/relay.openapi.yaml).
public enum Endpoint: Sendable, Equatable {
    case health
    case ready
    case metrics
    case pair
    case ownerInfo(OwnerID)
    case deleteOwner(OwnerID)
    case pushEvents(OwnerID)
    case pullEvents(OwnerID)
    case putBlob(OwnerID, key: String)
    case getBlob(OwnerID, key: String)
    case headBlob(OwnerID, key: String)
    case deleteBlob(OwnerID, key: String)
    case createPairingCode(OwnerID)
    case listTokens(OwnerID)
    case revokeToken(OwnerID, id: String)

    /// The right the caller's token needs on `owner`, or nil for an endpoint without auth.
    public var right: Right? {
        switch self {
        case .health, .ready, .metrics, .pair: nil
        case .pullEvents, .getBlob, .headBlob: .read
        case .pushEvents, .putBlob, .deleteBlob: .write
        case .ownerInfo, .deleteOwner, .createPairingCode, .listTokens, .revokeToken: .owner
        }
    }

    /// The owner the endpoint acts on.
    public var owner: OwnerID? {
        switch self {
        case .health, .ready, .metrics, .pair: nil
        case .ownerInfo(let o), .deleteOwner(let o), .pushEvents(let o), .pullEvents(let o),
             .putBlob(let o, _), .getBlob(let o, _), .headBlob(let o, _), .deleteBlob(let o, _), .createPairingCode(let o),
             .listTokens(let o), .revokeToken(let o, _): o
        }
    }

    /// A stable label for metrics and logs (never holds ids).
    public var name: String {
        switch self {
        case .health: "healthz"
        case .ready: "readyz"
        case .metrics: "metrics"
        case .pair: "pair"
        case .ownerInfo: "owner_info"
        case .deleteOwner: "owner_delete"
        case .pushEvents: "events_push"
        case .pullEvents: "events_pull"
        case .putBlob: "blob_put"
        case .getBlob: "blob_get"
        case .headBlob: "blob_head"
        case .deleteBlob: "blob_delete"
        case .createPairingCode: "pairing_code"
        case .listTokens: "tokens_list"
        case .revokeToken: "token_revoke"
        }
    }
}
