import FerrySystemd

/// ferry-relay's log (`ServiceLogger`, identifier `ferry-relay`): entries name owners, routes and
/// token ids only, never tokens, pairing codes or envelope bytes.
public typealias RelayLogger = ServiceLogger
