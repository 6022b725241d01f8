import FerrySystemd

/// ferryd's log, shared with ferry-relay (`ServiceLogger`, identifier `ferryd`): entries name
/// records by entity and id only, never keys, tokens or payloads.
public typealias Logger = ServiceLogger
