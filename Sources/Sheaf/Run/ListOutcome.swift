/// How a list ended: where it should (complete, or where its caller asked), or failed. The
/// reason is data, never an error caught and turned back into a success.
public enum ListOutcome: Sendable, Equatable {
    /// It ended without failing, for this reason.
    case finished(StopReason)
    /// It failed, was stopped or was cancelled; the items delivered before stay delivered.
    case failed(SheafError)

    /// Every page arrived and the items agree with the server's total (when it gave one).
    public static let complete = ListOutcome.finished(.complete)

    /// Why a list that ended without failing stopped; nil for a failure.
    public var stopReason: StopReason? {
        if case .finished(let reason) = self { return reason }
        return nil
    }

    /// The error of a failed list; nil for every other outcome.
    public var error: SheafError? {
        if case .failed(let error) = self { return error }
        return nil
    }
}

/// One snapshot: what the ordered prefix gained, and what the list expects in all.
public struct Snapshot: Sendable {
    public var delta: SnapshotDelta
    /// The server's total, when known.
    public var expectedItems: Int?
    /// The pages the plan expects, when known.
    public var expectedPages: Int?
    /// Where the list goes on after this snapshot.
    var resumePoint: ResumePoint

    /// The snapshot without its delta's items: what is kept of it to count and to resume.
    package var counts: Snapshot {
        var counts = self
        counts.delta.json = []
        counts.delta.itemEnds = []
        return counts
    }
}

/// Who takes a run's snapshots, which decides when a snapshot stops holding the fetching back
/// (the one rule: while the snapshots queued and not yet taken hold a window of pages, no new
/// request starts).
package enum SnapshotConsumer: Sendable {
    /// Nobody: the prefix is read once the run has ended (fetch-all); snapshots carry no items.
    case nobody
    /// Code called on the run's delivery queue, in order: a snapshot is taken when it is called.
    /// It returns false to stop the run.
    case callback(@Sendable (Snapshot) -> Bool)
    /// A channel, fed on the run's delivery queue: a snapshot is taken when the channel's
    /// consumer takes it (`ListRun.snapshotTaken`). The feed returns false to stop the run.
    case channel(feed: @Sendable (Snapshot) -> Bool)
}
