/// Reading a description from its JSON form: the one vocabulary of C (sheaf_list_set_description),
/// Python's `Description` and the command line's `--description`. What `json(resolution:plan:)`
/// prints is read back as the same description; the checks here are the ones the C setters use.
///
/// Input fields: "preset", "paging" {"kind", "param", "first", "size_param", "size"},
/// "signals" {name: {"source", "where"} or null}, "until" {"pointer", "value"} and "since"
/// {"param", "pointer", "value"}. Output-only fields ("detected" in the paging and in each
/// signal, "plan", "summary", "sync_state") are what a run or a preset prints: they are accepted when
/// they hold what the library prints there, and ignored, so a printed description can be set
/// again as it is.
extension ListDescription {
    /// The description `json` spells, for a list at `path`.
    /// - Throws: `.invalidArgument` naming the refused field as a JSON pointer, and what it allows.
    public init(path: String, json: [UInt8]) throws(SheafError) {
        self.init(path: path)
        try describe(json: json)
    }

    /// Replaces the paging, the signals, the preset and the sync bound and filter with those `json` spells; a part it does not
    /// name is the named preset's, or left to detection. The path, query, budgets and resume token
    /// stay as they are.
    /// - Throws: `.invalidArgument` naming the refused field; nothing is changed then.
    package mutating func describe(json: [UInt8]) throws(SheafError) {
        let value: JSONValue
        do throws(JSONSyntaxError) {
            value = try JSONValue(parsing: json)
        } catch {
            throw SheafError(.invalidArgument, "the description is not JSON: \(error)")
        }
        do throws(DescriptionRefusal) {
            self = try DescriptionReading.read(value, onto: self)
        } catch {
            let field = error.field.isEmpty ? "the description" : "the description's \(error.field)"
            throw SheafError(.invalidArgument, "\(field): \(error.message)")
        }
    }
}

/// Why a part of a description is refused: the field, as a JSON pointer into the description (or a
/// name relative to its object, for the C setters' checks), and a sentence saying what is allowed.
package struct DescriptionRefusal: Error, Sendable {
    package var field: String
    package var message: String

    package init(_ field: String, _ message: String) {
        self.field = field
        self.message = message
    }

    /// The refusal as a C setter reports it: the sentence alone.
    package var asError: SheafError { SheafError(.invalidArgument, message) }
}

/// The largest number a description holds: JSON's safe integers (2^53), as resume tokens.
let largestDescribedNumber = 1 << 53

extension Paging {
    static let kindNames = ["detect", "single", "next", "page_number", "offset", "cursor"]

    /// The paging of kind `kind` (a name of `kindNames`), checked: the one place a paging's values
    /// are judged, for the C setter and the JSON form alike. Refusals name the field of the
    /// description's "paging" object ("kind", "param", "first", "size_param" or "size").
    /// - Parameters:
    ///   - sizeParameter: the page-size parameter; `size` nil with it: named, not sent.
    package static func described(kind: String, parameter: String?, first: Int, sizeParameter: String?,
                                  size: Int?) throws(DescriptionRefusal) -> Paging {
        let numbered = kind == "page_number" || kind == "offset"
        guard kindNames.contains(kind) else {
            throw DescriptionRefusal("kind", "the paging kind must be one of \(kindNames.joined(separator: ", ")); not \(JSONText.quote(kind))")
        }
        if numbered || kind == "cursor" {
            guard let parameter, !parameter.isEmpty else {
                throw DescriptionRefusal("param", "\(kind) paging needs the name of the query parameter \(kind == "cursor" ? "the cursor" : "page k") is sent in (a non-empty string)")
            }
        } else if parameter != nil {
            throw DescriptionRefusal("param", "\(kind) paging takes no parameter (only page_number, offset and cursor do): null")
        }
        if numbered {
            guard (0...largestDescribedNumber).contains(first) else {
                throw DescriptionRefusal("first", "the first page number or offset must be 0 or more (at most 2^53), not \(first)")
            }
        } else if first != 0 {
            throw DescriptionRefusal("first", "only page_number and offset paging have a first page number or offset; \(kind) paging has 0")
        }
        var pageSize: PageSize?
        if let sizeParameter {
            // Only these kinds carry a size (next links name their own; the C setter dropped it).
            guard numbered || kind == "cursor" else {
                throw DescriptionRefusal("size_param", "a page size goes with page_number, offset or cursor paging, not \(kind)")
            }
            guard !sizeParameter.isEmpty, (size ?? 1) >= 1, (size ?? 1) <= largestDescribedNumber else {
                throw DescriptionRefusal(sizeParameter.isEmpty ? "size_param" : "size",
                                         "a page size parameter needs a non-empty name and a size of 1 or more (at most 2^53)")
            }
            pageSize = PageSize(parameter: sizeParameter, value: size)
        } else if size != nil {
            throw DescriptionRefusal("size", "a page size needs size_param, the query parameter that carries it")
        }
        switch kind {
        case "single": return .single
        case "next": return .next
        case "page_number": return .pageNumber(Numbering(parameter: parameter!, first: first, size: pageSize))
        case "offset": return .offset(Numbering(parameter: parameter!, first: first, size: pageSize))
        case "cursor": return .cursor(parameter: parameter!, size: pageSize)
        default: return .detect
        }
    }
}

