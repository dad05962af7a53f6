// Plans of partitions: page one read once, and the plan it allows (`Partition`).

extension Partition {
    /// Why a list read as `paging` in a plan `mode` (the planner's after page one) cannot be
    /// split; nil when it can.
    static func whyNotSplit(_ paging: Paging, mode: PagePlanner.Mode) -> String? {
        switch paging {
        case .single: return "the list is one response"
        case .next, .cursor, .detect:
            if mode == .pieces { return nil }
            return "the pages are walked by next link or cursor: a page cannot be reached without the one before it"
                + " (a range filter would split it: --split, a description's split)"
        case .pageNumber, .offset:
            switch mode {
            case .parallel: return nil
            case .speculative:
                return "no count is known from page one (no total, page count or last link): the pages are read ahead of an end not known"
            case .sequential:
                return "the pages after page one are walked by next link: they cannot be addressed"
            case .pieces:
                return nil
            case .firstPage:
                return nil // one page, or none: the plan says so
            }
        }
    }
}

extension SheafClient {
    /// Splits the list `description` describes into up to `count` partitions, from its page one
    /// (read here, once; blocking): see `Partition`. Page one's items are not carried: partition 0
    /// fetches page one again.
    /// - Throws: `.invalidArgument` for a count below 1, or a description with a resume token or
    ///   a partition of its own; `.reentrant` from inside a Sheaf callback; page one's failure.
    public func partitions(of description: ListDescription, count: Int) throws(SheafError) -> [Partition] {
        try partitions(of: description, count: count, atOnce: count)
    }

    /// As `partitions(of:count:)`, for partitions of which at most `atOnce` run at the same time
    /// (an engine's task slots): the window is shared among those, not among all of them, so
    /// that eight partitions read by two workers at a time send as much at once as one process
    /// would, not a quarter of it. An `atOnce` of `count` or more is `partitions(of:count:)`.
    /// - Throws: as `partitions(of:count:)`, and `.invalidArgument` for an `atOnce` below 1.
    public func partitions(of description: ListDescription, count: Int, atOnce: Int) throws(SheafError) -> [Partition] {
        guard count >= 1 else { throw SheafError(.invalidArgument, "the number of partitions must be 1 or more, not \(count)") }
        guard atOnce >= 1 else {
            throw SheafError(.invalidArgument, "the partitions that run at once must be 1 or more, not \(atOnce)")
        }
        guard !CallbackContext.isInsideCallback else { throw SheafError.blockingCallInsideCallback }
        guard description.resume == nil else { throw SheafError(.invalidArgument, "a list resumed from a token is not split; split the list itself") }
        guard description.partition == nil else { throw SheafError(.invalidArgument, "a partition is not split again") }
        var planning = description
        planning.maxPages = 1
        planning.maxItems = nil
        let run = try makeList(planning, keepsItems: false)
        try run.start()
        let outcome = try run.wait()
        if let error = outcome.error { throw error }
        let facts = run.planFacts()
        var read = description
        read.paging = facts.description.paging
        read.signals = facts.description.signals
        read.preset = facts.description.preset
        for signal in Signal.allCases where read.signals[signal] == nil { read.signals[signal] = SignalSource.none }
        if read.paging == .detect { read.paging = .single }
        let first = try firstURL(of: read)
        let url = redactor.removingSecretParameters(of: first, keeping: read.paging.parameter)
        let pageCount: Int? = switch facts.mode {
        case .parallel(let pages): pages
        case .firstPage: facts.servedPageSize > 0 ? 1 : 0
        default: nil
        }
        if let ranges = facts.split?.partitionURLs(count: count, of: url) {
            // A cursor list split by its range filter: each partition a range of it, run as a split list.
            return ranges.enumerated().map { index, rangeURL in
                var partition = Partition(index: index, count: ranges.count, url: rangeURL, paging: read.paging, signals: read.signals,
                                          preset: read.preset, firstPage: 0, pages: 1, openEnded: true, pageSize: facts.servedPageSize,
                                          itemsExpected: nil, why: nil)
                partition.split = facts.description.split
                partition.descriptionText = run.descriptionJSON()
                partition.window = max(1, configuration.maxWindow / min(ranges.count, atOnce))
                return partition
            }
        }
        return Partition.plan(count: count, url: url, paging: read.paging, signals: read.signals, preset: read.preset,
                              descriptionText: run.descriptionJSON(), pageCount: pageCount, pageSize: facts.servedPageSize, total: facts.expectedTotal,
                              why: Partition.whyNotSplit(read.paging, mode: facts.mode), window: configuration.maxWindow,
                              atOnce: atOnce)
    }
}
