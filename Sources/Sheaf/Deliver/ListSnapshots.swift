#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a list that failed had delivered: the error, with every field of `SheafError` readable on
/// it (`failure.httpStatus`, `failure.message`...), and the items decoded before it.
@dynamicMemberLookup
public struct ListFailure<Item: Sendable>: Error, Sendable, CustomStringConvertible {
    public var error: SheafError
    /// The items delivered before the failure, in order.
    public var items: [Item]

    public init(error: SheafError, items: [Item]) {
        self.error = error
        self.items = items
    }

    public subscript<Value>(dynamicMember keyPath: KeyPath<SheafError, Value>) -> Value {
        error[keyPath: keyPath]
    }

    public var description: String { error.message }
}

/// One snapshot of a list whose items are decoded: the items it added, and the counts of the
/// ordered prefix so far.
public struct ListSnapshot<Item: Sendable>: Sendable {
    /// The items this snapshot added, in order.
    public let items: [Item]
    /// Items in the prefix so far (after de-duplication), and pages.
    public let itemCount: Int
    public let pageCount: Int
    /// The server's total, and the pages the plan expects, when known.
    public let expectedItems: Int?
    public let expectedPages: Int?
    private let prefixItems: PrefixItems<Item>?
    private let run: ListRun
    private let snapshot: Snapshot

    init(items: [Item], snapshot: Snapshot, prefix: PrefixItems<Item>?, run: ListRun) {
        self.items = items
        itemCount = snapshot.delta.totalItems
        pageCount = snapshot.delta.pages
        expectedItems = snapshot.expectedItems
        expectedPages = snapshot.expectedPages
        prefixItems = prefix
        self.run = run
        self.snapshot = snapshot.counts
    }

    /// Every item of the prefix through this snapshot (copied out when asked for).
    public var prefix: [Item] { prefixItems?.first(itemCount) ?? items }

    /// The token that goes on after this snapshot (`ListDescription.resume`); nil when the list
    /// completed with it.
    public var resumeToken: ResumeToken? { run.resumeToken(through: snapshot) }
}

/// The decoded items of a list's prefix, grown by the run's delivery thread and read by the
/// snapshots (each up to its own count).
final class PrefixItems<Item: Sendable>: Sendable {
    private let items = Locked<[Item]>([])

    func append(_ more: [Item]) { items.withLock { $0 += more } }

    func first(_ count: Int) -> [Item] { items.withLock { Array($0.prefix(count)) } }
}

/// The snapshots of one list as an `AsyncSequence`, their new items decoded (off the caller's
/// executor, on the run's own thread, while the next pages are fetched).
///
/// The list starts with the first `next()`. A slow consumer holds the fetching back (at most a
/// window's worth of pages waits). Cancelling the task, or leaving the loop, cancels the list:
/// what is in flight is abandoned and nothing is delivered afterwards. The sequence ends (nil)
/// when the list completes or stops where its description's budgets say; a failure is thrown (the
/// items before it were yielded), as is an item that does not decode (`.decoding`, naming its
/// index).
public struct ListSnapshots<Item: Decodable & Sendable>: AsyncSequence, Sendable {
    public typealias Element = ListSnapshot<Item>
    public typealias Failure = SheafError

    let client: SheafClient
    let description: ListDescription
    let decoder: ItemDecoder<Item>
    let keepsPrefix: Bool

    public func makeAsyncIterator() -> Iterator {
        Iterator(driver: SnapshotDriver(client: client, description: description, decoder: decoder, keepsPrefix: keepsPrefix))
    }

    public struct Iterator: AsyncIteratorProtocol {
        let driver: SnapshotDriver<Item>

        public mutating func next() async throws(SheafError) -> ListSnapshot<Item>? {
            try await driver.next()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(SheafError) -> ListSnapshot<Item>? {
            try await driver.next()
        }

        /// Why the list ended once `next()` returned nil: `.complete`, or the description's item
        /// limit or budget (none of them a failure); nil before, and after a failure.
        public var stopReason: StopReason? { driver.stopReason }
    }
}

/// Runs one list for an iterator of `ListSnapshots`: starts it, decodes its snapshots as they
/// come (on the run's delivery thread), and hands them over through the run's `SnapshotChannel`
/// one `next()` at a time; cancels the list when the iterator goes.
final class SnapshotDriver<Item: Decodable & Sendable>: Sendable {
    private enum Delivery: Sendable {
        case snapshot(ListSnapshot<Item>)
        /// An item that did not decode, and the items of its snapshot before it.
        case failure(SheafError, before: [Item])
    }

