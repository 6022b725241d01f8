import FerryJSON
import FerryVarlink
import Foundation

/// The server side of `org.varlink.certification`, with the semantics of the Python
/// reference server: each client gets an id from `Start`, must call Test01 … Test11 and
/// `End` in order passing each result on, and every argument is checked against what
/// the reference expects. A mismatch answers `CertificationError(wants, got)`; an
/// unknown id answers `ClientIdError`.
actor CertificationService {
    private var nextMethod: [String: String] = [:]
    private var started: [(id: String, time: ContinuousClock.Instant)] = []
    private static let lifetime = Duration.seconds(12 * 3600)

    static let interface = "org.varlink.certification"
    static let pi = Double.pi

    /// The reply of Test09 and the argument Test10 expects back.
    static let myType: JSONValue = [
        "object": [
            "method": "org.varlink.certification.Test09",
            "parameters": ["map": ["foo": "Foo", "bar": "Bar"]],
        ],
        "enum": "two",
        "struct": ["first": 1, "second": "2"],
        "array": ["one", "two", "three"],
        "dictionary": ["foo": "Foo", "bar": "Bar"],
        "stringset": ["one": [:], "two": [:], "three": [:]],
        "nullable": nil,
        "nullable_array_struct": nil,
        "interface": [
            "foo": [nil, ["foo": "foo", "bar": "bar"], nil, ["one": "foo", "two": "bar"]],
            "anon": ["foo": true, "bar": false],
        ],
    ]

    /// The handlers for `VarlinkService.register`.
    nonisolated func methods() -> [String: VarlinkMethod] {
        [
            "Start": VarlinkMethod { _, _ throws(VarlinkError) in
                ["client_id": .string(await self.start())]
            },
            "Test01": step("Test01", next: "Test02", wants: [:]) { _ in ["bool": true] },
            "Test02": step("Test02", next: "Test03", wants: ["bool": true]) { _ in ["int": 1] },
            "Test03": step("Test03", next: "Test04", wants: ["int": 1]) { _ in ["float": 1.0] },
            "Test04": step("Test04", next: "Test05", wants: ["float": 1.0]) { _ in ["string": "ping"] },
            "Test05": step("Test05", next: "Test06", wants: ["string": "ping"]) { _ in
                ["bool": false, "int": 2, "float": .double(Self.pi), "string": "a lot of string"]
            },
            "Test06": step(
                "Test06", next: "Test07",
                wants: ["bool": false, "int": 2, "float": .double(Self.pi), "string": "a lot of string"]
            ) { _ in
                ["struct": ["bool": false, "int": 2, "float": .double(Self.pi), "string": "a lot of string"]]
            },
            "Test07": step(
                "Test07", next: "Test08",
                wants: ["struct": ["bool": false, "int": 2, "float": .double(Self.pi), "string": "a lot of string"]]
            ) { _ in
                ["map": ["foo": "Foo", "bar": "Bar"]]
            },
            "Test08": step("Test08", next: "Test09", wants: ["map": ["foo": "Foo", "bar": "Bar"]]) { _ in
                ["set": ["one": [:], "two": [:], "three": [:]]]
            },
            "Test09": step("Test09", next: "Test10", wants: ["set": ["one": [:], "two": [:], "three": [:]]]) { _ in
                ["mytype": Self.myType]
            },
            "Test10": VarlinkMethod(requiresMore: true) { call, sink throws(VarlinkError) in
                try await self.advance(call, from: "Test10", to: "Test11", wants: ["mytype": Self.myType])
                for number in 1...9 {
                    do throws(VarlinkSinkError) {
                        try await sink.send(["string": .string("Reply number \(number)")])
                    } catch {
                        throw VarlinkError("org.varlink.certification.CertificationError", parameters: [
                            "wants": ["more": true], "got": ["sink": .string(error.description)],
                        ])
                    }
                }
                return ["string": "Reply number 10"]
            },
            "Test11": VarlinkMethod { call, _ throws(VarlinkError) in
                let replies = (1...10).map { JSONValue.string("Reply number \($0)") }
                try await self.advance(call, from: "Test11", to: "End", wants: ["last_more_replies": .array(replies)])
                if !call.oneway {
                    throw Self.certificationError(wants: ["oneway": true], got: Self.describe(call))
                }
                return [:]
            },
            "End": VarlinkMethod { call, _ throws(VarlinkError) in
                try await self.advance(call, from: "End", to: nil, wants: [:])
                return ["all_ok": true]
            },
        ]
    }

    private nonisolated func step(
        _ method: String, next: String, wants: [String: JSONValue],
        reply: @escaping @Sendable (VarlinkCall) -> [String: JSONValue]
    ) -> VarlinkMethod {
        VarlinkMethod { call, _ throws(VarlinkError) in
            try await self.advance(call, from: method, to: next, wants: wants)
            return reply(call)
        }
    }

    private func start() -> String {
        let now = ContinuousClock.now
        started.removeAll { entry in
            let expired = now - entry.time > Self.lifetime
            if expired { nextMethod[entry.id] = nil }
            return expired
        }
        var generator = SystemRandomNumberGenerator()
        let id = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        nextMethod[id] = "Test01"
        started.append((id, now))
        return id
    }

    /// Checks that `call` is the step this client is due for, with the arguments the
    /// reference expects (`client_id` plus `wants`), and moves the client on.
    private func advance(
        _ call: VarlinkCall, from method: String, to next: String?, wants: [String: JSONValue]
    ) throws(VarlinkError) {
        guard let id = call["client_id"]?.stringValue, let due = nextMethod[id] else {
            throw VarlinkError("org.varlink.certification.ClientIdError")
        }
        guard due == method else {
            nextMethod[id] = nil
            throw Self.certificationError(
                wants: .string("Call to method org.varlink.certification.\(due)"),
                got: .string("Call to method org.varlink.certification.\(method)"))
        }
        var expected = wants
        expected["client_id"] = .string(id)
        guard Self.normalized(.object(call.parameters)) == Self.normalized(.object(expected)) else {
            nextMethod[id] = nil
            throw Self.certificationError(
                wants: ["method": .string(call.qualifiedMethod), "parameters": .object(expected)],
                got: Self.describe(call))
        }
        nextMethod[id] = next
    }

    /// Drops `null` members (absent and `null` mean the same for optional fields) and
    /// turns integral floats into ints, so `1` and `1.0` compare equal.
    private static func normalized(_ value: JSONValue) -> JSONValue {
        switch value {
        case let .object(members):
            return .object(members.filter { !$0.value.isNull }.mapValues(normalized))
        case let .array(items):
            return .array(items.map(normalized))
        case let .double(number):
            if let integer = Int64(exactly: number) { return .int(integer) }
            return value
        default:
            return value
        }
    }

    private static func describe(_ call: VarlinkCall) -> JSONValue {
        var message: [String: JSONValue] = ["method": .string(call.qualifiedMethod), "parameters": .object(call.parameters)]
        if call.more { message["more"] = true }
        if call.oneway { message["oneway"] = true }
        return .object(message)
    }

    private static func certificationError(wants: JSONValue, got: JSONValue) -> VarlinkError {
        VarlinkError("org.varlink.certification.CertificationError", parameters: ["wants": wants, "got": got])
    }
}
