/// A named shape of a public API's lists: its paging and where its signals are. The one table of
/// them; C, Python and the command line list it from here.
public struct Preset: Sendable {
    public let name: String
    /// One sentence: whose convention it is.
    public let summary: String
    public let paging: Paging
    /// Where each signal is read; a signal absent here is `.none` (items absent: `.detect`).
    public let signals: [Signal: SignalSource]
    /// The range filter the API's lists take on the field they are ordered by, when it has one.
    public let split: RangeFilter?
    /// Whether the API's list endpoints only read though they take a POST (a query or a search):
    /// their pages are retried as a GET's are.
    public let readOnly: Bool

    /// Every preset, in the order they are listed.
    public static let all: [Preset] = [
        Preset("anchor", "{\"items\", \"next_page\", \"total\"} with ?page=N&per_page=S",
               .pageNumber(.init(parameter: "page", first: 1, size: size("per_page"))),
               [.items: body("/items"), .next: body("/next_page"), .total: body("/total")]),
        Preset("github", "GitHub REST: a bare array, Link rel=\"next\" and rel=\"last\", ?page=N&per_page=S",
               .pageNumber(.init(parameter: "page", first: 1, size: size("per_page"))),
               [.items: body(""), .next: .link("next"), .pageCount: .link("last")]),
        Preset("gitlab", "GitLab REST: a bare array, X-Next-Page, X-Total and X-Total-Pages headers",
               .pageNumber(.init(parameter: "page", first: 1, size: size("per_page"))),
               [.items: body(""), .next: .header("X-Next-Page"), .total: .header("X-Total"),
                .pageCount: .header("X-Total-Pages")]),
        Preset("json-server", "json-server: a bare array, X-Total-Count, ?_page=N&_limit=S",
               .pageNumber(.init(parameter: "_page", first: 1, size: size("_limit"))),
               [.items: body(""), .next: .link("next"), .total: .header("X-Total-Count")]),
        Preset("drf-page", "Django REST framework PageNumberPagination: {\"count\", \"next\", \"results\"}",
               .pageNumber(.init(parameter: "page", first: 1, size: size("page_size"))),
               [.items: body("/results"), .next: body("/next"), .total: body("/count")]),
        Preset("drf-limit", "Django REST framework LimitOffsetPagination: ?limit=L&offset=O",
               .offset(.init(parameter: "offset", first: 0, size: size("limit"))),
               [.items: body("/results"), .next: body("/next"), .total: body("/count")]),
        Preset("drf-cursor", "Django REST framework CursorPagination: opaque next links, no count",
               .next, [.items: body("/results"), .next: body("/next")]),
        Preset("jsonapi", "JSON:API: {\"data\", \"links\": {\"next\"}, \"meta\": {\"total\"}}, ?page[number]=N&page[size]=S",
               .pageNumber(.init(parameter: "page[number]", first: 1, size: size("page[size]"))),
               [.items: body("/data"), .next: body("/links/next"), .total: body("/meta/total")]),
        Preset("odata", "OData v4: {\"value\", \"@odata.nextLink\", \"@odata.count\"}, $skip/$top",
               .offset(.init(parameter: "$skip", first: 0, size: size("$top"))),
               [.items: body("/value"), .next: body("/@odata.nextLink"), .total: body("/@odata.count")]),
        Preset("hal", "HAL / Spring Data REST: _embedded, _links.next.href, page.totalElements, 0-based ?page=N&size=S",
               .pageNumber(.init(parameter: "page", first: 0, size: size("size"))),
               [.items: .detect, .next: body("/_links/next/href"), .total: body("/page/totalElements"),
                .pageCount: body("/page/totalPages")]),
        Preset("stripe", "Stripe: {\"data\", \"has_more\"}, the last item's id sent as starting_after",
               .cursor(parameter: "starting_after", size: size("limit")),
               [.items: body("/data"), .cursor: .lastItem(JSONPointer("/id")!), .hasMore: body("/has_more")],
               split: RangeFilter(field: JSONPointer("/created")!, lower: .init(parameter: "created[gte]", inclusive: true),
                                  upper: .init(parameter: "created[lt]", inclusive: false), kind: .integer)),
        Preset("slack", "Slack Web API: response_metadata.next_cursor sent as cursor",
               .cursor(parameter: "cursor", size: size("limit")),
               [.items: .detect, .cursor: body("/response_metadata/next_cursor")],
               // conversations.history: newest first; oldest and latest exclude the ts they name.
               split: RangeFilter(field: JSONPointer("/ts")!, lower: .init(parameter: "oldest", inclusive: false),
                                  upper: .init(parameter: "latest", inclusive: false), kind: .decimal)),
        Preset("shopify", "Shopify REST Admin: {\"orders\": [...]}, Link rel=\"next\" with page_info (filters on the first request only), ?limit=L",
               .next, [.items: .detect, .next: .link("next")],
               split: RangeFilter(field: JSONPointer("/created_at")!, lower: .init(parameter: "created_at_min", inclusive: true),
                                  upper: .init(parameter: "created_at_max", inclusive: true), kind: .time)),
        Preset("google", "Google APIs: nextPageToken sent as pageToken",
               .cursor(parameter: "pageToken", size: size("pageSize")),
               [.items: .detect, .cursor: body("/nextPageToken")]),
        Preset("zendesk", "Zendesk cursor pagination: meta.after_cursor sent as page[after], meta.has_more",
               .cursor(parameter: "page[after]", size: size("page[size]")),
               [.items: .detect, .cursor: body("/meta/after_cursor"), .hasMore: body("/meta/has_more")]),
        Preset("fastapi-page", "fastapi-pagination Page: {\"items\", \"total\", \"page\", \"size\", \"pages\"}",
               .pageNumber(.init(parameter: "page", first: 1, size: size("size"))),
               [.items: body("/items"), .total: body("/total"), .pageCount: body("/pages")]),
        Preset("fastapi-limit-offset", "fastapi-pagination LimitOffsetPage: {\"items\", \"total\", \"limit\", \"offset\"}",
               .offset(.init(parameter: "offset", first: 0, size: size("limit"))),
               [.items: body("/items"), .total: body("/total")]),
        Preset("jira", "Atlassian (Jira, Confluence): {\"values\", \"total\", \"isLast\"}, ?startAt=K&maxResults=M",
               .offset(.init(parameter: "startAt", first: 0, size: size("maxResults"))),
               [.items: body("/values"), .total: body("/total"), .isLast: body("/isLast")]),
        Preset("notion", "Notion: POST a query with start_cursor and page_size in the JSON body; {\"results\", \"next_cursor\", \"has_more\"}",
               .cursor(parameter: "body:/start_cursor", size: size("body:/page_size")),
               [.items: body("/results"), .cursor: body("/next_cursor"), .hasMore: body("/has_more")], readOnly: true),
        Preset("elasticsearch", "Elasticsearch / OpenSearch _search: hits.hits, the last hit's sort values sent as search_after in the body",
               .cursor(parameter: "body:/search_after", size: size("body:/size")),
               [.items: body("/hits/hits"), .cursor: .lastItem(JSONPointer("/sort")!)], readOnly: true),
        Preset("content-range", "PostgREST-style: a bare array, Content-Range: items 0-24/573, ?offset=O&limit=L",
               .offset(.init(parameter: "offset", first: 0, size: size("limit"))),
               [.items: body(""), .total: .header("Content-Range")]),
    ]