    private struct State {
        var run: ListRun?
        /// The sequence said its last word (nil, or an error): every later `next()` is nil.
        var over = false
        /// When an item did not decode: the items of its snapshot before it (never yielded).
        var decodedBeforeFailure: [Item] = []
    }

    private let client: SheafClient
    private let description: ListDescription
    private let decoder: ItemDecoder<Item>
    private let prefix: PrefixItems<Item>?
    private let state = Locked(State())
    private let channel = SnapshotChannel<Delivery>()

    init(client: SheafClient, description: ListDescription, decoder: ItemDecoder<Item>, keepsPrefix: Bool) {
        self.client = client
        self.description = description
        self.decoder = decoder
        prefix = keepsPrefix ? PrefixItems() : nil
    }

    deinit {
        // The iterator is gone (a loop left early, a task that ended): so is the list.
        state.withLock { $0.run }?.cancel()
    }

    /// Why the list ended, once the sequence has ended without a failure.
    var stopReason: StopReason? {
        let (run, over) = state.withLock { ($0.run, $0.over) }
        return over ? run?.outcome?.stopReason : nil
    }

    /// After an item failed to decode: the items of its snapshot before it, which the sequence
    /// did not yield (`fetchAll` adds them to its failure's items).
    var decodedBeforeFailure: [Item] { state.withLock { $0.decodedBeforeFailure } }

    func next() async throws(SheafError) -> ListSnapshot<Item>? {
        let run = try startedRun()
        if state.withLock({ $0.over }) { return nil }
        if Task.isCancelled { return try cancelled(run) }
        let next = await withTaskCancellationHandler {
            await channel.next()
        } onCancel: {
            run.cancel() // the run finishes, which ends the channel's wait
        }
        if Task.isCancelled { return try cancelled(run) }
        switch next {
        case .snapshot(.snapshot(let snapshot)):
            return snapshot
        case .snapshot(.failure(let error, let before)):
            state.withLock {
                $0.decodedBeforeFailure = before
                $0.over = true
            }
            run.cancel()
            throw error
        case .end, .pending:
            guard !endSequence(), case .failed(let error)? = run.outcome else { return nil }
            throw error
        }
    }

    /// Nothing is handed out after a cancellation, not even what was ready.
    private func cancelled(_ run: ListRun) throws(SheafError) -> ListSnapshot<Item>? {
        run.cancel()
        if endSequence() { return nil }
        throw SheafError(.cancelled, "the task was cancelled")
    }

    /// Marks the sequence as over; returns whether it already was.
    @discardableResult
    private func endSequence() -> Bool {
        state.withLock { state in
            defer { state.over = true }
            return state.over
        }
    }

    /// The run, started at the first `next()`, its snapshots pushed into the channel.
    private func startedRun() throws(SheafError) -> ListRun {
        if let run = state.withLock({ $0.run }) { return run }
        let decoder = decoder, prefix = prefix, channel = channel
        let run = try ListRun.feeding(channel, client: client, description: description, keepsItems: false) { [weak self] snapshot in
            guard let self, let run = state.withLock({ $0.run }) else { return (nil, false) } // nobody iterates
            // Decoded here, on the run's delivery thread: the caller's executor only takes them.
            let delta = snapshot.delta, offset = delta.totalItems - delta.items
            do throws(SheafError) {
                let items = try decoder.decode(delta.json, offset: offset)
                prefix?.append(items)
                return (.snapshot(ListSnapshot(items: items, snapshot: snapshot, prefix: prefix, run: run)), true)
            } catch {
                let before = error.itemIndex.map { decoder.decodeFirst($0 - offset, of: delta) } ?? []
                return (.failure(error, before: before), false)
            }
        }
        state.withLock { $0.run = run }
        try run.start()
        return run
    }
}
