/// A list whose pages are asked for with a method and a body: a search or query endpoint
/// (Notion's database query, Elasticsearch's `_search`) or a GraphQL connection.
///
/// Paging parameters that go in the body are named `body:` and a JSON pointer into it
/// (`"param": "body:/start_cursor"`, `"size_param": "body:/page_size"`). The planner carries
/// them as query parameters of that name, their values as JSON text, so that page numbers,
/// cursors, resume tokens and range pieces work for them as for any parameter; `PageBody.render`
/// moves them into the body when a request is made (no request carries them in its URL; a
/// message names a page by that URL, its body parameters included, never by the body).
public struct ListRequest: Sendable, Equatable {
    /// An HTTP method token ("POST", or "QUERY", "SEARCH"…).
    public var method: String
    public var contentType: String
    /// The body as the caller gave it (a JSON object when paging parameters go in it).
    public var body: [UInt8]

    public init(method: String = "POST", contentType: String = "application/json", body: [UInt8]) {
        self.method = method
        self.contentType = contentType
        self.body = body
    }
}

/// A list that is a GraphQL connection (`pageInfo { hasNextPage endCursor }` with `first` and
/// `after` variables): its pages are the query sent again with the cursor variable set, its
/// items the connection's `nodes` (or each of its `edges`' `node`).
public struct GraphQLConnection: Sendable, Equatable {
    /// Where the connection is in an answer (`/data/repository/issues`).
    public var connection: JSONPointer
    /// The page-size variable, and the size sent in it.
    public var first: String
    public var pageSize: Int
    /// The cursor variable.
    public var after: String
    /// Whether an answer with both data and errors is read rather than failed.
    public var allowsPartial: Bool
    /// The connections inside each node completed by queries of their own (an issue's comments).
    public var nested: [NestedConnection]

    public init(connection: JSONPointer, first: String = "first", pageSize: Int = 100, after: String = "after",
                allowsPartial: Bool = false, nested: [NestedConnection] = []) {
        self.connection = connection
        self.first = first
        self.pageSize = pageSize
        self.after = after
        self.allowsPartial = allowsPartial
        self.nested = nested
    }

    /// The description's "graphql" object.
    var json: String {
        var out = "{\"connection\":\(JSONText.quote(connection.description)),\"first\":\(JSONText.quote(first)),"
            + "\"after\":\(JSONText.quote(after)),\"page_size\":\(pageSize),\"allow_partial\":\(allowsPartial)"
        if !nested.isEmpty { out += ",\"nested\":[" + nested.map(\.json).joined(separator: ",") + "]" }
        return out + "}"
    }

    /// The prefix of a paging parameter that goes in the request's body.
    static let bodyPrefix = "body:"

    /// Where the items are when the connection has `edges` and no `nodes`; each edge's item is
    /// its `node`.
    var edges: JSONPointer { JSONPointer(tokens: connection.tokens + ["edges"]) }
    static let node = JSONPointer(tokens: ["node"])
}

/// A connection inside each node of a GraphQL list that has more pages than the list's query
/// asks for (an issue's `comments(first: 5)` of 40): the rest is fetched for each node by a
/// query of its own, taking the node's id, and the node is delivered whole.
public struct NestedConnection: Sendable, Equatable {
    /// The connection inside each node (`/comments`).
    public var field: JSONPointer
    /// The query that pages the connection of one node: it takes the node's id and the
    /// page-size and cursor variables (`node(id: $id) { ... on Issue { comments(first: $first,
    /// after: $after) { ... } } }`).
    public var query: String
    /// Where the connection is in that query's answer (by default `/data/node` and `field`).
    public var connection: JSONPointer
    public var first: String
    public var after: String
    /// The variable the node's id is sent in, and where the id is in each node.
    public var id: String
    public var pageSize: Int

