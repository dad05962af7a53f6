/// What a GraphQL answer's `errors` say (a 2xx answer can carry them): a rate limit to wait out
/// (GitHub's `RATE_LIMITED`, Shopify's `THROTTLED`), or errors that fail the page, named by the
/// first one's message and path.
struct GraphQLAnswer {
    /// The first error's message, cut to a line's length, with its path ("repository.issues").
    var first: String
    var count: Int
    var hasData: Bool
    var rateLimited: Bool
    /// Shopify's wait until the query's cost is available again (`extensions.cost`), in ms.
    var throttleWait: Int?

    /// The errors of `body`; nil when it has none (or is not JSON: the page reader says so).
    init?(_ body: [UInt8]) {
        // Most pages have none: a byte search, not a second scan of every page the reader scans.
        guard body.firstRange(of: Self.errorsKey) != nil else { return nil }
        var targets = [JSONScanner.Target(pointer: JSONPointer(tokens: ["errors"]), collectsElements: true),
                       JSONScanner.Target(pointer: JSONPointer(tokens: ["data"]), collectsElements: false),
                       JSONScanner.Target(pointer: JSONPointer(tokens: ["extensions", "cost"]), collectsElements: false)]
        let found: (errors: [JSONValue], data: Bool, cost: JSONValue?)? = body.withUnsafeBufferPointer { buffer in
            let scanner = JSONScanner(buffer)
            guard (try? scanner.scanDocument(&targets)) != nil, !targets[0].elements.isEmpty else { return nil }
            func value(_ range: Range<Int>) -> JSONValue? { try? JSONValue(parsing: Array(buffer[range])) }
            let data = targets[1].range.map { buffer[$0.lowerBound] != UInt8(ascii: "n") } ?? false
            return (targets[0].elements.compactMap(value), data, targets[2].range.flatMap(value))
        }
        guard let found else { return nil }
        count = found.errors.count
        hasData = found.data
        let firstError = found.errors.first ?? .null
        var text = firstError["message"]?.string ?? "an error without a message"
        if text.count > 300 { text = text.prefix(300) + "…" }
        if case .array(let path)? = firstError["path"] {
            text += " (at " + path.map { $0.string ?? $0.text }.joined(separator: ".") + ")"
        }
        first = text
        let codes = found.errors.flatMap { [$0["type"]?.string, $0["extensions"]?["code"]?.string] }
        rateLimited = codes.contains { $0 == "RATE_LIMITED" || $0 == "THROTTLED" }
        throttleWait = Self.throttleWait(found.cost)
    }

    private static let errorsKey = Array("\"errors\"".utf8)

    /// ceil((requested − available) / restoreRate) seconds, from Shopify's cost extension.
    private static func throttleWait(_ cost: JSONValue?) -> Int? {
        guard let cost, let requested = cost["requestedQueryCost"]?.double,
              let status = cost["throttleStatus"], let available = status["currentlyAvailable"]?.double,
              let rate = status["restoreRate"]?.double, rate > 0 else { return nil }
        let seconds = max(0, (requested - available) / rate)
        guard seconds.isFinite, seconds < 86_400 else { return nil }
        return Int((seconds * 1000).rounded(.up))
    }

    /// The failure of an answer with errors, as the page's.
    func error(url: String, redactor: Redactor) -> SheafError {
        let more = count > 1 ? " and \(count - 1) more" : ""
        let url = redactor.redact(url)
        return SheafError(.api, "\(url): the GraphQL answer has errors: \(redactor.redact(first))\(more)", url: url,
                          serverMessage: redactor.redact(first),
                          hint: hasData ? "the answer also has data; allow_partial reads it" : nil)
    }
}