    /// The preset called `name`.
    /// - Throws: `.invalidArgument` naming the known presets.
    public static func named(_ name: String) throws(SheafError) -> Preset {
        guard let preset = all.first(where: { $0.name == name }) else {
            throw SheafError(.invalidArgument, "unknown preset \"\(name)\"; known presets: "
                             + all.map(\.name).joined(separator: ", "))
        }
        return preset
    }

    /// `description` with this preset's paging and signals (every signal it does not name but
    /// the identity, which a preset leaves as it was: none).
    public func applied(to description: ListDescription) -> ListDescription {
        var description = description
        description.paging = paging
        for signal in Signal.allCases where signal != .identity {
            description.signals[signal] = signals[signal] ?? (signal == .items ? .detect : .none)
        }
        description.split = split
        description.graphQL = nil // a preset is the list's whole shape
        if readOnly { description.readOnly = true }
        description.preset = name
        return description
    }

    private init(_ name: String, _ summary: String, _ paging: Paging, _ signals: [Signal: SignalSource], split: RangeFilter? = nil,
                 readOnly: Bool = false) {
        self.split = split
        self.readOnly = readOnly
        self.name = name
        self.summary = summary
        self.paging = paging
        self.signals = signals
    }

    private static func body(_ pointer: String) -> SignalSource { .body(JSONPointer(pointer)!) }
    private static func size(_ parameter: String) -> Paging.PageSize { .init(parameter: parameter, value: nil) }
}
