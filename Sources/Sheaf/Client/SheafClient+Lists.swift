/// What a client runs: lists, groups and pagers.
extension SheafClient {
    /// Creates a run of `description`; call `start()` on it.
    /// - Parameters:
    ///   - keepsItems: keep the whole prefix for `ListRun.prefixJSON()` (off for pure streaming).
    ///   - onSnapshot: called once per snapshot on the run's own serial queue; return false to stop.
    public func makeList(_ description: ListDescription, keepsItems: Bool = true,
                         onSnapshot: (@Sendable (Snapshot) -> Bool)? = nil) throws(SheafError) -> ListRun {
        try ListRun(client: self, description: description, keepsItems: keepsItems, consumer: onSnapshot.map { .callback($0) } ?? .nobody)
    }

    /// A group of lists run as one job (`ListGroup`): add lists (`add`, `addEach`), then start it.
    public func makeGroup(_ options: ListGroup.Options = ListGroup.Options()) -> ListGroup {
        ListGroup(client: self, options: options)
    }

    /// A list loaded page by page as the caller asks (`ListPager`), `lookAhead` pages fetched
    /// ahead of the ones asked for. Nothing is fetched before the first `next`.
    public func makePager(_ description: ListDescription, keepsItems: Bool = true, lookAhead: Int = 0) throws(SheafError) -> ListPager {
        try ListPager(client: self, description: description, keepsItems: keepsItems, lookAhead: lookAhead)
    }

    /// A run whose snapshots go into `channel` (`ListRun.feeding`).
    package func makeList<Element>(_ description: ListDescription, keepsItems: Bool, into channel: SnapshotChannel<Element>,
                                   _ prepare: @escaping @Sendable (Snapshot) -> (element: Element?, goOn: Bool))
        throws(SheafError) -> ListRun {
        try ListRun.feeding(channel, client: self, description: description, keepsItems: keepsItems, prepare)
    }

    /// Runs `description` to its end and returns every item as one JSON array. Blocks.
    /// - Returns: the items and the outcome; the items are those delivered even on failure.
    public func fetchAll(_ description: ListDescription) throws(SheafError) -> (json: [UInt8], outcome: ListOutcome) {
        let run = try makeList(description)
        try run.start()
        let outcome = try run.wait()
        return (run.prefixJSON(), outcome)
    }
}
