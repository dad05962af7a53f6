/// One part of a list split so that several processes can read it (`SheafClient.partitions`):
/// a range of its pages, self-contained and serialisable, that any process runs on a client of
/// its own (`ListDescription.partition`), getting exactly that range's items, in order. The
/// partitions of one plan cover the list exactly once.
///
/// Its text is a JSON object (`json`): the version (`sheaf_partition`: 1), its place in the plan
/// (`index`, `count`), the list's first URL (`url`, without any credential or secret query value:
/// the client that runs it sends its own), the description as the planning run read it (detected
/// parts resolved: nothing is detected again), the range (`first_page`, counted from 0, and
/// `pages`; the last partition is `open_ended`: it goes on to the list's end, taking the pages
/// added since the plan was made), the page size page one was served (`page_size`), the items the
/// range expects (`items_expected`, null when unknown), the most requests it has in flight
/// (`window`: the planning client's maximum window shared out between the partitions that run
/// at once, all of them unless the plan was told fewer, so that together they never send more
/// at once than one process would) and, for a list that
/// could not be split, `why` (null otherwise).
public struct Partition: Sendable, Equatable, CustomStringConvertible {
    /// The version of the JSON form this library writes and reads.
    public static let version = 1

    public var index: Int
    public var count: Int
    /// The list's first URL, secret query values left out.
    public var url: String
    /// How the pages are reached and read, as the planning run read them.
    var paging: Paging
    var signals: [Signal: SignalSource]
    var preset: String?
    /// A cursor list's range filter: a partition of a split list is a range of it, in its URL.
    var split: RangeFilter?
    /// The description's JSON as the planning run printed it (detected parts marked, the plan
    /// named), or as the partition's text held it; nil: printed from `paging` and `signals`.
    var descriptionText: [UInt8]?
    /// The first page of the range, counted from the list's page one (0).
    public var firstPage: Int
    /// The pages of the range as planned (the last partition may take more: see `openEnded`).
    public var pages: Int
    /// Whether the range goes on to the list's end, whatever it holds then.
    public var openEnded: Bool
    /// The page size page one was served (0: unknown).
    public var pageSize: Int
    /// The items the range expects, when known.
    public var itemsExpected: Int?
    /// Why the list was not split (it is then one partition covering all of it); nil when it was.
    public var why: String?
    /// The most requests the partition's run has in flight (its share of the plan's window);
    /// nil: the running client's window alone.
    public var window: Int?
    /// Whether the planning run detected the paging (its description's `/paging/detected`): a
    /// run of the partition then ends as a detected list does, unconfirmed after one full page
    /// that names no next page (`ListRun.endUnconfirmed`), never a plain complete.
    var pagingDetected: Bool {
        guard let descriptionText, let value = try? JSONValue(parsing: descriptionText),
              case .object(let members) = value, case .object(let paging)? = members.first(where: { $0.name == "paging" })?.value
        else { return false }
        return paging.contains { $0.name == "detected" && $0.value == .bool(true) }
    }

    init(index: Int, count: Int, url: String, paging: Paging, signals: [Signal: SignalSource], preset: String?,
         firstPage: Int, pages: Int, openEnded: Bool, pageSize: Int, itemsExpected: Int?, why: String?) {
        self.index = index
        self.count = count
        self.url = url
        self.paging = paging
        self.signals = signals
        self.preset = preset
        self.firstPage = firstPage
        self.pages = pages
        self.openEnded = openEnded
        self.pageSize = pageSize
        self.itemsExpected = itemsExpected
        self.why = why
    }

    /// The description the range is read with: `paging`, `signals` and `preset` on `path`.
    package func description(path: String) -> ListDescription {
        var description = ListDescription(path: path)
        description.paging = paging
        description.signals = signals
        description.preset = preset
        description.split = split
        return description
    }

