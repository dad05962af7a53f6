/// Finds how a list's pages are addressed when its first page promises more items (a total, a
/// page count, has-more) but shows no way to them: the usual page parameters are tried, one
/// request each, in order, and the first whose answer continues the list is the list's paging.
///
/// A pure state machine: it asks for URLs (`Step.fetch`) and is handed what came back; the run
/// does the fetching. Hand-written APIs and json-server answer this way: a bare array and an
/// `X-Total-Count`, and page two only for those who know to ask for `_page=2`.
struct PagingProbe: Sendable {
    /// One parameter to try, and the paging the list gets when its answer is accepted.
    struct Candidate: Sendable, Equatable {
        let parameter: String
        /// What it is set to: 2 for a page number, the items page one served for an offset.
        let value: Int
        let paging: Paging
        /// Page one's URL with the parameter added.
        let url: String

        /// How the refusal names it: "page=2", "offset=25".
        var text: String { "\(parameter)=\(value)" }
    }

    /// What the run does next.
    enum Step: Equatable {
        /// Ask for `url` as any page is asked for, and hand the answer to `answered`.
        case fetch(url: String)
        /// The candidate's answer continues the list: the list runs with this paging.
        case adopt(Paging)
        /// No candidate gave the next items: the list cannot be followed.
        case refuse(SheafError)
    }

    /// Page-number parameters, each asked for page 1 first: new items there mean the pages are
    /// numbered from 0 (Spring Data's `Page`, HAL), page one again means from 1, and page 2 is
    /// asked for next (a list numbered from 0 asked for page 2 first answers with its third page,
    /// and the second would never be read). Then offsets, asked at the items page one served.
    /// Checked in this order.
    static let pageParameters = ["page", "_page", "p"]
    static let offsetParameters = ["offset", "skip"]

    /// Every candidate, in the order they are tried.
    let candidates: [Candidate]
    private let pageOne: Page
    /// Candidates asked for so far; the last is the one whose answer is awaited.
    private(set) var tried: [Candidate] = []

    /// - Parameters:
    ///   - firstURL: the URL page one was asked for; a parameter already in its query is not
    ///     tried (the probe only adds one).
    ///   - pageOne: page one as read; with no items there is nothing an answer could continue,
    ///     so nothing is tried.
    init(firstURL: String, pageOne: Page) {
        self.pageOne = pageOne
        let served = pageOne.items.count
        let present = Set(URLText.queryPairs(firstURL).map(\.0))
        let numbered: [(String, Int, Paging)] = served == 0 ? [] :
            Self.pageParameters.flatMap { [($0, 1, .pageNumber(.init(parameter: $0, first: 0))),
                                           ($0, 2, .pageNumber(.init(parameter: $0, first: 1)))] }
            + Self.offsetParameters.map { ($0, served, .offset(.init(parameter: $0, first: 0))) }
        candidates = numbered.compactMap { parameter, value, paging in
            guard !present.contains(parameter),
                  let url = URLText.settingQuery(firstURL, parameter, to: String(value)) else { return nil }
            return Candidate(parameter: parameter, value: value, paging: paging, url: url)
        }
    }

    /// The first request, or the refusal when there is nothing to try. Called once.
    mutating func start() -> Step {
        next()
    }

    /// The last candidate asked for answered `answer` (read as page one was); nil when it failed
    /// or is not a page of the list's shape.
    mutating func answered(_ answer: Page?) -> Step {
        guard let candidate = tried.last else { return .refuse(refusal) }
        if let answer, Self.continues(answer, after: pageOne) { return .adopt(candidate.paging) }
        // Page 2 of a parameter is asked for only when its page 1 was page one again: the pages
        // are then numbered from 1 (an empty or failed page 1 says nothing of how).
        let provesOneBased = answer.map { Self.repeats($0, pageOne) } ?? false
        let askedPageOne = candidate.paging == .pageNumber(.init(parameter: candidate.parameter, first: 0))
        return next(skippingPageTwoOf: askedPageOne && !provesOneBased ? candidate.parameter : nil)
    }

    private mutating func next(skippingPageTwoOf skipped: String? = nil) -> Step {
        var position = consumed
        while position < candidates.count, let skipped, candidates[position].parameter == skipped {
            position += 1
        }
        guard position < candidates.count else {
            consumed = position
            return .refuse(refusal)
        }
        let candidate = candidates[position]
        consumed = position + 1
        tried.append(candidate)
        return .fetch(url: candidate.url)
    }

    /// Candidates gone past (asked for, or skipped).
    private var consumed = 0

    /// Whether `answer` holds page one's items again, all of them.
    static func repeats(_ answer: Page, _ pageOne: Page) -> Bool {
        guard answer.items.count == pageOne.items.count, !answer.items.isEmpty else { return false }
        let texts = Set(pageOne.items.map { pageOne.body[$0] })
        return answer.items.allSatisfy { texts.contains(answer.body[$0]) }
    }

    /// Whether `answer`, asked for as page two, continues the list `pageOne` starts: it has items
    /// and none of them is one of page one's (by identity when the list reads one, otherwise byte
    /// for byte), so a server that ignored the parameter and sent page one again is refused. An
    /// empty answer continues it only when page one's total says page one held every item.
    static func continues(_ answer: Page, after pageOne: Page) -> Bool {
        if answer.items.isEmpty {
            return pageOne.total.map { $0 <= pageOne.items.count } ?? false
        }
        let identities = Set(pageOne.identities.compactMap { $0 })
        let texts = Set(pageOne.items.map { pageOne.body[$0] })
        for (index, range) in answer.items.enumerated() {
            if index < answer.identities.count, let identity = answer.identities[index] {
                if identities.contains(identity) { return false }
            } else if texts.contains(answer.body[range]) {
                return false
            }
        }
        return true
    }

    /// What the list fails with when no candidate was accepted, naming those tried.
    var refusal: SheafError {
        let url = pageOne.url
        let tried = tried.isEmpty ? "" : "tried " + tried.map(\.text).joined(separator: ", ") + ": none gave the next items; "
        return SheafError(.undetected, "\(url): the first page promises more items but names no next page, and no page or offset "
                          + "parameter was recognised; \(tried)say how page k is addressed",
                          url: url, hint: "--paging page:NAME or --paging offset:NAME (sheaf_list_set_paging), or a --preset")
    }
}
