import Foundation
import XCTest
@testable import Sheaf

/// The JSON object a request carried.
private func body(of request: HTTPRequest) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any] ?? [:]
}

/// Notion's database query: `start_cursor` (the next item's id) and `page_size` in the body.
private func notionReply(_ request: HTTPRequest, count: Int, pageSize: Int = 100) -> ScriptedReply {
    let sent = body(of: request)
    guard request.method == "POST", request.headers.first(named: "Content-Type") == "application/json" else {
        return .json(#"{"object":"error","status":400,"message":"not a JSON POST"}"#, status: 400)
    }
    let size = sent["page_size"] as? Int ?? pageSize
    var start = 1
    if let cursor = sent["start_cursor"] {
        guard let text = cursor as? String, let number = Int(text.dropFirst(2)) else {
            return .json(#"{"object":"error","status":400,"message":"start_cursor should be a valid uuid"}"#, status: 400)
        }
        start = number
    }
    let numbers = Array(start..<min(count + 1, start + size))
    let more = (numbers.last ?? count) < count
    let results = numbers.map { #"{"object":"page","id":"p-\#($0)"}"# }.joined(separator: ",")
    let next = more ? "\"p-\(numbers.last! + 1)\"" : "null"
    return .json(#"{"object":"list","results":[\#(results)],"next_cursor":\#(next),"has_more":\#(more)}"#)
}

private func ids(_ json: [UInt8]) -> [String] {
    ((try? JSONSerialization.jsonObject(with: Data(json))) as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
}

private func notionList(body: String = #"{"filter":{"property":"Done","checkbox":{"equals":true}}}"#) throws -> ListDescription {
    var description = try Preset.named("notion").applied(to: ListDescription(path: "/v1/databases/d1/query"))
    description.request = ListRequest(body: Array(body.utf8))
    return description
}

final class PageBodyTests: XCTestCase {
    /// 250 results, 100 a page: three POSTs, each with the caller's filter and the cursor of the
    /// page before in the body (a string), none with a body parameter left in its URL.
    func testANotionQueryIsWalkedWithTheCursorInTheBody() throws {
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in notionReply(request, count: 250) }
        let (json, outcome) = try scriptedClient(transport).fetchAll(try notionList())
        XCTAssertNil(outcome.error, "\(outcome)")
        XCTAssertEqual(ids(json), (1...250).map { "p-\($0)" })
        let requests = transport.requests
        XCTAssertEqual(requests.count, 3)
        XCTAssertEqual(requests.map { body(of: $0)["start_cursor"] as? String }, [nil, "p-101", "p-201"])
        for request in requests {
            XCTAssertEqual(request.method, "POST")
            XCTAssertEqual(request.url, "https://api.example.com/v1/databases/d1/query")
            XCTAssertNotNil(body(of: request)["filter"], "the caller's filter stays in every page's body")
        }
    }

    /// A page size in the body is sent as a number; the planner's page-one size is the caller's.
    func testABodyPageSizeIsANumber() throws {
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in notionReply(request, count: 7) }
        var description = try notionList()
        description.paging = .cursor(parameter: "body:/start_cursor", size: .init(parameter: "body:/page_size", value: 3))
        let (json, outcome) = try scriptedClient(transport).fetchAll(description)
        XCTAssertNil(outcome.error)
        XCTAssertEqual(ids(json).count, 7)
        XCTAssertEqual(transport.requests.map { body(of: $0)["page_size"] as? Int }, [3, 3, 3])
    }

    /// A POST that fails once is not sent again unless the description says it only reads.
    func testAPostIsRetriedOnlyWhenTheEndpointReads() throws {
        for readOnly in [false, true] {
            let transport = ScriptedTransport()
            transport.otherwise { request, attempt in attempt == 1 ? .status(503) : notionReply(request, count: 5) }
            var description = try notionList()
            description.readOnly = readOnly
            let (json, outcome) = try scriptedClient(transport).fetchAll(description)
            if readOnly {
                XCTAssertNil(outcome.error)
                XCTAssertEqual(ids(json).count, 5)
                XCTAssertEqual(transport.requests.count, 2)
            } else {
                XCTAssertEqual(outcome.error?.code, .http, "\(outcome)")
                XCTAssertEqual(transport.requests.count, 1, "a POST that may have taken effect is not sent twice")
            }
        }
    }

    /// Elasticsearch's search_after: the last hit's sort values (an array) go in the body as
    /// they are; hits sharing a timestamp are each read once.
    func testSearchAfterSendsTheLastHitsSortValues() throws {
        let transport = ScriptedTransport()
        let docs = (0..<23).map { (ts: 1_700_000_000 + $0 / 4, id: String(format: "d%03d", $0)) }
        transport.otherwise { request, _ in
            let sent = body(of: request)
            var start = 0
            if let after = sent["search_after"] as? [Any], let ts = after.first as? Int, let id = after.last as? String {
                start = docs.firstIndex { ($0.ts, $0.id) > (ts, id) } ?? docs.count
            }
            let hits = docs[start..<min(docs.count, start + (sent["size"] as? Int ?? 10))].map {
                #"{"_id":"\#($0.id)","_source":{"ts":\#($0.ts)},"sort":[\#($0.ts),"\#($0.id)"]}"#
            }
            return .json(#"{"hits":{"total":{"value":23,"relation":"eq"},"hits":[\#(hits.joined(separator: ","))]}}"#)
        }
        var description = try Preset.named("elasticsearch").applied(to: ListDescription(path: "/logs/_search"))
        description.paging = .cursor(parameter: "body:/search_after", size: .init(parameter: "body:/size", value: 5))
        description.request = ListRequest(body: Array(#"{"sort":[{"ts":"asc"},{"_id":"asc"}]}"#.utf8))
        let (json, outcome) = try scriptedClient(transport).fetchAll(description)
        XCTAssertNil(outcome.error, "\(outcome)")
        let got = ((try JSONSerialization.jsonObject(with: Data(json))) as? [[String: Any]] ?? []).compactMap { $0["_id"] as? String }
        XCTAssertEqual(got, docs.map(\.id))
        let second = body(of: transport.requests[1])["search_after"] as? [Any]
        XCTAssertEqual(second?.first as? Int, docs[4].ts)
        XCTAssertEqual(second?.last as? String, docs[4].id)
    }

    /// A body parameter for a list whose body is not a JSON object is refused at the start,
    /// without quoting the body; one for a GET list without a body goes in its query by name.
    func testBodyParametersNeedAnObjectOrGoInTheQuery() throws {
        let transport = ScriptedTransport()
        transport.otherwise { _, _ in .json(#"{"results":[],"next_cursor":null,"has_more":false}"#) }
        var refused = try notionList()
        refused.request = ListRequest(body: Array("[\"secret-value\"]".utf8))
        XCTAssertThrowsError(try scriptedClient(transport).makeList(refused)) { error in
            XCTAssertEqual((error as? SheafError)?.code, .invalidArgument)
            XCTAssertFalse("\(error)".contains("secret-value"), "\(error)")
        }
        var get = try Preset.named("notion").applied(to: ListDescription(path: "/v1/blocks/b1/children"))
        get.paging = .cursor(parameter: "body:/start_cursor", size: .init(parameter: "body:/page_size", value: 50))
        let (_, outcome) = try scriptedClient(transport).fetchAll(get)
        XCTAssertNil(outcome.error)
        XCTAssertEqual(transport.requests.last?.method, "GET")
        XCTAssertEqual(transport.requests.last?.url, "https://api.example.com/v1/blocks/b1/children?page_size=50")
    }

    /// A 307 repeats the POST with its body, the cursor in it; the next page is asked for where it led.
    func testARedirectThatRepeatsThePostKeepsTheBodyParameters() throws {
        let transport = ScriptedTransport()
        transport.on("https://api.example.com/v1/databases/d1/query") { request, _ in
            body(of: request)["start_cursor"] == nil ? notionReply(request, count: 250) : .redirect(307, to: "/v2/databases/d1/query")
        }
        transport.on("https://api.example.com/v2/databases/d1/query") { request, _ in notionReply(request, count: 250) }
        let (json, outcome) = try scriptedClient(transport).fetchAll(try notionList())
        XCTAssertNil(outcome.error, "\(outcome)")
        XCTAssertEqual(ids(json), (1...250).map { "p-\($0)" })
        XCTAssertEqual(transport.requests.map { body(of: $0)["start_cursor"] as? String }, [nil, "p-101", "p-101", "p-201"])
        XCTAssertEqual(transport.requests.map(\.method), ["POST", "POST", "POST", "POST"])
        XCTAssertEqual(transport.requests.map { $0.url.hasSuffix("/v2/databases/d1/query") }, [false, false, true, true])
    }

    /// The description's JSON form carries read_only and graphql, and reads back as the same.
    func testTheDescriptionJSONCarriesGraphQLAndReadOnly() throws {
        let text = #"{"graphql":{"connection":"/data/repository/issues","page_size":50},"read_only":true}"#
        let description = try ListDescription(path: "/graphql", json: Array(text.utf8))
        XCTAssertTrue(description.readOnly)
        XCTAssertEqual(description.graphQL?.pageSize, 50)
        XCTAssertEqual(description.paging, .cursor(parameter: "body:/variables/after", size: .init(parameter: "body:/variables/first", value: 50)))
        let printed = description.json(resolution: nil, plan: nil)
        let again = try ListDescription(path: "/graphql", json: printed)
        XCTAssertEqual(again.json(resolution: nil, plan: nil), printed)
        for bad in [#"{"graphql":{"connection":"repository"}}"#, #"{"graphql":{"connection":"/data/x","first":"$first"}}"#,
                    #"{"graphql":{"connection":"/data/x","page_size":0}}"#, #"{"read_only":"yes"}"#] {
            XCTAssertThrowsError(try ListDescription(path: "/graphql", json: Array(bad.utf8)), bad)
        }
    }
}

/// A GitHub-shaped GraphQL connection of `count` issues: nodes (or edges), pageInfo, totalCount.
private func graphQLReply(_ request: HTTPRequest, count: Int, edges: Bool = false) -> ScriptedReply {
    let sent = body(of: request)
    let variables = sent["variables"] as? [String: Any] ?? [:]
    guard let first = variables["first"] as? Int, (1...100).contains(first) else {
        return .json(#"{"data":null,"errors":[{"type":"MISSING_PAGINATION_BOUNDARIES","path":["repository","issues"],"message":"You must provide a `first` or `last` value"}]}"#)
    }
    var start = 1
    if let after = variables["after"] {
        guard let text = after as? String, text.hasPrefix("c:"), let number = Int(text.dropFirst(2)) else {
            return .json(#"{"data":{"repository":{"issues":null}},"errors":[{"type":"INVALID_CURSOR_ARGUMENTS","path":["repository","issues"],"message":"`x` does not appear to be a valid cursor."}]}"#)
        }
        start = number + 1
    }
    let numbers = Array(start..<min(count + 1, start + first))
    let nodes = numbers.map { #"{"id":"I_\#($0)","number":\#($0)}"# }
    let items = edges ? "\"edges\":[" + nodes.map { #"{"cursor":"x","node":\#($0)}"# }.joined(separator: ",") + "]"
                      : "\"nodes\":[" + nodes.joined(separator: ",") + "]"
    let more = (numbers.last ?? count) < count
    let end = numbers.last.map { "\"c:\($0)\"" } ?? "null"
    return .json(#"{"data":{"repository":{"issues":{"totalCount":\#(count),"pageInfo":{"hasNextPage":\#(more),"endCursor":\#(end)},\#(items)}}}}"#)
}

private func graphQLList(pageSize: Int = 100, allowsPartial: Bool = false) -> ListDescription {
    var description = ListDescription(path: "/graphql")
    description.readGraphQL(GraphQLConnection(connection: JSONPointer("/data/repository/issues")!, pageSize: pageSize,
                                              allowsPartial: allowsPartial))
    let query = #"{"query":"query($first: Int!, $after: String) { repository(owner: \"o\", name: \"r\") { issues(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { id number } } } }","variables":{}}"#
    description.request = ListRequest(body: Array(query.utf8))
    return description
}

private func numbers(_ json: [UInt8]) -> [Int] {
    ((try? JSONSerialization.jsonObject(with: Data(json))) as? [[String: Any]] ?? []).compactMap { $0["number"] as? Int }
}

final class GraphQLListTests: XCTestCase {
    /// 230 issues, 100 a page, as nodes and as edges: each once, in order, agreeing with totalCount.
    func testAConnectionIsWalkedByItsEndCursor() throws {
        for edges in [false, true] {
            let transport = ScriptedTransport()
            transport.otherwise { request, _ in graphQLReply(request, count: 230, edges: edges) }
            let (json, outcome) = try scriptedClient(transport).fetchAll(graphQLList())
            XCTAssertNil(outcome.error, "\(outcome)")
            XCTAssertEqual(numbers(json), Array(1...230))
            XCTAssertEqual(transport.requests.map { (body(of: $0)["variables"] as? [String: Any])?["after"] as? String }, [nil, "c:100", "c:200"])
            XCTAssertEqual(transport.requests.map { (body(of: $0)["variables"] as? [String: Any])?["first"] as? Int }, [100, 100, 100])
            XCTAssertNotNil(body(of: transport.requests[0])["query"] as? String)
        }
    }

    /// An answer with errors is a failure naming the first message and its path, never OK; the
    /// items before it stay delivered.
    func testErrorsFailTheListNamingTheFirstOne() throws {
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in
            let variables = body(of: request)["variables"] as? [String: Any] ?? [:]
            guard variables["after"] != nil else { return graphQLReply(request, count: 300) }
            return .json(#"{"data":{"repository":{"issues":null}},"errors":[{"type":"INVALID_CURSOR_ARGUMENTS","path":["repository","issues"],"message":"`c:100` does not appear to be a valid cursor."},{"message":"second"}]}"#)
        }
        let (json, outcome) = try scriptedClient(transport).fetchAll(graphQLList())
        XCTAssertEqual(outcome.error?.code, .api)
        XCTAssertTrue(outcome.error?.message.contains("does not appear to be a valid cursor. (at repository.issues) and 1 more") == true,
                      outcome.error?.message ?? "")
        XCTAssertEqual(numbers(json).count, 100)
        XCTAssertEqual(transport.requests.count, 2, "an error is not retried")
    }

    /// Partial data with errors fails unless the description allows it.
    func testPartialDataFailsUnlessAllowed() throws {
        for allows in [false, true] {
            let transport = ScriptedTransport()
            transport.otherwise { request, _ in
                guard case .success(let response)? = graphQLReply(request, count: 50).result else { return .status(500) }
                var text = String(decoding: response.body, as: UTF8.self)
                text.removeLast()
                return .json(text + #","errors":[{"message":"Something went wrong","path":["repository","issues","nodes",3,"author"]}]}"#)
            }
            let (json, outcome) = try scriptedClient(transport).fetchAll(graphQLList(allowsPartial: allows))
            if allows {
                XCTAssertNil(outcome.error)
                XCTAssertEqual(numbers(json).count, 50)
            } else {
                XCTAssertEqual(outcome.error?.code, .api)
                XCTAssertTrue(outcome.error?.message.contains("(at repository.issues.nodes.3.author)") == true, "\(outcome)")
                XCTAssertEqual(outcome.error?.hint, "the answer also has data; allow_partial reads it")
            }
        }
    }

    /// GitHub's RATE_LIMITED and Shopify's THROTTLED (200 with errors) are waited out as a 429
    /// is; Shopify's wait is what its cost extension says.
    func testRateLimitErrorsAreWaitedOut() throws {
        let throttled = #"{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}],"extensions":{"cost":{"requestedQueryCost":10,"actualQueryCost":null,"throttleStatus":{"maximumAvailable":1000,"currentlyAvailable":5,"restoreRate":50}}}}"#
        let limited = #"{"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded for user ID 1."}]}"#
        for answer in [throttled, limited] {
            let transport = ScriptedTransport()
            transport.otherwise { request, attempt in attempt == 1 ? .json(answer) : graphQLReply(request, count: 20) }
            let started = Date()
            let (json, outcome) = try scriptedClient(transport).fetchAll(graphQLList())
            XCTAssertNil(outcome.error, "\(outcome)")
            XCTAssertEqual(numbers(json).count, 20)
            XCTAssertEqual(transport.requests.count, 2)
            if answer == throttled { XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.09, "restoreRate 50 for 5 points: 100 ms") }
        }
        var decided = AnswerPolicy(ClientConfiguration(), redactor: Redactor([]), template: FetchTemplate(page: try graphQLList().pageBody()))
        decided.refreshesCredential = false
        let response = HTTPResponse(status: 200, headers: [], body: Array(throttled.utf8))
        XCTAssertEqual(decided.decide(.success(response), url: "https://h/graphql", attempt: 1, redirects: 0) { _, _ in 7 },
                       .retry(afterMilliseconds: 100))
    }

    /// A mutation is never sent twice; a query is.
    func testAMutationIsNotRetried() throws {
        var description = graphQLList()
        description.request = ListRequest(body: Array(##"{"query":"# make\n mutation { x }","variables":{}}"##.utf8))
        XCTAssertEqual(try description.pageBody()?.isRead, false)
        XCTAssertEqual(try graphQLList().pageBody()?.isRead, true)
    }
}

/// 3 pages of 10 issues, each with 7 comments of which the list's query gives 5; the rest comes
/// from a `node(id:)` query (after the node's endCursor), `delay` ms later.
private func nestedReply(_ request: HTTPRequest, failing: Int? = nil) -> ScriptedReply {
    let sent = body(of: request)
    let query = sent["query"] as? String ?? ""
    let variables = sent["variables"] as? [String: Any] ?? [:]
    func comments(_ issue: Int, from: Int, count: Int, more: Bool) -> String {
        let nodes = (from..<from + count).map { #"{"id":"C_\#(issue)_\#($0)"}"# }.joined(separator: ",")
        return #"{"totalCount":7,"pageInfo":{"hasNextPage":\#(more),"endCursor":"k\#(from + count - 1)"},"nodes":[\#(nodes)]}"#
    }
    if query.contains("node(") {
        guard let id = variables["id"] as? String, let issue = Int(id.dropFirst(2)), variables["after"] as? String == "k5" else {
            return .json(#"{"data":null,"errors":[{"message":"bad nested request"}]}"#)
        }
        if issue == failing {
            return .json(#"{"data":{"node":null},"errors":[{"message":"Resource not accessible","path":["node"]}]}"#).after(300)
        }
        return .json(#"{"data":{"node":{"comments":\#(comments(issue, from: 6, count: 2, more: false))}}}"#).after(100)
    }
    let after = (variables["after"] as? String).flatMap { Int($0.dropFirst(2)) } ?? 0
    let issues = (after + 1...after + 10).map { #"{"id":"I_\#($0)","number":\#($0),"comments":\#(comments($0, from: 1, count: 5, more: true))}"# }
    let more = after + 10 < 30
    return .json(#"{"data":{"repository":{"issues":{"pageInfo":{"hasNextPage":\#(more),"endCursor":"c:\#(after + 10)"},"nodes":[\#(issues.joined(separator: ","))]}}}}"#)
}

private func nestedList() -> ListDescription {
    var description = graphQLList()
    var graphQL = description.graphQL!
    graphQL.nested = [NestedConnection(field: JSONPointer("/comments")!, query: "query($id: ID!, $first: Int!, $after: String) { node(id: $id) { ... on Issue { comments(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { id } } } } }")]
    description.readGraphQL(graphQL)
    return description
}

final class NestedConnectionTests: XCTestCase {
    /// Every node arrives whole (its 7 comments in order, no next page), the list's order kept;
    /// the nested requests are in flight while the list goes on: those of every page at once
    /// (each takes 100 ms; the list's pages come at once), not page after page.
    func testNestedConnectionsAreCompletedWhileTheListGoesOn() throws {
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in nestedReply(request) }
        let (json, outcome) = try scriptedClient(transport) { $0.window = 64; $0.maxWindow = 64 }.fetchAll(nestedList())
        XCTAssertNil(outcome.error, "\(outcome)")
        let items = (try JSONSerialization.jsonObject(with: Data(json))) as? [[String: Any]] ?? []
        XCTAssertEqual(items.compactMap { $0["number"] as? Int }, Array(1...30))
        for item in items {
            let comments = item["comments"] as? [String: Any]
            let ids = (comments?["nodes"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
            XCTAssertEqual(ids, (1...7).map { "C_\(item["number"]!)_\($0)" })
            XCTAssertEqual((comments?["pageInfo"] as? [String: Any])?["hasNextPage"] as? Bool, false)
        }
        XCTAssertEqual(transport.requests.count, 33)
        XCTAssertGreaterThanOrEqual(transport.maxOutstanding, 21, "the nested connections of one page were completed before the next page's began")
    }

    /// A nested list that fails fails the list with what was whole before its page, naming the
    /// node and the connection.
    func testANestedFailureFailsTheListNamingTheNode() throws {
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in nestedReply(request, failing: 14) }
        let (json, outcome) = try scriptedClient(transport) { $0.window = 64; $0.maxWindow = 64 }.fetchAll(nestedList())
        XCTAssertEqual(outcome.error?.code, .api)
        XCTAssertTrue(outcome.error?.message.contains("the nested connection /comments of the node with id \"I_14\": ") == true,
                      outcome.error?.message ?? "")
        XCTAssertEqual(numbers(json), Array(1...10))
    }

    /// A list read in pieces cannot hold its pages back for their nodes: refused at its start.
    func testNestedConnectionsAreRefusedInASplitList() throws {
        var description = nestedList()
        description.split = RangeFilter(field: JSONPointer("/number")!, lower: .init(parameter: "body:/variables/min", inclusive: true),
                                        upper: .init(parameter: "body:/variables/max", inclusive: false), kind: .integer)
        XCTAssertThrowsError(try scriptedClient(ScriptedTransport()).makeList(description)) { error in
            XCTAssertEqual((error as? SheafError)?.code, .invalidArgument)
        }
    }

    /// A node whose connection comes back short of its totalCount fails the list.
    func testANestedConnectionShortOfItsTotalIsIncomplete() throws {
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in
            let query = body(of: request)["query"] as? String ?? ""
            guard query.contains("node(") else { return nestedReply(request) }
            return .json(#"{"data":{"node":{"comments":{"totalCount":7,"pageInfo":{"hasNextPage":false,"endCursor":"k6"},"nodes":[{"id":"x"}]}}}}"#)
        }
        let (_, outcome) = try scriptedClient(transport).fetchAll(nestedList())
        XCTAssertEqual(outcome.error?.code, .incomplete, "\(outcome)")
        XCTAssertTrue(outcome.error?.message.contains("holds 6 nodes, but its totalCount is 7") == true, outcome.error?.message ?? "")
    }
}