    /// What a run of this partition reads for `list` (the list set to it): the partition's URL and
    /// description, with the list's own budgets, deadline and resume token.
    func description(runFor list: ListDescription) -> ListDescription {
        var read = description(path: url)
        read.maxItems = list.maxItems
        read.maxPages = list.maxPages
        read.maxRequests = list.maxRequests
        read.deadlineMilliseconds = list.deadlineMilliseconds
        read.resume = list.resume
        read.until = list.until
        // A list behind a POST: each partition asks with its method and body.
        read.request = list.request
        read.readOnly = read.readOnly || list.readOnly
        if let graphQL = list.graphQL { read.graphQL = graphQL }
        read.partition = self
        return read
    }

    /// The step between the addressing values of two pages: 1 for page numbers, the page size
    /// for offsets; nil when pages are not addressed.
    var step: Int? {
        switch paging {
        case .pageNumber: 1
        case .offset: pageSize > 0 ? pageSize : nil
        default: nil
        }
    }

    /// The page number or offset of page `index` of the list (from 0); nil when pages are not
    /// addressed.
    func position(ofPage index: Int) -> Int? {
        guard let first = paging.first, let step else { return nil }
        let (offset, overflow1) = index.multipliedReportingOverflow(by: step)
        let (value, overflow2) = first.addingReportingOverflow(offset)
        return overflow1 || overflow2 ? nil : value
    }

    /// Where a run of the partition starts (`range(resumedAt:)`).
    struct RunRange {
        /// The page number or offset the run addresses its first page by; nil: the list's own
        /// first URL (the range starts at page one, or the run resumes from a token's URL).
        var firstPosition: Int?
        /// The items of the list before that page (with `firstPosition`).
        var itemsBefore: Int
        /// The range's pages from there: no more are asked for ahead of the first; for a range
        /// that is not open-ended, where the run ends complete.
        var pages: Int
    }

    /// Where a run of the partition starts: at its range's first page, or at `resumedAt` (a
    /// resume token's page number or offset) inside the range. Nil when its pages are not
    /// addressed (a partition that is the whole list).
    /// - Throws: `.invalidArgument` for a token's page outside the range, or a range whose items
    ///   before it are out of range.
    func range(resumedAt position: Int?) throws(SheafError) -> RunRange? {
        guard let step, let first = paging.first else { return nil }
        guard let position else {
            let (itemsBefore, overflow) = firstPage.multipliedReportingOverflow(by: pageSize)
            guard !overflow, itemsBefore <= ResumeToken.largestNumber else {
                throw SheafError(.invalidArgument, "the partition's range is out of range (first page \(firstPage), "
                                 + "\(pageSize) items a page); it was not made by Sheaf")
            }
            return RunRange(firstPosition: firstPage > 0 ? self.position(ofPage: firstPage) : nil, itemsBefore: itemsBefore,
                            pages: pages)
        }
        let distance = position - first
        guard distance >= 0, distance % step == 0, distance / step >= firstPage,
              openEnded || distance / step < firstPage + pages else {
            throw SheafError(.invalidArgument, "the resume token's page is outside the partition's range "
                             + "(pages \(firstPage + 1) to \(firstPage + pages)): a token goes on only inside the partition that made it")
        }
        return RunRange(firstPosition: nil, itemsBefore: 0, pages: firstPage + pages - distance / step)
    }

    /// The partition's JSON text (one line).
    public var description: String { String(decoding: json, as: UTF8.self) }

    public var json: [UInt8] {
        var out = "{\"sheaf_partition\":\(Self.version),\"index\":\(index),\"count\":\(count),\"url\":\(JSONText.quote(url))"
        out += ",\"first_page\":\(firstPage),\"pages\":\(pages),\"open_ended\":\(openEnded),\"page_size\":\(pageSize)"
        out += ",\"items_expected\":\(itemsExpected.map(String.init) ?? "null"),\"window\":\(window.map(String.init) ?? "null")"
        out += ",\"why\":\(JSONText.quote(why)),\"description\":"
        return Array(out.utf8) + (descriptionText ?? description(path: "").json(resolution: nil, plan: nil)) + Array("}".utf8)
    }

    // MARK: Planning