extension SignalSource {
    static let kindNames = ["none", "detect", "body", "header", "link", "item", "last_item"]

    /// The source of kind `kind` at `location`, checked for `signal`: the one place a signal's
    /// source is judged, for the C setter and the JSON form alike. Refusals name the field of
    /// the signal's object ("source" or "where").
    package static func described(_ signal: Signal, kind: String, where location: String?) throws(DescriptionRefusal) -> SignalSource {
        let source: SignalSource
        switch kind {
        case "none", "detect":
            guard location == nil else { throw DescriptionRefusal("where", "a signal read from \(kind) has no where: null") }
            source = kind == "none" ? .none : .detect
        case "body", "item", "last_item":
            guard let location else { throw DescriptionRefusal("where", "a signal read from \(kind) needs where: a JSON pointer (\"\" or \"/a/b\")") }
            guard let pointer = JSONPointer(location) else {
                throw DescriptionRefusal("where", "\(JSONText.quote(location)) is not a JSON pointer (RFC 6901: \"\" or \"/a/b\")")
            }
            source = kind == "body" ? .body(pointer) : kind == "item" ? .item(pointer) : .lastItem(pointer)
        case "header", "link":
            guard let location else { throw DescriptionRefusal("where", "a signal read from \(kind) needs where: a \(kind == "header" ? "header name" : "link relation")") }
            source = kind == "header" ? .header(location) : .link(location)
        default:
            throw DescriptionRefusal("source", "a signal's source must be one of \(kindNames.dropFirst().joined(separator: ", ")); not \(JSONText.quote(kind))")
        }
        try signal.judge(source)
        return source
    }
}

extension Signal {
    /// The sources this signal can be read from, besides none and detect (identity: item only).
    var sourceNames: [String] {
        switch self {
        case .items: ["body"]
        case .next, .pageCount: ["body", "header", "link"]
        case .cursor: ["body", "header", "last_item"]
        case .total, .hasMore, .isLast: ["body", "header"]
        case .identity: ["item"]
        }
    }

    /// Refuses a source this signal cannot come from, or a malformed header name or relation.
    func judge(_ source: SignalSource) throws(DescriptionRefusal) {
        let allowed = source == .none || (source == .detect ? self != .identity : sourceNames.contains(source.kindName))
        guard allowed else {
            let named = self == .identity ? "item (or none: null)" : (["detect"] + sourceNames).joined(separator: ", ")
            throw DescriptionRefusal("source", "the \(rawValue) signal cannot be read from \(source.kindName); it can be read from \(named)")
        }
        if case .header(let name) = source, name.isEmpty || !name.utf8.allSatisfy(HTTPText.isTokenByte) {
            throw DescriptionRefusal("where", "\(JSONText.quote(name)) is not a header name (a non-empty HTTP token)")
        }
        if case .link(let relation) = source, relation.isEmpty || relation.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) {
            throw DescriptionRefusal("where", "\(JSONText.quote(relation)) is not a link relation type (printable ASCII, no spaces)")
        }
    }
}

/// The reading of a parsed description (see `ListDescription.describe(json:)`).
enum DescriptionReading {
    static let planNames = ["parallel", "speculative", "sequential", "single", "split"]