    public init(field: JSONPointer, query: String, connection: JSONPointer? = nil, first: String = "first",
                after: String = "after", id: String = "id", pageSize: Int = 100) {
        self.field = field
        self.query = query
        self.connection = connection ?? JSONPointer(tokens: ["data", "node"] + field.tokens)
        self.first = first
        self.after = after
        self.id = id
        self.pageSize = pageSize
    }

    var json: String {
        "{\"field\":\(JSONText.quote(field.description)),\"query\":\(JSONText.quote(query)),"
            + "\"connection\":\(JSONText.quote(connection.description)),\"first\":\(JSONText.quote(first)),"
            + "\"after\":\(JSONText.quote(after)),\"id\":\(JSONText.quote(id)),\"page_size\":\(pageSize)}"
    }
}

extension ListDescription {
    /// Makes the list the GraphQL connection `graphQL`: cursor paging in its variables, and its
    /// items, cursor, end flag and total read where connections keep them.
    public mutating func readGraphQL(_ graphQL: GraphQLConnection) {
        self.graphQL = graphQL
        let connection = graphQL.connection.tokens
        func at(_ path: String...) -> SignalSource { .body(JSONPointer(tokens: connection + path)) }
        paging = .cursor(parameter: GraphQLConnection.bodyPrefix + "/variables/" + JSONPointer.escaping(graphQL.after),
                         size: .init(parameter: GraphQLConnection.bodyPrefix + "/variables/" + JSONPointer.escaping(graphQL.first),
                                     value: graphQL.pageSize))
        signals = [.items: at("nodes"), .cursor: at("pageInfo", "endCursor"), .hasMore: at("pageInfo", "hasNextPage"),
                   .total: at("totalCount"), .identity: signals[.identity] ?? .none]
    }

    /// The paging parameters this description puts in the request's body.
    var bodyParameters: [String] {
        [paging.parameter, paging.size?.parameter, split?.lower.parameter, split?.upper.parameter, since?.parameter]
            .compactMap { $0 }.filter { $0.hasPrefix(GraphQLConnection.bodyPrefix) }
    }

    /// How each page is asked for, when not as a plain GET: checked once, when the run starts.
    /// - Throws: `.invalidArgument` for a method that is not a token, a body parameter whose
    ///   name is not a pointer, or one meant for a body that is not a JSON object.
    package func pageBody() throws(SheafError) -> PageBody? {
        let parameters = bodyParameters
        guard request != nil || !parameters.isEmpty else { return nil }
        var pointers: [String: [String]] = [:]
        for name in parameters {
            guard let pointer = JSONPointer(String(name.dropFirst(GraphQLConnection.bodyPrefix.count))), !pointer.tokens.isEmpty else {
                throw SheafError(.invalidArgument, "the paging parameter \(JSONText.quote(name)) must be body: and a JSON pointer to a field of the body (body:/start_cursor)")
            }
            pointers[name] = pointer.tokens
        }
        guard let request, request.method != "GET" || !request.body.isEmpty else {
            // No body: the parameters go in the query under their field's name (a GET list of
            // an API whose queries take them in a body, as Notion's do).
            for (name, tokens) in pointers where tokens.count != 1 {
                throw SheafError(.invalidArgument, "the paging parameter \(name) goes in a body, but the list has none (set its method and body)")
            }
            return PageBody(method: "GET", contentType: nil, bytes: [], object: nil, pointers: pointers, isRead: true, graphQL: graphQL)
        }
        guard !request.method.isEmpty, request.method.utf8.allSatisfy(HTTPText.isTokenByte), request.method != "HEAD",
              request.method != "CONNECT" else {
            throw SheafError(.invalidArgument, "the list's method must be an HTTP method token other than HEAD and CONNECT, not \(JSONText.quote(request.method))")
        }
        var object: JSONValue?
        if !pointers.isEmpty || graphQL != nil {
            // Where each page's parameters are set; the body's values are never quoted in a message.
            let parsed = request.body.isEmpty ? JSONValue.object([]) : try? JSONValue(parsing: request.body)
            guard let parsed, case .object = parsed else {
                throw SheafError(.invalidArgument, "the list's body must be a JSON object: its paging parameters "
                                 + parameters.joined(separator: ", ") + " are set in it")
            }
            object = parsed
        }
        let isRead = readOnly || ["GET", "QUERY", "SEARCH"].contains(request.method) || (graphQL != nil && !Self.isMutation(object))
        return PageBody(method: request.method, contentType: request.contentType, bytes: request.body, object: object, pointers: pointers,
                        isRead: isRead, graphQL: graphQL)
    }

