import CSheafHeader
import Sheaf
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The `sheaf_list` behind the opaque pointer: a description being built, then one run of it.
final class ListHandle: Sendable {
    private struct State {
        var description: ListDescription
        var keepsItems = true
        /// The list's own transport, in place of the client's.
        var transport: CFunctionTransport?
        var run: ListRun?
        /// Set when the list was started for pulling (sheaf_list_start_pull).
        var pull: SnapshotQueue<PulledSnapshot>?
        /// The last snapshot sheaf_list_next handed out: its C memory stays alive (at least
        /// until the next call, as the header promises), and the prefix a puller saw ends there.
        var lastTaken: PulledSnapshot?
    }

    let client: ClientHandle
    private let state: Mutex<State>
    let errors = ErrorRecord()

    init(client: ClientHandle, path: String) {
        self.client = client
        state = Mutex(State(description: ListDescription(path: path)))
    }

    /// Changes what the list will run with; refused once it has started.
    private func configure(_ change: (inout State) throws(SheafError) -> Void) throws(SheafError) {
        try state.withLock { (state) throws(SheafError) in
            guard state.run == nil else { throw SheafError(.state, "the list has already been started") }
            try change(&state)
        }
    }

    func describe(_ change: (inout ListDescription) throws(SheafError) -> Void) throws(SheafError) {
        try configure { (state) throws(SheafError) in try change(&state.description) }
    }

    func setKeepsItems(_ keeps: Bool) throws(SheafError) {
        try configure { $0.keepsItems = keeps }
    }

    func setTransport(_ transport: CFunctionTransport?) throws(SheafError) {
        try configure { $0.transport = transport }
    }

    /// Starts the run with `onSnapshot` (nil: no callback), or, `pulling`, with its snapshots
    /// queued (a window of them at most) for sheaf_list_next.
    func start(keepingItems force: Bool = false, onSnapshot: (@Sendable (Snapshot) -> Bool)?,
               pulling: Bool = false) throws(SheafError) -> ListRun {
        let (run, pull) = try state.withLock { (state) throws(SheafError) -> (ListRun, SnapshotQueue<PulledSnapshot>?) in
            guard state.run == nil else { throw SheafError(.state, "a list runs once; create a new list to run it again") }
            let client = try client.makeClient(transport: state.transport)
            let pull = pulling ? SnapshotQueue<PulledSnapshot>(capacity: client.configuration.window) : nil
            // The C copy of a pulled snapshot is made here, on the run's delivery thread, not on
            // the caller's thread that takes it.
            let deliver = pull.map { queue in { @Sendable (snapshot: Snapshot) in queue.push(PulledSnapshot(snapshot)) } }
                ?? onSnapshot
            let run = try client.makeList(state.description, keepsItems: state.keepsItems || force, onSnapshot: deliver)
            state.run = run
            state.pull = pull
            return (run, pull)
        }
        try run.start()
        if let pull { run.whenFinished { pull.finish() } }
        return run
    }

    var run: ListRun? { state.withLock { $0.run } }
    var pull: SnapshotQueue<PulledSnapshot>? { state.withLock { $0.pull } }

    /// Keeps `pulled` as the snapshot handed out last; returns its C view.
    func handOut(_ pulled: PulledSnapshot) -> UnsafePointer<sheaf_snapshot> {
        state.withLock { $0.lastTaken = pulled }
        return UnsafePointer(pulled.value)
    }

    /// The prefix delivered so far: on a pulled list, through the last snapshot taken.
    func prefixJSON() -> [UInt8] {
        let (run, pulling, taken) = state.withLock { ($0.run, $0.pull != nil, $0.lastTaken) }
        guard let run else { return Array("[]".utf8) }
        guard pulling else { return run.prefixJSON() }
        return taken.map { run.prefixJSON(through: $0.snapshot) } ?? Array("[]".utf8)
    }
    var keepsItems: Bool { state.withLock { $0.keepsItems } }