    static func read(_ value: JSONValue, onto original: ListDescription) throws(DescriptionRefusal) -> ListDescription {
        let top = try members(value, at: "", allowed: ["paging", "signals", "preset", "plan", "summary", "until", "since", "sync_state",
                                                               "split", "split_plan", "read_only", "graphql"])
        var description = original
        description.paging = .detect
        description.signals = [:]
        description.preset = nil
        description.until = nil
        description.since = nil
        description.split = nil
        description.readOnly = false
        description.graphQL = nil
        var preset: Preset?
        if let named = top["preset"] {
            switch named {
            case .null: break
            case .string(let name):
                guard let found = Preset.all.first(where: { $0.name == name }) else {
                    throw DescriptionRefusal("/preset", "unknown preset \(JSONText.quote(name)); known presets: "
                                             + Preset.all.map(\.name).joined(separator: ", ") + "; or null")
                }
                preset = found
                description = found.applied(to: description)
            default:
                throw DescriptionRefusal("/preset", "must be a preset's name (a string) or null, not \(named.kindName)")
            }
        }
        if let summary = top["summary"] {
            // Output-only: what sheaf_preset_description prints, the named preset's own sentence.
            guard case .string(let text) = summary, let preset, text == preset.summary else {
                throw DescriptionRefusal("/summary", "is printed, not read: it must be the summary of the preset named in /preset, or left out")
            }
        }
        if let plan = top["plan"] {
            guard plan == .null || planNames.contains(where: { plan == .string($0) }) else {
                throw DescriptionRefusal("/plan", "is printed, not read: it must be null, \(planNames.joined(separator: ", ")), or left out")
            }
        }
        if let graphQL = top["graphql"], graphQL != .null { description.readGraphQL(try readGraphQL(graphQL)) }
        if let flag = top["read_only"] {
            guard case .bool(let readOnly) = flag else {
                throw DescriptionRefusal("/read_only", "must be true (the endpoint only reads: its POST pages may be sent again) or false, not \(flag.kindName)")
            }
            description.readOnly = readOnly
        }
        if let paging = top["paging"] { description.paging = try readPaging(paging, over: description.paging) }
        if let signals = top["signals"] {
            let table = try members(signals, at: "/signals", allowed: Signal.allCases.map(\.rawValue))
            for signal in Signal.allCases {
                guard let entry = table[signal.rawValue] else { continue }
                description.signals[signal] = try readSource(entry, of: signal)
            }
        }
        if let until = top["until"] { description.until = try readUntil(until) }
        if let since = top["since"] { description.since = try readSince(since) }
        if let split = top["split"] { description.split = try readSplit(split) }
        if let plan = top["split_plan"], plan != .null, plan.kindName != "a string" {
            throw DescriptionRefusal("/split_plan", "is printed, not read: a sentence, null, or left out")
        }
        if let state = top["sync_state"] { try checkSyncState(state) }
        try checkSyncFields(description)
        try crossCheck(description)
        return description
    }

    /// The paging object: with a "kind", the parts it gives alone (first defaults to 1 for page
    /// numbers, 0 otherwise); without one, the parts it gives replace those of `base` (the preset's).
    private static func readPaging(_ value: JSONValue, over base: Paging) throws(DescriptionRefusal) -> Paging {
        let fields = try members(value, at: "/paging", allowed: ["kind", "param", "first", "size_param", "size", "detected"])
        try outputOnlyFlag(fields["detected"], at: "/paging/detected")
        var kind = base.kindName
        var parameter = base.parameter
        var first = base.first ?? 0
        var sizeParameter = base.size?.parameter
        var size = base.size?.value
        if let given = fields["kind"] {
            guard case .string(let name) = given else {
                throw DescriptionRefusal("/paging/kind", "must be one of \(Paging.kindNames.joined(separator: ", ")), not \(given.kindName)")
            }
            kind = name
            parameter = nil
            first = name == "page_number" ? 1 : 0
            sizeParameter = nil
            size = nil
        }
        if let given = fields["param"] { parameter = try optionalString(given, at: "/paging/param") }
        if let given = fields["first"] {
            guard let number = try optionalWhole(given, at: "/paging/first") else {
                throw DescriptionRefusal("/paging/first", "must be a whole number of 0 or more, not null")
            }
            first = number
        }
        if let given = fields["size_param"] {
            sizeParameter = try optionalString(given, at: "/paging/size_param")
            // A new size parameter with its size, or null: named, not sent (what presets print).
            if sizeParameter != nil, fields["size"] == nil {
                throw DescriptionRefusal("/paging/size", "a page size parameter needs a non-empty name and a size of 1 or more "
                                         + "(or null: named, not sent)")
            }
        }
        if let given = fields["size"] { size = try optionalWhole(given, at: "/paging/size") }
        do throws(DescriptionRefusal) {
            return try Paging.described(kind: kind, parameter: parameter, first: first, sizeParameter: sizeParameter, size: size)
        } catch {
            throw DescriptionRefusal("/paging/" + error.field, error.message)
        }
    }

