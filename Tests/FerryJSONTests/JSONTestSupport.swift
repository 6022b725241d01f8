import FerryJSON

/// Valid documents covering every value kind, escapes, numbers and nesting,
/// shared by the round-trip, split and fuzz tests.
enum JSONTestCorpus {
    static let documents: [String] = [
        "null", "true", "false", "0", "-0", "12345", "-9223372036854775808", "9223372036854775807",
        "9223372036854775808", "1.5", "-0.25e-3", "6.02E+23", "1e300", "\"\"", "\"plain\"",
        #""esc \" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00 \u0000""#,
        "\"raw é ü 中文 😀\"",
        "[]", "{}", "[[]]", "[{}]", " [ 1 , 2 , 3 ] ", "\t\n{\r\n}\n",
        #"{"a":1,"b":[true,false,null],"c":{"d":"e","f":-1.5e10}}"#,
        #"[1,-2,3.25,4e2,"x",{"k":[{}]},[[["deep"]]]]"#,
        #"{"id":"rec-1","version":3,"deleted":false,"payload":{"title":"Caf\u00e9","tags":["a","b"],"score":0.5,"empty":{},"list":[]}}"#,
        #"{"\u0061b":1,"ab\u0063":2,"😀":3,"\"":4}"#,
        #"[0.1,0.2,0.30000000000000004,123456789012345678901234567890,1E-7,-0.0]"#,
    ]

    static var byteDocuments: [[UInt8]] { documents.map { Array($0.utf8) } }
}

/// `parse` as a `Result`, for comparing outcomes.
func parseResult(_ bytes: [UInt8], limits: JSONLimits = .default) -> Result<JSONValue, JSONError> {
    Result { () throws(JSONError) in try JSONParser.parse(bytes, limits: limits) }
}

/// `validate` as a `Result`, for comparing outcomes.
func validateResult(_ bytes: [UInt8], limits: JSONLimits = .default) -> Result<JSONTopLevel, JSONError> {
    Result { () throws(JSONError) in try JSONParser.validate(bytes, limits: limits) }
}

/// The error `parse` throws for `text`, or nil when it parses.
func parseError(_ text: String, limits: JSONLimits = .default) -> JSONError? {
    parseError(Array(text.utf8), limits: limits)
}

/// The error `parse` throws for `bytes`, or nil when they parse.
func parseError(_ bytes: [UInt8], limits: JSONLimits = .default) -> JSONError? {
    if case .failure(let error) = parseResult(bytes, limits: limits) { return error }
    return nil
}

/// The top-level kind `validate` should report for a parsed value.
func topLevel(of value: JSONValue) -> JSONTopLevel {
    switch value {
    case .null: return .null
    case .bool: return .bool
    case .int, .double: return .number
    case .string: return .string
    case .array: return .array
    case .object: return .object
    }
}

/// A description of how parse and validate disagree on `bytes`, or nil when they agree
/// (same error kind, offset and byte; or success with matching top-level kind).
func disagreement(_ bytes: [UInt8], limits: JSONLimits = .default) -> String? {
    switch (parseResult(bytes, limits: limits), validateResult(bytes, limits: limits)) {
    case (.success(let value), .success(let kind)):
        return topLevel(of: value) == kind ? nil : "parse gave \(value.typeName), validate gave \(kind)"
    case (.failure(let p), .failure(let v)):
        return p.kind == v.kind && p.offset == v.offset && p.byte == v.byte
            ? nil : "parse threw \(p), validate threw \(v)"
    case (.success(let value), .failure(let v)):
        return "parse gave \(value.typeName), validate threw \(v)"
    case (.failure(let p), .success(let kind)):
        return "parse threw \(p), validate gave \(kind)"
    }
}

/// Bytes as hex, for failure messages.
func hexDump(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")
}