    static func from(_ pointer: OpaquePointer?) -> ListHandle? {
        pointer.map { Unmanaged<ListHandle>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }
}

/// Runs `body` against the list behind `list`, turning a thrown error into the list's message.
private func withList(_ list: OpaquePointer?, _ body: (ListHandle) throws(SheafError) -> Void) -> sheaf_result {
    guard let handle = ListHandle.from(list) else { return SHEAF_E_INVALID_ARGUMENT }
    do {
        try body(handle)
        handle.errors.clear()
        return SHEAF_OK
    } catch {
        return handle.errors.set(error)
    }
}

private func pointer(_ text: UnsafePointer<CChar>?, _ what: String) throws(SheafError) -> JSONPointer {
    guard let text = CString.read(text) else { throw SheafError(.invalidArgument, "\(what) must not be NULL") }
    guard let pointer = JSONPointer(text) else {
        throw SheafError(.invalidArgument, "\(what) \"\(text)\" is not a JSON pointer (RFC 6901: \"\" or \"/a/b\")")
    }
    return pointer
}

private func required(_ text: UnsafePointer<CChar>?, _ what: String) throws(SheafError) -> String {
    guard let text = CString.read(text), !text.isEmpty else { throw SheafError(.invalidArgument, "\(what) must be a non-empty string") }
    return text
}

/// Records the run's outcome on the handle and returns its code.
private func report(_ outcome: ListOutcome, on handle: ListHandle) -> sheaf_result {
    switch outcome {
    case .failed(let error): return handle.errors.set(error)
    case .complete, .limitReached:
        handle.errors.clear()
        return outcome.cResult
    }
}

// MARK: - Exports

@c @implementation
public func sheaf_list_new(_ outList: UnsafeMutablePointer<OpaquePointer?>?, _ client: OpaquePointer?,
                           _ path: UnsafePointer<CChar>?) -> sheaf_result {
    guard let outList else { return SHEAF_E_INVALID_ARGUMENT }
    outList.pointee = nil
    guard let clientHandle = ClientHandle.from(client) else { return SHEAF_E_INVALID_ARGUMENT }
    guard let path = CString.read(path) else {
        return clientHandle.errors.set(SheafError(.invalidArgument, "the list path must not be NULL"))
    }
    let handle = ListHandle(client: clientHandle, path: path)
    outList.pointee = OpaquePointer(Unmanaged.passRetained(handle).toOpaque())
    return SHEAF_OK
}

@c @implementation
public func sheaf_list_free(_ list: OpaquePointer?) {
    guard let list, let handle = ListHandle.from(list) else { return }
    // A pulled list first lets go of its snapshots, so a delivery waiting for room returns.
    handle.pull?.close()
    // Cancels and waits out a running callback; from inside the list's own callback it only
    // cancels, and the run's hold on the handle ends after that callback returns.
    handle.run?.close()
    Unmanaged<ListHandle>.fromOpaque(UnsafeRawPointer(list)).release()
}

@c @implementation
public func sheaf_list_errmsg(_ list: OpaquePointer?) -> UnsafePointer<CChar>! {
    ListHandle.from(list)?.errors.message ?? sheaf_result_str(Int32(SHEAF_E_INVALID_ARGUMENT.rawValue))
}

@c @implementation
public func sheaf_list_http_status(_ list: OpaquePointer?) -> Int32 {
    Int32(clamping: ListHandle.from(list)?.errors.httpStatus ?? 0)
}

@c @implementation
public func sheaf_list_http_body(_ list: OpaquePointer?) -> UnsafePointer<CChar>! {
    ListHandle.from(list)?.errors.body ?? UnsafePointer(emptyText.pointer)
}

private let emptyText = OwnedCString("")

@c @implementation
public func sheaf_list_add_query(_ list: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                 _ value: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let name = try required(name, "the query parameter name")
        guard let value = CString.read(value) else { throw SheafError(.invalidArgument, "the query value must not be NULL") }
        try handle.describe { $0.query.append((name, value)) }
    }
}

@c @implementation
public func sheaf_list_set_items(_ list: OpaquePointer?, _ jsonPointer: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let items = try pointer(jsonPointer, "the items pointer")
        try handle.describe { $0.items = items }
    }
}

@c @implementation
public func sheaf_list_set_page_number(_ list: OpaquePointer?, _ pageParam: UnsafePointer<CChar>?, _ firstPage: Int32,
                                       _ sizeParam: UnsafePointer<CChar>?, _ pageSize: Int32) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let parameter = try required(pageParam, "the page parameter")
        guard firstPage >= 0 else { throw SheafError(.invalidArgument, "the first page must be 0 or more") }
        let size = CString.read(sizeParam)
        if size != nil, pageSize <= 0 { throw SheafError(.invalidArgument, "the page size must be positive") }
        try handle.describe {
            $0.addressing = .pageNumber(parameter: parameter, firstPage: Int(firstPage), sizeParameter: size,
                                        pageSize: size == nil ? nil : Int(pageSize))
        }
    }
}