    /// The "graphql" object: {"connection": pointer, "first", "after", "page_size", "allow_partial",
    /// "nested": [{"field", "query", "connection", "first", "after", "id", "page_size"}]}.
    private static func readGraphQL(_ value: JSONValue) throws(DescriptionRefusal) -> GraphQLConnection {
        let fields = try members(value, at: "/graphql", allowed: ["connection", "first", "after", "page_size", "allow_partial", "nested"])
        var graphQL = GraphQLConnection(connection: try dataPointer(fields["connection"], at: "/graphql/connection", required: true)!)
        graphQL.first = try variable(fields["first"], at: "/graphql/first") ?? graphQL.first
        graphQL.after = try variable(fields["after"], at: "/graphql/after") ?? graphQL.after
        graphQL.pageSize = try pageSize(fields["page_size"], at: "/graphql/page_size") ?? graphQL.pageSize
        if let given = fields["allow_partial"] {
            guard case .bool(let allows) = given else { throw DescriptionRefusal("/graphql/allow_partial", "must be true or false") }
            graphQL.allowsPartial = allows
        }
        if let given = fields["nested"], given != .null {
            guard case .array(let entries) = given else {
                throw DescriptionRefusal("/graphql/nested", "must be an array of the connections inside each node to complete")
            }
            for (index, entry) in entries.enumerated() {
                let at = "/graphql/nested/\(index)"
                let parts = try members(entry, at: at, allowed: ["field", "query", "connection", "first", "after", "id", "page_size"])
                guard case .string(let text)? = parts["field"], let field = JSONPointer(text), !field.tokens.isEmpty else {
                    throw DescriptionRefusal(at + "/field", "must be a JSON pointer to the connection inside each node (\"/comments\")")
                }
                guard case .string(let query)? = parts["query"], !query.isEmpty else {
                    throw DescriptionRefusal(at + "/query", "must be the query that pages this connection of one node (a non-empty string)")
                }
                var nested = NestedConnection(field: field, query: query, connection: try dataPointer(parts["connection"], at: at + "/connection"))
                nested.first = try variable(parts["first"], at: at + "/first") ?? nested.first
                nested.after = try variable(parts["after"], at: at + "/after") ?? nested.after
                nested.id = try variable(parts["id"], at: at + "/id") ?? nested.id
                nested.pageSize = try pageSize(parts["page_size"], at: at + "/page_size") ?? nested.pageSize
                graphQL.nested.append(nested)
            }
        }
        return graphQL
    }

    /// A pointer into an answer's data ("/data/..."); nil when absent and not required.
    private static func dataPointer(_ value: JSONValue?, at: String, required: Bool = false) throws(DescriptionRefusal) -> JSONPointer? {
        guard let value, value != .null || required else { return nil }
        guard case .string(let text) = value, let pointer = JSONPointer(text), pointer.tokens.first == "data" else {
            throw DescriptionRefusal(at, "must be a JSON pointer to the connection in the answer's data (\"/data/repository/issues\")")
        }
        return pointer
    }

    /// The name of a GraphQL variable (`/[_A-Za-z][_0-9A-Za-z]*/`, without its $); nil when absent.
    private static func variable(_ value: JSONValue?, at: String) throws(DescriptionRefusal) -> String? {
        guard let value else { return nil }
        guard let name = try optionalString(value, at: at), let lead = name.utf8.first, !(0x30...0x39).contains(lead),
              name.utf8.allSatisfy(isNameByte) else {
            throw DescriptionRefusal(at, "must be the name of a variable of the query (letters, digits and _), without its $")
        }
        return name
    }

    private static func pageSize(_ value: JSONValue?, at: String) throws(DescriptionRefusal) -> Int? {
        guard let value else { return nil }
        guard let size = try optionalWhole(value, at: at), size >= 1 else {
            throw DescriptionRefusal(at, "must be a whole number of 1 or more (GitHub's connections take at most 100)")
        }
        return size
    }

