/// What a run delivered, read at any time from any thread: the prefix, the token that goes on
/// after it, the description as read, the sync state.
extension ListRun {
    /// The last snapshot delivered (through the one being delivered, inside a callback), its
    /// delta without items: the counts of the prefix delivered so far.
    package var lastDelivered: Snapshot? { state.withLock { $0.machine.delivered } }

    /// The ordered prefix delivered so far (through the snapshot being delivered, inside a
    /// callback), as one JSON array.
    public func prefixJSON() -> [UInt8] {
        Assembler.jsonArray(prefixPieces(through: nil))
    }

    /// The ordered prefix through `snapshot`, one of this run's (for a caller that takes
    /// snapshots from a `SnapshotChannel`: what it has taken, not what was queued).
    package func prefixJSON(through snapshot: Snapshot) -> [UInt8] {
        Assembler.jsonArray(prefixPieces(through: snapshot))
    }

    /// The elements of the ordered prefix through `snapshot` (nil: the one delivered so far), in
    /// the pieces the run keeps, not copied: the C layer writes them straight into its buffer.
    package func prefixPieces(through snapshot: Snapshot?) -> [ArraySlice<UInt8>] {
        state.withLock { $0.machine.assembler.prefixPieces(bytes: (snapshot ?? $0.machine.delivered)?.delta.prefixBytes ?? 0) }
    }

    /// The token that resumes the list after the prefix delivered so far: nil when the list
    /// ended there, or completed.
    public func resumeToken() -> ResumeToken? {
        resumeToken(through: lastDelivered)
    }

    /// The token that resumes the list after `snapshot`, one of this run's (for a puller or a
    /// pager: the last one it took), or at the start when it is nil.
    package func resumeToken(through snapshot: Snapshot?) -> ResumeToken? {
        let point = snapshot?.resumePoint ?? startPoint
        let (kept, resolution, outcome, end, origin, pageSize) = state.withLock { core in
            let machine = core.machine
            return (machine.facts.keptToken, machine.resolution, core.outcome, machine.assembledResume, machine.planner.origin,
                    machine.planner.resumedPageSize ?? machine.planner.servedPageSize)
        }
        // A token that could not be taken is given back as it came (`RunState.Facts.keptToken`).
        if let kept { return kept }
        // A completed list leaves nothing to resume after its last page; before it, it does
        // (snapshots a puller or a pager has not taken yet).
        guard var url = point.url, outcome != .complete || point != end else { return nil }
        let read = resolution?.description ?? description
        let paging = read.paging.starting(at: origin ?? read.paging.first ?? 0)
        url = client.redactor.removingSecretParameters(of: url, keeping: paging.parameter)
        var resumed = point
        resumed.url = url
        // Once the first page is read, what was not detected is absent: never detected again.
        return ResumeToken(fingerprint: fingerprint, paging: paging, signals: read.signals, resolved: resolution != nil,
                           pageSize: pageSize, point: resumed)
    }

    /// What page one decided, for a plan of partitions: the description read, the walk chosen,
    /// the page size served and the server's total.
    func planFacts() -> (description: ListDescription, mode: PagePlanner.Mode, servedPageSize: Int, expectedTotal: Int?,
                         split: RangeSplitter?) {
        state.withLock { core in
            let planner = core.machine.planner
            return (core.machine.resolution?.description ?? description, planner.mode, planner.servedPageSize,
                    planner.expectedTotal, planner.split)
        }
    }

    /// The description as the run uses it (detected parts resolved once the first page is in),
    /// with the plan chosen, as a JSON object; for a list that syncs, with the state it got to
    /// through the snapshots delivered ("sync_state").
    public func descriptionJSON() -> [UInt8] {
        state.withLock { $0.machine.json(description, url: url, syncThrough: $0.machine.delivered) }
    }

    /// As `descriptionJSON()`, with the sync state through `snapshot`, one of this run's (for a
    /// puller: the last one it took; nil: none).
    package func descriptionJSON(syncThrough snapshot: Snapshot?) -> [UInt8] {
        state.withLock { $0.machine.json(description, url: url, syncThrough: snapshot) }
    }

    /// What a list that syncs got to through the snapshots delivered: the state to store for
    /// the next run (nil when the description has neither a bound nor a since filter).
    public var syncState: SyncState? { syncState(through: lastDelivered) }

    /// What a list that syncs got to through `snapshot`, one of this run's (nil: none).
    package func syncState(through snapshot: Snapshot?) -> SyncState? {
        description.syncState(greatest: snapshot?.delta.greatest)
    }
}