    /// The plan of up to `count` partitions of a list whose page one decided `paging` and
    /// `signals`: with `pageCount` known (and pages addressed), contiguous ranges of as even a
    /// size as can be (the first ones a page longer), never more partitions than pages, the last
    /// one open-ended; otherwise one partition covering the list, saying `why`. Each gets an
    /// even share of `window` (at least 1) among the partitions that run at once: all of them,
    /// or `atOnce` when fewer.
    static func plan(count: Int, url: String, paging: Paging, signals: [Signal: SignalSource], preset: String?,
                     descriptionText: [UInt8]? = nil, pageCount: Int?, pageSize: Int, total: Int?, why: String?,
                     window: Int, atOnce: Int = .max) -> [Partition] {
        guard why == nil, let pageCount, pageCount > 1, paging.isNumbered, pageSize > 0 else {
            let reason = why ?? pageCount.map { $0 == 0 ? "the list is empty" : $0 == 1 ? "the list has one page" : nil } ?? nil
            var one = Partition(index: 0, count: 1, url: url, paging: paging, signals: signals, preset: preset, firstPage: 0,
                                pages: pageCount ?? 1, openEnded: true, pageSize: pageSize, itemsExpected: total,
                                why: reason ?? "no page count is known from page one")
            one.descriptionText = descriptionText
            one.window = window
            return [one]
        }
        let parts = min(count, pageCount)
        let base = pageCount / parts, longer = pageCount % parts
        var partitions: [Partition] = []
        var first = 0
        for index in 0..<parts {
            let pages = base + (index < longer ? 1 : 0)
            let isLast = index == parts - 1
            let before = first * pageSize
            var expected: Int?
            if let total {
                expected = isLast ? max(0, total - before) : max(0, min(pages * pageSize, total - before))
            } else if !isLast {
                expected = pages * pageSize
            }
            var partition = Partition(index: index, count: parts, url: url, paging: paging, signals: signals, preset: preset,
                                      firstPage: first, pages: pages, openEnded: isLast, pageSize: pageSize,
                                      itemsExpected: expected, why: nil)
            partition.descriptionText = descriptionText
            partition.window = max(1, window / (atOnce >= 1 ? min(parts, atOnce) : parts))
            partitions.append(partition)
            first += pages
        }
        return partitions
    }

    // MARK: Reading

    static let fields = ["sheaf_partition", "index", "count", "url", "first_page", "pages", "open_ended", "page_size",
                         "items_expected", "window", "why", "description"]