@c @implementation
public func sheaf_list_set_offset_limit(_ list: OpaquePointer?, _ offsetParam: UnsafePointer<CChar>?,
                                        _ limitParam: UnsafePointer<CChar>?, _ limit: Int32) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        _ = try required(offsetParam, "the offset parameter")
        _ = try required(limitParam, "the limit parameter")
        throw SheafError(.unsupported, "offset/limit addressing is not supported yet")
    }
}

@c @implementation
public func sheaf_list_set_cursor(_ list: OpaquePointer?, _ cursorParam: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        _ = try required(cursorParam, "the cursor parameter")
        throw SheafError(.unsupported, "cursor addressing is not supported yet")
    }
}

@c @implementation
public func sheaf_list_set_next(_ list: OpaquePointer?, _ source: sheaf_next_source,
                                _ jsonPointer: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let next: NextSource
        switch source {
        case SHEAF_NEXT_NONE: next = .none
        case SHEAF_NEXT_BODY_POINTER: next = .bodyPointer(try pointer(jsonPointer, "the next pointer"))
        case SHEAF_NEXT_LINK_HEADER: throw SheafError(.unsupported, "next links from the Link header are not supported yet")
        default: throw SheafError(.invalidArgument, "unknown next source \(source.rawValue)")
        }
        try handle.describe { $0.next = next }
    }
}

@c @implementation
public func sheaf_list_set_total(_ list: OpaquePointer?, _ source: sheaf_total_source,
                                 _ location: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let total: TotalSource
        switch source {
        case SHEAF_TOTAL_NONE: total = .none
        case SHEAF_TOTAL_BODY_POINTER: total = .bodyPointer(try pointer(location, "the total pointer"))
        case SHEAF_TOTAL_HEADER: throw SheafError(.unsupported, "totals from a response header are not supported yet")
        default: throw SheafError(.invalidArgument, "unknown total source \(source.rawValue)")
        }
        try handle.describe { $0.total = total }
    }
}

@c @implementation
public func sheaf_list_set_identity(_ list: OpaquePointer?, _ jsonPointer: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let identity = jsonPointer == nil ? nil : try pointer(jsonPointer, "the identity pointer")
        try handle.describe { $0.identity = identity }
    }
}

@c @implementation
public func sheaf_list_set_max_items(_ list: OpaquePointer?, _ maxItems: Int64) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        guard maxItems >= 0, let limit = Int(exactly: maxItems) else {
            throw SheafError(.invalidArgument, "max items must not be negative")
        }
        try handle.describe { $0.maxItems = limit == 0 ? nil : limit }
    }
}

@c @implementation
public func sheaf_list_set_keep_items(_ list: OpaquePointer?, _ keep: Int32) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in try handle.setKeepsItems(keep != 0) }
}

@c @implementation
public func sheaf_list_set_transport(_ list: OpaquePointer?, _ transport: sheaf_transport_fn?,
                                     _ userData: UnsafeMutableRawPointer?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        try handle.setTransport(transport.map { CFunctionTransport(function: $0, userData: UInt(bitPattern: userData)) })
    }
}

@c @implementation
public func sheaf_list_start(_ list: OpaquePointer?, _ onSnapshot: sheaf_snapshot_fn?,
                             _ userData: UnsafeMutableRawPointer?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        var deliver: (@Sendable (Snapshot) -> Bool)? = nil
        if let onSnapshot {
            let callback = SnapshotCallback(function: onSnapshot, userData: UInt(bitPattern: userData), list: handle)
            deliver = { callback.call($0) }
        }
        _ = try handle.start(onSnapshot: deliver)
    }
}

@c @implementation
public func sheaf_list_start_pull(_ list: OpaquePointer?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        _ = try handle.start(onSnapshot: nil, pulling: true)
    }
}

@c @implementation
public func sheaf_list_next(_ list: OpaquePointer?, _ timeoutMs: Int64,
                            _ outSnapshot: UnsafeMutablePointer<UnsafePointer<sheaf_snapshot>?>?) -> sheaf_result {
    guard let handle = ListHandle.from(list), let outSnapshot else { return SHEAF_E_INVALID_ARGUMENT }
    outSnapshot.pointee = nil
    guard let pull = handle.pull else {
        return handle.errors.set(SheafError(.state, "the list was not started with sheaf_list_start_pull"))
    }
    if timeoutMs != 0, CallbackContext.isInsideCallback {
        return handle.errors.set(SheafError(.reentrant, "a blocking Sheaf call was made from inside a Sheaf callback"))
    }
    let timeout: Int? = timeoutMs < 0 ? nil : Int(clamping: timeoutMs)
    switch pull.next(timeoutMilliseconds: timeout) {
    case .snapshot(let snapshot):
        outSnapshot.pointee = handle.handOut(snapshot)
    case .end:
        break
    case .pending:
        return SHEAF_PENDING
    }
    handle.errors.clear()
    return SHEAF_OK
}

