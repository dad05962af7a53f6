import CSheafHeader
import Sheaf
#if canImport(Glibc)
import Glibc
#endif

// The calls that run a list (sheaf.h: "Running a list"): each is a composition of the core's
// `ListSession` modes, converting values and errors and owning the C memory handed out.

@c @implementation
public func sheaf_list_start(_ list: OpaquePointer?, _ onSnapshot: sheaf_snapshot_fn?,
                             _ userData: UnsafeMutableRawPointer?, _ destroy: sheaf_destroy_fn?) -> sheaf_result {
    registering(userData, destroy: destroy) { owned in
        withList(list) { (handle) throws(SheafError) in
            var deliver: (@Sendable (Snapshot) -> Bool)? = nil
            if let onSnapshot {
                let callback = SnapshotCallback(function: onSnapshot, userData: owned, list: handle)
                deliver = { callback.call($0) }
            } else {
                // Nothing calls back: the user data is released when the run ends.
                deliver = { _ in withExtendedLifetime(owned) { true } }
            }
            try handle.start(onSnapshot: deliver)
        }
    }
}

@c @implementation
public func sheaf_list_start_write(_ list: OpaquePointer?, _ format: sheaf_format, _ write: sheaf_write_fn?,
                                   _ userData: UnsafeMutableRawPointer?, _ destroy: sheaf_destroy_fn?) -> sheaf_result {
    registering(userData, destroy: destroy) { owned in
        withList(list) { (handle) throws(SheafError) in
            guard let write else { throw SheafError(.invalidArgument, "the write function must not be NULL") }
            try startOutput(handle, format) { bytes in
                let done = write(bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count, owned.pointer) == 0
                return done ? nil : SheafError(.stopped, "the write function asked to stop")
            }
        }
    }
}

@c @implementation
public func sheaf_list_start_write_fd(_ list: OpaquePointer?, _ fd: Int32, _ format: sheaf_format) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        guard fd >= 0 else { throw SheafError(.invalidArgument, "the file descriptor must be 0 or more") }
        try startOutput(handle, format, ItemOutput.fileDescriptor(fd))
    }
}

/// Starts `handle`'s list writing its items to `sink` in `format` (items not kept).
private func startOutput(_ handle: ListHandle, _ format: sheaf_format, _ sink: @escaping ItemOutput.Sink) throws(SheafError) {
    guard let format = ItemFormat(rawValue: Int(format.rawValue)) else {
        throw SheafError(.invalidArgument, "unknown output format \(format.rawValue)")
    }
    let output = ItemOutput(format: format, sink: sink)
    try handle.start(keepingItems: false, onSnapshot: { output.write($0.delta) }, finishing: output.finish)
}

@c @implementation
public func sheaf_list_start_pull(_ list: OpaquePointer?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        try handle.session.start(handle.mode(pulling: true), client: handle.makeClient)
    }
}

@c @implementation
public func sheaf_list_next(_ list: OpaquePointer?, _ timeoutMs: Int64,
                            _ outSnapshot: UnsafeMutablePointer<UnsafePointer<sheaf_snapshot>?>?) -> sheaf_result {
    guard let handle = ListHandle.from(list), let outSnapshot else {
        return failure(SheafError(.invalidArgument, "the list and out_snapshot must not be NULL"))
    }
    outSnapshot.pointee = nil
    do {
        switch try handle.session.next(timeoutMilliseconds: timeoutMs < 0 ? nil : Int(clamping: timeoutMs)) {
        case .snapshot(let snapshot):
            outSnapshot.pointee = UnsafePointer(snapshot.value)
        case .end:
            // The outcome is decided once every snapshot has been taken: sheaf_list_error has it.
            if case .failed(let error)? = handle.session.run?.outcome { handle.recordError(error) }
        case .pending:
            return success(SHEAF_PENDING)
        }
        return success()
    } catch {
        return failure(error, on: handle)
    }
}

@c @implementation
public func sheaf_list_delta_has_long_digits(_ list: OpaquePointer?, _ outLong: UnsafeMutablePointer<Int32>?) -> sheaf_result {
    answerLongDigits(of: ListHandle.from(list), "the list", into: outLong)
}

@c @implementation
public func sheaf_list_wait(_ list: OpaquePointer?) -> sheaf_result {
    guard let handle = ListHandle.from(list) else { return failure(SheafError(.invalidArgument, "the list must not be NULL")) }
    do {
        return report(try handle.session.wait(), on: handle)
    } catch {
        return failure(error, on: handle)
    }
}

@c @implementation
public func sheaf_list_cancel(_ list: OpaquePointer?) -> sheaf_result {
    guard let handle = ListHandle.from(list) else { return failure(SheafError(.invalidArgument, "the list must not be NULL")) }
    handle.session.cancel()
    return success()
}

@c @implementation
public func sheaf_list_requests_made(_ list: OpaquePointer?) -> Int64 {
    Int64(ListHandle.from(list)?.session.run?.requestsMade ?? 0)
}

@c @implementation
public func sheaf_list_requests_in_flight(_ list: OpaquePointer?) -> Int64 {
    Int64(ListHandle.from(list)?.session.run?.requestsInFlight ?? 0)
}