    /// Reads a partition's JSON text.
    /// - Throws: `.invalidArgument` naming the field refused (as a JSON pointer) and what it allows;
    ///   a version other than this library's is refused at `/sheaf_partition`.
    public init(json: [UInt8]) throws(SheafError) {
        func refuse(_ field: String, _ message: String) -> SheafError {
            SheafError(.invalidArgument, "the partition's \(field): \(message)")
        }
        let value: JSONValue
        do throws(JSONSyntaxError) {
            value = try JSONValue(parsing: json)
        } catch {
            throw SheafError(.invalidArgument, "the partition is not JSON: \(error)")
        }
        guard case .object(let members) = value else {
            throw SheafError(.invalidArgument, "a partition is a JSON object (sheaf_list_partitions prints them), not \(value.kindName)")
        }
        var table: [String: JSONValue] = [:]
        for member in members {
            guard Self.fields.contains(member.name) else {
                throw refuse("/" + JSONPointer.escaping(member.name), "unknown field; a partition has \(Self.fields.joined(separator: ", "))")
            }
            guard table.updateValue(member.value, forKey: member.name) == nil else { throw refuse("/\(member.name)", "given twice") }
        }
        func whole(_ name: String, nullable: Bool = false) throws(SheafError) -> Int? {
            switch table[name] {
            case nil:
                throw refuse("/\(name)", "missing")
            case .null? where nullable:
                return nil
            case .number(let text)?:
                guard let number = Int(text), number >= 0, number <= ResumeToken.largestNumber else {
                    throw refuse("/\(name)", "must be a whole number from 0 to 2^53, not \(text.prefix(40))")
                }
                return number
            case let other?:
                throw refuse("/\(name)", "must be a whole number\(nullable ? " or null" : ""), not \(other.kindName)")
            }
        }
        guard case .number(let version)? = table["sheaf_partition"] else {
            throw refuse("/sheaf_partition", table["sheaf_partition"] == nil ? "missing (is this a partition?)" : "must be a number")
        }
        guard version == String(Self.version) else {
            throw refuse("/sheaf_partition", "version \(version.prefix(20)) is not this library's (\(Self.version)); make the plan again with this version")
        }
        index = try whole("index")!
        count = try whole("count")!
        guard count >= 1 else { throw refuse("/count", "must be 1 or more") }
        guard index < count else { throw refuse("/index", "must be below the count (\(count)), not \(index)") }
        guard case .string(let url)? = table["url"] else { throw refuse("/url", table["url"] == nil ? "missing" : "must be a string") }
        guard Origin(url) != nil else { throw refuse("/url", "must be an absolute http or https URL") }
        guard !URLText.hasUserInfo(url) else { throw refuse("/url", "must not hold user:password@ (a partition carries no credential)") }
        self.url = url
        firstPage = try whole("first_page")!
        pages = try whole("pages")!
        guard case .bool(let openEnded)? = table["open_ended"] else {
            throw refuse("/open_ended", table["open_ended"] == nil ? "missing" : "must be true or false")
        }
        self.openEnded = openEnded
        pageSize = try whole("page_size")!
        itemsExpected = try whole("items_expected", nullable: true)
        if table["window"] != nil {
            window = try whole("window", nullable: true)
            guard window.map({ (1...64).contains($0) }) != false else { throw refuse("/window", "must be from 1 to 64, or null") }
        }
        switch table["why"] {
        case nil: throw refuse("/why", "missing")
        case .null?: why = nil
        case .string(let text)?: why = text
        case let other?: throw refuse("/why", "must be a string or null, not \(other.kindName)")
        }
        guard let described = table["description"] else { throw refuse("/description", "missing") }
        let read: ListDescription
        do throws(DescriptionRefusal) {
            read = try DescriptionReading.read(described, onto: ListDescription(path: ""))
        } catch {
            throw refuse("/description" + error.field, error.message)
        }
        paging = read.paging
        signals = read.signals
        preset = read.preset
        split = read.split
        descriptionText = Self.text(of: described)
        if paging == .detect || Signal.allCases.contains(where: { read.source(of: $0) == .detect }) {
            throw refuse("/description", "must be resolved (as a plan prints it): nothing is detected again in a partition")
        }
        if !openEnded || firstPage > 0 {
            guard paging.isNumbered else {
                throw refuse("/first_page", "a range of pages needs page numbers or offsets; the paging is \(paging.kindName)")
            }
            guard step != nil else { throw refuse("/page_size", "an offset range needs the page size served (1 or more)") }
            guard position(ofPage: firstPage + pages) != nil, firstPage + pages <= ResumeToken.largestNumber else {
                throw refuse("/pages", "the range is out of range")
            }
            let (itemsBefore, overflow) = firstPage.multipliedReportingOverflow(by: pageSize)
            guard !overflow, itemsBefore <= ResumeToken.largestNumber else {
                throw refuse("/first_page", "out of range: the items before the range (first_page × page_size) are at most 2^53")
            }
        }
    }

    /// `value` as compact JSON text (numbers as they were written).
    static func text(of value: JSONValue) -> [UInt8] {
        switch value {
        case .null: return Array("null".utf8)
        case .bool(let flag): return Array((flag ? "true" : "false").utf8)
        case .number(let text): return Array(text.utf8)
        case .string(let text): return Array(JSONText.quote(text).utf8)
        case .array(let elements):
            return Array("[".utf8) + Array(elements.map(text(of:)).joined(separator: Array(",".utf8))) + Array("]".utf8)
        case .object(let members):
            let parts = members.map { Array(JSONText.quote($0.name).utf8) + Array(":".utf8) + text(of: $0.value) }
            return Array("{".utf8) + Array(parts.joined(separator: Array(",".utf8))) + Array("}".utf8)
        }
    }

    public init(_ text: String) throws(SheafError) {
        try self.init(json: Array(text.utf8))
    }

    public static func == (lhs: Partition, rhs: Partition) -> Bool {
        lhs.json == rhs.json
    }
}