    /// Whether a GraphQL body's operation is a mutation (never sent twice).
    private static func isMutation(_ body: JSONValue?) -> Bool {
        guard case .object(let members)? = body, case .string(let query)? = members.first(where: { $0.name == "query" })?.value else {
            return false
        }
        var text = Substring(query)
        // Comments and white space before the first keyword.
        while let first = text.first, first == "#" || first.isWhitespace || first == "," {
            text = first == "#" ? text.drop { $0 != "\n" } : text.dropFirst()
        }
        return text.hasPrefix("mutation") || text.hasPrefix("subscription")
    }
}

/// How a list's page requests are made from its page URLs: the method, and the body with the
/// URL's `body:` parameters set in it (see `ListRequest`).
package struct PageBody: Sendable {
    let method: String
    let contentType: String?
    /// The caller's body, as given.
    let bytes: [UInt8]
    /// The caller's body, parsed; nil when no parameter is set in it (it is sent as given).
    let object: JSONValue?
    /// The body parameters, by their query names: each one's reference tokens.
    let pointers: [String: [String]]
    /// Whether a failed page is asked for again: the method is a read, or the description says
    /// the endpoint is one (a POST that queries).
    let isRead: Bool
    let graphQL: GraphQLConnection?

    /// The request's URL and body for the page at `url`: each `body:` parameter taken out of the
    /// query and set at its pointer (its value JSON when it reads as JSON, else a string);
    /// without a body, put back in the query under its field's name.
    func render(_ url: String) throws(SheafError) -> (url: String, body: [UInt8]) {
        let pairs = pointers.isEmpty ? [] : URLText.queryPairs(url).filter { pointers[$0.0] != nil }
        guard !pairs.isEmpty else { return (url, bytes) }
        guard var stripped = URLText.removingQuery(url, named: Set(pairs.map { $0.0.lowercased() })) else {
            throw SheafError(.invalidArgument, "cannot take the body parameters out of \(url)", url: url)
        }
        guard var document = object else {
            for (name, value) in pairs {
                let plain = (try? JSONValue(parsing: Array(value.utf8))).flatMap { value -> String? in
                    if case .string(let text) = value { return text } else { return nil }
                } ?? value
                guard let next = URLText.settingQuery(stripped, pointers[name]![0], to: plain) else {
                    throw SheafError(.invalidArgument, "cannot set \(pointers[name]![0]) in \(stripped)", url: url)
                }
                stripped = next
            }
            return (stripped, bytes)
        }
        for (name, text) in pairs {
            let value = (try? JSONValue(parsing: Array(text.utf8))) ?? .string(text)
            guard let set = document.setting(value, at: pointers[name]![...]) else {
                throw SheafError(.invalidArgument, "cannot set \(name.dropFirst(GraphQLConnection.bodyPrefix.count)) in the list's body: "
                                 + "a value on its way is not an object")
            }
            document = set
        }
        return (stripped, Array(document.text.utf8))
    }

    /// `target` (a redirect's, which repeats the request) with the body parameters of `url`.
    func carrying(from url: String, to target: String) -> String {
        URLText.queryPairs(url).reduce(target) { target, pair in
            pointers[pair.0] == nil ? target : URLText.settingQuery(target, pair.0, to: pair.1) ?? target
        }
    }
}