@c @implementation
public func sheaf_list_prefix(_ list: OpaquePointer?, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                              _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    guard let (handle, outJSON) = listAndOut(list, outJSON, outLength) else {
        return failure(SheafError(.invalidArgument, "the list and out_json must not be NULL"))
    }
    do {
        handOver(try handle.session.prefixPieces(), outJSON, outLength)
        return success()
    } catch {
        return failure(error, on: handle)
    }
}

@c @implementation
public func sheaf_list_fetch_all(_ list: OpaquePointer?, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                 _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    guard let (handle, outJSON) = listAndOut(list, outJSON, outLength) else {
        return failure(SheafError(.invalidArgument, "the list and out_json must not be NULL"))
    }
    guard !CallbackContext.isInsideCallback else {
        return failure(SheafError.blockingCallInsideCallback, on: handle)
    }
    do {
        let (outcome, items) = try handle.session.fetchAll(handle.mode(), client: handle.makeClient)
        handOver(items, outJSON, outLength)
        return report(outcome, on: handle)
    } catch {
        handOver([ArraySlice<UInt8>](), outJSON, outLength)
        return failure(error, on: handle)
    }
}

@c @implementation
public func sheaf_list_get_status(_ list: OpaquePointer?, _ outStatus: UnsafeMutablePointer<sheaf_list_status>?) -> sheaf_result {
    guard let handle = ListHandle.from(list), let outStatus else {
        return failure(SheafError(.invalidArgument, "the list and out_status must not be NULL"))
    }
    // The bytes each version has: a field appended later starts where the version before ends,
    // so version 2 adds `MemoryLayout.offset(of:)` of its first field as version 1's end here.
    // The caller's struct is as large as its header's version: the fields both versions know are
    // filled, and `version` says which that was.
    let versionEnds = [MemoryLayout<sheaf_list_status>.offset(of: \.requests_revalidated)!, MemoryLayout<sheaf_list_status>.size]
    let asked = outStatus.pointee.version
    guard asked >= 1 else {
        return failure(SheafError(.invalidArgument, "out_status->version must be set (SHEAF_LIST_STATUS_VERSION)"))
    }
    let filled = min(Int(asked), versionEnds.count)
    var status = cStatus(handle.session.status)
    status.version = UInt32(filled)
    withUnsafeBytes(of: &status) { bytes in
        UnsafeMutableRawPointer(outStatus).copyMemory(from: bytes.baseAddress!, byteCount: versionEnds[filled - 1])
    }
    return success()
}

/// The list behind `list` and its `outJSON`, the out-parameters cleared (nothing handed out
/// yet); nil when either is NULL.
private func listAndOut(_ list: OpaquePointer?, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                        _ outLength: UnsafeMutablePointer<Int>?)
    -> (ListHandle, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>)? {
    guard let handle = ListHandle.from(list), let outJSON else { return nil }
    outJSON.pointee = nil
    outLength?.pointee = 0
    return (handle, outJSON)
}

/// The C form of a list's status.
private func cStatus(_ status: ListSession<PulledSnapshot, ListSettings>.Status) -> sheaf_list_status {
    var c = sheaf_list_status()
    switch status.stage {
    case .new: c.state = SHEAF_LIST_NEW
    case .idle: c.state = SHEAF_LIST_IDLE
    case .loading: c.state = SHEAF_LIST_LOADING
    case .ended: c.state = SHEAF_LIST_ENDED
    }
    c.pages_ready = Int64(status.pagesReady)
    c.items = Int64(status.items)
    c.pages = Int64(status.pages)
    c.expected_items = Int64(status.expectedItems ?? -1)
    c.expected_pages = Int64(status.expectedPages ?? -1)
    c.requests_made = Int64(status.requestsMade)
    c.requests_in_flight = Int64(status.requestsInFlight)
    c.window = Int64(status.window)
    c.requests_revalidated = Int64(status.requestsRevalidated)
    c.quota_remaining = Int64(status.quota?.remaining ?? -1)
    c.quota_reset_ms = Int64(status.quota?.resetsInMilliseconds ?? -1)
    if let outcome = status.outcome {
        c.stop_reason = status.reachedBound ? SHEAF_STOP_BOUND : status.endUnconfirmed ? SHEAF_STOP_UNCONFIRMED : outcome.cStopReason
    }
    return c
}

@c @implementation
public func sheaf_list_start_load_more(_ list: OpaquePointer?, _ lookAhead: Int64) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        guard let pages = Int(exactly: lookAhead) else { throw SheafError(.invalidArgument, "the look-ahead is out of range") }
        try handle.session.startLoadMore(lookAhead: pages, client: handle.makeClient)
    }
}

@c @implementation
public func sheaf_list_more(_ list: OpaquePointer?, _ timeoutMs: Int64, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                            _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    guard let (handle, outJSON) = listAndOut(list, outJSON, outLength) else {
        return failure(SheafError(.invalidArgument, "the list and out_json must not be NULL"))
    }
    do {
        switch try handle.session.loadMorePager().next(timeoutMilliseconds: timeoutMs < 0 ? nil : Int(clamping: timeoutMs)) {
        case .page(let page):
            handOver(page.delta.json, outJSON, outLength)
            return success()
        case .pending:
            return success(SHEAF_PENDING)
        case .end(let outcome):
            return report(outcome, on: handle)
        }
    } catch {
        return failure(error, on: handle)
    }
}