    /// A byte of a GraphQL name.
    private static func isNameByte(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "_") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z"))
    }

    private static func readSource(_ value: JSONValue, of signal: Signal) throws(DescriptionRefusal) -> SignalSource {
        let at = "/signals/" + signal.rawValue
        if value == .null { return .none } // the list has no such signal
        let fields = try members(value, at: at, allowed: ["source", "where", "detected"])
        try outputOnlyFlag(fields["detected"], at: at + "/detected")
        guard case .string(let kind)? = fields["source"] else {
            throw DescriptionRefusal(at + "/source", "must be one of \(SignalSource.kindNames.dropFirst().joined(separator: ", ")) "
                                     + "(\(fields["source"]?.kindName ?? "it is missing"))")
        }
        // One spelling a signal the list has not: null, as the library prints it.
        guard kind != "none" else {
            throw DescriptionRefusal(at + "/source", "a signal the list does not have is written null (\"\(signal.rawValue)\": null), not {\"source\": \"none\"}")
        }
        let location = try fields["where"].flatMap { (where_) throws(DescriptionRefusal) in try optionalString(where_, at: at + "/where") }
        do throws(DescriptionRefusal) {
            return try SignalSource.described(signal, kind: kind, where: location)
        } catch {
            throw DescriptionRefusal(at + "/" + error.field, error.message)
        }
    }

    /// What `ListDescription.check()` refuses between paging and signals, with the field.
    private static func crossCheck(_ description: ListDescription) throws(DescriptionRefusal) {
        let cursor = description.source(of: .cursor)
        switch description.paging {
        case .cursor:
            if cursor == .none { throw DescriptionRefusal("/signals/cursor", "cursor paging needs a cursor signal to read (or detect)") }
        case .detect:
            break
        default:
            if cursor != .none, cursor != .detect {
                throw DescriptionRefusal("/signals/cursor", "a cursor signal needs cursor paging (the parameter it is sent in)")
            }
        }
    }

    // MARK: Values

    /// The members of an object, refusing another value, a name not in `allowed`, and a repeat.
    static func members(_ value: JSONValue, at pointer: String, allowed: [String]) throws(DescriptionRefusal) -> [String: JSONValue] {
        guard case .object(let members) = value else {
            throw DescriptionRefusal(pointer, "must be a JSON object, not \(value.kindName)")
        }
        var table: [String: JSONValue] = [:]
        for member in members {
            let field = pointer + "/" + JSONPointer.escaping(member.name)
            guard allowed.contains(member.name) else {
                throw DescriptionRefusal(field, "unknown field; \(pointer.isEmpty ? "a description" : pointer) has \(allowed.joined(separator: ", "))")
            }
            guard table.updateValue(member.value, forKey: member.name) == nil else {
                throw DescriptionRefusal(field, "given twice")
            }
        }
        return table
    }

    private static func outputOnlyFlag(_ value: JSONValue?, at pointer: String) throws(DescriptionRefusal) {
        guard let value else { return }
        guard case .bool = value else {
            throw DescriptionRefusal(pointer, "is printed, not read: true or false (what detection decided), or left out")
        }
    }

    private static func optionalString(_ value: JSONValue, at pointer: String) throws(DescriptionRefusal) -> String? {
        switch value {
        case .null: return nil
        case .string(let text): return text
        default: throw DescriptionRefusal(pointer, "must be a string or null, not \(value.kindName)")
        }
    }

    /// A whole number from 0 to 2^53, or nil for null; never a trap, whatever the text.
    private static func optionalWhole(_ value: JSONValue, at pointer: String) throws(DescriptionRefusal) -> Int? {
        switch value {
        case .null:
            return nil
        case .number(let text):
            var digits = Substring(text)
            let negative = digits.hasPrefix("-")
            if negative { digits = digits.dropFirst() }
            guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                throw DescriptionRefusal(pointer, "must be a whole number (no fraction or exponent), not \(text)")
            }
            let zero = digits.utf8.allSatisfy { $0 == UInt8(ascii: "0") }
            guard !negative || zero else { throw DescriptionRefusal(pointer, "must be a whole number of 0 or more, not \(text)") }
            guard digits.count <= 16, let number = Int(digits), number <= largestDescribedNumber else {
                throw DescriptionRefusal(pointer, "is out of range: at most 2^53 (\(largestDescribedNumber)), not \(text.prefix(40))")
            }
            return number
        default:
            throw DescriptionRefusal(pointer, "must be a whole number or null, not \(value.kindName)")
        }
    }
}