@c @implementation
public func sheaf_list_wait(_ list: OpaquePointer?) -> sheaf_result {
    guard let handle = ListHandle.from(list) else { return SHEAF_E_INVALID_ARGUMENT }
    guard let run = handle.run else { return handle.errors.set(SheafError(.state, "the list has not been started")) }
    if !CallbackContext.isInsideCallback { handle.pull?.close() } // nobody takes snapshots any more
    do {
        return report(try run.wait(), on: handle)
    } catch {
        return handle.errors.set(error)
    }
}

@c @implementation
public func sheaf_list_cancel(_ list: OpaquePointer?) -> sheaf_result {
    guard let handle = ListHandle.from(list) else { return SHEAF_E_INVALID_ARGUMENT }
    handle.run?.cancel()
    return SHEAF_OK
}

@c @implementation
public func sheaf_list_requests_made(_ list: OpaquePointer?) -> Int64 {
    Int64(ListHandle.from(list)?.run?.requestsMade ?? 0)
}

@c @implementation
public func sheaf_list_requests_in_flight(_ list: OpaquePointer?) -> Int64 {
    Int64(ListHandle.from(list)?.run?.requestsInFlight ?? 0)
}

@c @implementation
public func sheaf_list_prefix(_ list: OpaquePointer?, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                              _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    guard let handle = ListHandle.from(list), let outJSON else { return SHEAF_E_INVALID_ARGUMENT }
    outJSON.pointee = nil
    outLength?.pointee = 0
    guard handle.keepsItems else {
        return handle.errors.set(SheafError(.state, "the list does not keep its items (sheaf_list_set_keep_items)"))
    }
    let json = handle.prefixJSON()
    outJSON.pointee = CString.mallocCopy(json)
    outLength?.pointee = json.count
    return SHEAF_OK
}

@c @implementation
public func sheaf_list_fetch_all(_ list: OpaquePointer?, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                 _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    guard let handle = ListHandle.from(list), let outJSON else { return SHEAF_E_INVALID_ARGUMENT }
    outJSON.pointee = nil
    outLength?.pointee = 0
    guard !CallbackContext.isInsideCallback else {
        return handle.errors.set(SheafError(.reentrant, "a blocking Sheaf call was made from inside a Sheaf callback"))
    }
    let result: sheaf_result
    let run: ListRun
    do {
        run = try handle.start(keepingItems: true, onSnapshot: nil)
        result = report(try run.wait(), on: handle)
    } catch {
        outJSON.pointee = CString.mallocCopy(Array("[]".utf8))
        outLength?.pointee = 2
        return handle.errors.set(error)
    }
    let json = run.prefixJSON()
    outJSON.pointee = CString.mallocCopy(json)
    outLength?.pointee = json.count
    return result
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
    let userData: UInt
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
            return function(listPointer, &value, UnsafeMutableRawPointer(bitPattern: userData)) == 0
        }
    }
}

/// A snapshot handed out by sheaf_list_next: C memory its list owns until the next call or
/// the free.
final class PulledSnapshot: @unchecked Sendable {
    // Safe: immutable after init (C only reads it); freed once in deinit.
    let value: UnsafeMutablePointer<sheaf_snapshot>
    /// The snapshot without its delta (the counts, and where the prefix ends).
    let snapshot: Snapshot
    private let json: UnsafeMutablePointer<CChar>?

    init(_ snapshot: Snapshot) {
        var counts = snapshot
        counts.delta.json = []
        self.snapshot = counts
        json = CString.mallocCopy(snapshot.delta.json)
        value = .allocate(capacity: 1)
        value.initialize(to: cSnapshot(snapshot, json: json.map { UnsafePointer($0) } ?? UnsafePointer(emptyText.pointer),
                                       length: json == nil ? 0 : snapshot.delta.json.count))
    }

    deinit {
        value.deallocate()
        free(json)
    }
}