@c @implementation
public func sheaf_list_reset(_ list: OpaquePointer?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in try handle.session.loadMorePager().reset() }
}

/// The C view of a snapshot whose delta is at `json` (NUL-terminated, `length` bytes before it).
private func cSnapshot(_ snapshot: Snapshot, json: UnsafePointer<CChar>, length: Int) -> sheaf_snapshot {
    sheaf_snapshot(
        version: UInt32(SHEAF_SNAPSHOT_VERSION),
        delta_json: json,
        delta_length: length,
        delta_items: snapshot.delta.items,
        items: snapshot.delta.totalItems,
        pages: snapshot.delta.pages,
        expected_items: Int64(snapshot.expectedItems ?? -1),
        expected_pages: Int64(snapshot.expectedPages ?? -1))
}

/// Calls a C snapshot callback with a `sheaf_snapshot` built from a Swift snapshot.
private struct SnapshotCallback: Sendable {
    let function: sheaf_snapshot_fn
    let userData: CUserData
    /// Holds the list handle until the run drops its callback (after its last snapshot), so a
    /// sheaf_list_free from inside the callback releases nothing the callback still uses.
    let list: ListHandle

    func call(_ snapshot: Snapshot) -> Bool {
        var json = snapshot.delta.json
        json.append(0)
        return json.withUnsafeBufferPointer { buffer in
            var value = cSnapshot(snapshot, json: UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self),
                                  length: buffer.count - 1)
            let listPointer = OpaquePointer(Unmanaged.passUnretained(list).toOpaque())
            return list.beingDelivered.during(snapshot.delta.json) { function(listPointer, &value, userData.pointer) == 0 }
        }
    }
}

private let emptyText = OwnedCString("")

/// A snapshot handed out by sheaf_list_next: C memory its list owns until the next call or
/// the free.
final class PulledSnapshot: TakenSnapshot, @unchecked Sendable {
    // Safe: immutable after init (C only reads it); freed once in deinit.
    let value: UnsafeMutablePointer<sheaf_snapshot>
    /// The snapshot without its delta (the counts, and where the prefix ends).
    let snapshot: Snapshot
    private let json: UnsafeMutablePointer<CChar>?

    init(_ snapshot: Snapshot) {
        self.snapshot = snapshot.counts
        json = CString.mallocCopy(snapshot.delta.json)
        value = .allocate(capacity: 1)
        value.initialize(to: cSnapshot(snapshot, json: json.map { UnsafePointer($0) } ?? UnsafePointer(emptyText.pointer),
                                       length: json == nil ? 0 : snapshot.delta.json.count))
    }

    /// Whether the delta holds 19 or more digits in a row.
    var deltaHasLongDigits: Bool { hasLongDigitRun(json, count: value.pointee.delta_length) }

    deinit {
        value.deallocate()
        free(json)
    }
}

/// A handle that hands out deltas (a list's snapshots, a group's deltas) and says whether the one
/// the caller has now holds 19 digits in a row.
protocol HandsOutDeltas {
    var deltaHasLongDigits: Bool { get }
}

extension ListHandle: HandsOutDeltas {}
extension GroupHandle: HandsOutDeltas {}

/// sheaf_list_delta_has_long_digits and sheaf_group_delta_has_long_digits: `handle`'s answer
/// (`what` names it) into `outLong`.
func answerLongDigits(of handle: (some HandsOutDeltas)?, _ what: String, into outLong: UnsafeMutablePointer<Int32>?) -> sheaf_result {
    guard let handle, let outLong else { return failure(SheafError(.invalidArgument, "\(what) and out_long must not be NULL")) }
    outLong.pointee = handle.deltaHasLongDigits ? 1 : 0
    return success()
}

/// The delta a handle's callback is being given, while the callback runs: what
/// sheaf_list_delta_has_long_digits and sheaf_group_delta_has_long_digits read then (a pulled
/// list's or group's is the one it handed out last).
final class DeltaBeingDelivered: Sendable {
    private let bytes = Locked<[UInt8]?>(nil)

    /// Runs `callback` with `delta` as the one being delivered.
    func during<Result>(_ delta: [UInt8], _ callback: () -> Result) -> Result {
        bytes.withLock { $0 = delta }
        defer { bytes.withLock { $0 = nil } }
        return callback()
    }

    /// Whether it holds 19 digits in a row; nil while no callback runs.
    var hasLongDigits: Bool? { bytes.withLock { $0 }?.withUnsafeBytes(hasLongDigitRun) }
}

/// Whether the `count` bytes of C text at `text` hold 19 or more digits in a row.
func hasLongDigitRun(_ text: UnsafePointer<CChar>?, count: Int) -> Bool {
    hasLongDigitRun(UnsafeRawBufferPointer(start: text, count: text == nil ? 0 : count))
}
