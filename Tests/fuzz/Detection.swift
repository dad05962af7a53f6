// Fuzz target "detection" (Entry.swift runs it): the Link header parser, detection, page reading and the end-of-list check,
// fed with hostile headers and bodies. Compiled together with the core's sources by run.sh, so
// it reaches the internal types directly. Input: the first line is a Link header value, the
// second a header line "Name: value", the rest the body.

public func sheafFuzzDetection(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let lines = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 2, omittingEmptySubsequences: false)
    let link = String(decoding: lines.first ?? [], as: UTF8.self)
    var headers = [HTTPHeader(name: "Link", value: link)]
    if lines.count > 1, let colon = lines[1].firstIndex(of: UInt8(ascii: ":")) {
        headers.append(HTTPHeader(name: String(decoding: lines[1][..<colon], as: UTF8.self),
                                  value: String(decoding: lines[1][(colon + 1)...], as: UTF8.self)))
    }
    let body = lines.count > 2 ? Array(lines[2]) : []
    let url = "https://api.example.com/v1/things?page=1&per_page=10"
    _ = LinkHeader(headers).target("next", resolvedAgainst: url)
    let response = HTTPResponse(status: 200, headers: headers, body: body)
    guard let resolution = try? Detector.resolve(ListDescription(path: "/v1/things"), response, url: url) else { return 0 }
    guard let page = try? PageReader(resolution.description).read(response, from: url) else { return 0 }
    _ = Detector.unfollowed(page, resolution.description, itemCount: page.items.count)
    // The planner fed with whatever the page claims (totals, page counts, last positions).
    var planner = PagePlanner(firstURL: url, paging: resolution.description.paging == .detect ? .next : resolution.description.paging,
                              window: 8, maxPages: 10_000)
    _ = planner.start()
    _ = planner.pageArrived(0, page)
    return 0
}
