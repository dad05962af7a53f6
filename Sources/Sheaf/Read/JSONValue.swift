/// A small JSON document as a tree, for what callers hand in (a list's description); pages are
/// never read this way (`JSONScanner` hands their items on as bytes).
///
/// Object members keep their order and their repeats, so a reader can refuse a name given twice.
/// Numbers keep their text: a reader decides which it accepts, and a number out of range is an
/// error there, never a trap.
package enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(name: String, value: JSONValue)])

    /// Parses `bytes` as one JSON text (RFC 8259, strict UTF-8).
    package init(parsing bytes: [UInt8]) throws(JSONSyntaxError) {
        self = try bytes.withUnsafeBufferPointer { (buffer) throws(JSONSyntaxError) -> JSONValue in
            let scanner = JSONScanner(buffer)
            let start = scanner.skipWhitespace(0)
            guard start < buffer.count else { throw JSONSyntaxError(offset: start, reason: "empty text") }
            // Validated whole first (depth included); building the tree then only decodes.
            let end = scanner.skipWhitespace(try scanner.skipValue(at: start, depth: 0))
            guard end == buffer.count else { throw JSONSyntaxError(offset: end, reason: "unexpected data after the JSON value") }
            return try Self.build(scanner, at: start).value
        }
    }

    /// The value at `index` (validated) and the index after it.
    private static func build(_ scanner: JSONScanner, at index: Int) throws(JSONSyntaxError) -> (value: JSONValue, end: Int) {
        let bytes = scanner.bytes
        switch bytes[index] {
        case UInt8(ascii: "\""):
            return (.string(try scanner.decodeString(at: index)), try scanner.skipString(at: index))
        case UInt8(ascii: "{"):
            var members: [(name: String, value: JSONValue)] = []
            var position = scanner.skipWhitespace(index + 1)
            while bytes[position] != UInt8(ascii: "}") {
                let name = try scanner.decodeString(at: position)
                position = scanner.skipWhitespace(try scanner.skipString(at: position)) + 1 // the ':'
                let (value, end) = try build(scanner, at: scanner.skipWhitespace(position))
                members.append((name, value))
                position = scanner.skipWhitespace(end)
                if bytes[position] == UInt8(ascii: ",") { position = scanner.skipWhitespace(position + 1) }
            }
            return (.object(members), position + 1)
        case UInt8(ascii: "["):
            var elements: [JSONValue] = []
            var position = scanner.skipWhitespace(index + 1)
            while bytes[position] != UInt8(ascii: "]") {
                let (value, end) = try build(scanner, at: position)
                elements.append(value)
                position = scanner.skipWhitespace(end)
                if bytes[position] == UInt8(ascii: ",") { position = scanner.skipWhitespace(position + 1) }
            }
            return (.array(elements), position + 1)
        case UInt8(ascii: "t"): return (.bool(true), index + 4)
        case UInt8(ascii: "f"): return (.bool(false), index + 5)
        case UInt8(ascii: "n"): return (.null, index + 4)
        default:
            let end = try scanner.skipValue(at: index, depth: 0)
            return (.number(String(decoding: bytes[index..<end], as: UTF8.self)), end)
        }
    }

    package static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.name == $1.name && $0.value == $1.value }
        default: false
        }
    }

    /// What kind of value this is, for messages ("a string", "null").
    package var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Reading and writing a tree: a member, a path of members, a value set at a path, the text.
extension JSONValue {
    /// `bytes` parsed; nil when they are not one JSON value.
    static func parsing(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONValue(parsing: bytes)
    }

    /// The member `name` of an object; nil for another value or a name it does not have.
    subscript(name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.name == name }?.value
    }

    /// The value at `tokens` (object members only).
    func at(_ tokens: [String]) -> JSONValue? {
        tokens.reduce(Optional(self)) { value, token in value?[token] }
    }

    var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    var double: Double? {
        if case .number(let digits) = self { return Double(digits) }
        return nil
    }

    /// This value with `value` at `tokens` (objects made on the way, a member replaced in
    /// place); nil where a value on the way is not an object.
    func setting(_ value: JSONValue, at tokens: ArraySlice<String>) -> JSONValue? {
        guard let token = tokens.first else { return value }
        guard case .object(var members) = self else { return nil }
        if let at = members.firstIndex(where: { $0.name == token }) {
            guard let inner = members[at].value.setting(value, at: tokens.dropFirst()) else { return nil }
            members[at].value = inner
        } else {
            guard let inner = JSONValue.object([]).setting(value, at: tokens.dropFirst()) else { return nil }
            members.append((token, inner))
        }
        return .object(members)
    }

    /// The value as compact JSON text.
    var text: String {
        switch self {
        case .null: "null"
        case .bool(let flag): flag ? "true" : "false"
        case .number(let digits): digits
        case .string(let string): JSONText.quote(string)
        case .array(let elements): "[" + elements.map(\.text).joined(separator: ",") + "]"
        case .object(let members): "{" + members.map { JSONText.quote($0.name) + ":" + $0.value.text }.joined(separator: ",") + "}"
        }
    }
}
