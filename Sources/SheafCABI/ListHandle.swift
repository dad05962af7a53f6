import CSheafHeader
import Sheaf
#if canImport(Glibc)
import Glibc
#endif

/// What C sets on a list besides its description: kept by the core's `ListSession`, refused
/// once the list has started, as the description is.
struct ListSettings: Sendable {
    /// Written to when a pulled snapshot or the end is ready (sheaf_list_set_notify_fd); -1: none.
    var notifyFD: Int32 = -1
    /// The list's own transport, in place of the client's.
    var transport: CFunctionTransport?
    /// Headers of every page request, replacing the client's of the same name.
    var headers: [HTTPHeader] = []
}

/// The `sheaf_list` behind the opaque pointer: the core's `ListSession` (a description being
/// built, then one run of it, its modes and what the caller has seen), with what C owns: the
/// client handle, the notify fd while the library may write to it, the error last reported.
typealias ListMode = ListSession<PulledSnapshot, ListSettings>.Mode

final class ListHandle: Sendable, ErrorRecording {
    let client: ClientHandle
    let session: ListSession<PulledSnapshot, ListSettings>
    /// The notify fd (sheaf_list_set_notify_fd) while the library may write to it: -1 once the list
    /// is freed, under the lock each write holds.
    let notifyTarget = Locked<Int32>(-1)
    /// The outcome's error, or the last failed call's (sheaf_list_error).
    private let lastFailure = Locked<SheafError?>(nil)
    /// The delta the snapshot callback is being given (sheaf_list_delta_has_long_digits).
    let beingDelivered = DeltaBeingDelivered()

    init(client: ClientHandle, path: String) {
        self.client = client
        session = ListSession(path: path, settings: ListSettings())
    }

    /// A list of a group that the group made (a fan-out's child), reading `run` as its own.
    init(client: ClientHandle, adopting run: ListRun, description: ListDescription, keepsItems: Bool) {
        self.client = client
        session = ListSession(adopting: run, description: description, keepsItems: keepsItems, settings: ListSettings())
    }

    /// The client a list runs with: its own transport and headers.
    func makeClient(_ settings: ListSettings) throws(SheafError) -> SheafClient {
        try client.makeClient(transport: settings.transport, headers: settings.headers)
    }

    /// The mode a list starts in: pulled, or with `onSnapshot`; with a notify fd, it is written
    /// to after each snapshot and at the end.
    func mode(pulling: Bool = false, _ onSnapshot: (@Sendable (Snapshot) -> Bool)? = nil) -> (ListSettings) -> ListMode {
        let target = notifyTarget
        return { (settings: ListSettings) -> ListMode in
            target.withLock { $0 = settings.notifyFD }
            var wake: (@Sendable () -> Void)?
            if settings.notifyFD >= 0 { wake = { target.wake() } }
            // The C copy of a pulled snapshot is made on the run's delivery thread, not on the
            // caller's thread that takes it.
            if pulling { return ListMode.pull(taken: { (snapshot: Snapshot) -> PulledSnapshot in PulledSnapshot(snapshot) }, wake: wake) }
            return ListMode.callback(onSnapshot, wake: wake)
        }
    }

    /// Starts the list with `onSnapshot` (nil: no callback); `keepingItems` and `finishing` as
    /// `ListSession.start` takes them.
    func start(keepingItems: Bool? = nil, onSnapshot: (@Sendable (Snapshot) -> Bool)?,
               finishing: (@Sendable (ListOutcome) -> ListOutcome)? = nil) throws(SheafError) {
        try session.start(mode(onSnapshot), keepingItems: keepingItems, client: makeClient, finishing: finishing)
    }

    func recordError(_ error: SheafError?) {
        lastFailure.withLock { $0 = error }
    }

    var lastError: SheafError? { lastFailure.withLock { $0 } ?? (session.inGroup ? session.run?.outcome?.error : nil) }

    /// A call succeeded: the error of an earlier call goes, unless it is the run's outcome.
    func clearErrorBeforeTheOutcome() {
        if session.run?.outcome == nil { recordError(nil) }
    }

    /// Whether the delta of the snapshot the caller has now (the callback's, or the one taken
    /// last) holds 19 digits in a row: found when asked, so no snapshot pays for it unasked.
    var deltaHasLongDigits: Bool {
        beingDelivered.hasLongDigits ?? session.lastTaken?.deltaHasLongDigits ?? false
    }

    static func from(_ pointer: OpaquePointer?) -> ListHandle? {
        pointer.map { Unmanaged<ListHandle>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }
}

/// Runs `body` against the list behind `list`, turning a thrown error into the list's and the
/// thread's error.
func withList(_ list: OpaquePointer?, _ body: (ListHandle) throws(SheafError) -> Void) -> sheaf_result {
    guard let handle = ListHandle.from(list) else { return failure(SheafError(.invalidArgument, "the list must not be NULL")) }
    do {
        try body(handle)
        handle.clearErrorBeforeTheOutcome()
        return success()
    } catch {
        return failure(error, on: handle)
    }
}

/// Records the run's outcome on the handle and returns its code.
func report(_ outcome: ListOutcome, on handle: ListHandle) -> sheaf_result {
    if let error = outcome.error { return failure(error, on: handle) }
    handle.recordError(nil)
    return success()
}

/// Copies `json` for the caller into the out-parameters.
func handOver(_ json: [UInt8], _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
                      _ outLength: UnsafeMutablePointer<Int>?) {
    outJSON.pointee = CString.mallocCopy(json)
    outLength?.pointee = json.count
}

/// Hands a JSON array of the prefix's `pieces` to the caller: written once, straight into the
/// malloc'd buffer (a list's JSON is never copied whole on the Swift side first).
func handOver(_ pieces: [ArraySlice<UInt8>], _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
                      _ outLength: UnsafeMutablePointer<Int>?) {
    let length = pieces.reduce(2) { $0 + $1.count }
    guard let memory = malloc(length + 1)?.assumingMemoryBound(to: UInt8.self) else { return }
    memory[0] = UInt8(ascii: "[")
    var at = 1
    for piece in pieces {
        piece.withUnsafeBufferPointer { bytes in
            if let base = bytes.baseAddress { memcpy(memory + at, base, bytes.count) }
        }
        at += piece.count
    }
    memory[at] = UInt8(ascii: "]")
    memory[at + 1] = 0
    outJSON.pointee = UnsafeMutableRawPointer(memory).assumingMemoryBound(to: CChar.self)
    outLength?.pointee = length
}

// MARK: - Exports

@c @implementation
public func sheaf_list_new(_ outList: UnsafeMutablePointer<OpaquePointer?>?, _ client: OpaquePointer?,
                           _ path: UnsafePointer<CChar>?) -> sheaf_result {
    guard let outList else { return failure(SheafError(.invalidArgument, "out_list must not be NULL")) }
    outList.pointee = nil
    guard let clientHandle = ClientHandle.from(client) else { return failure(SheafError(.invalidArgument, "the client must not be NULL")) }
    let listPath: String
    do throws(SheafError) {
        listPath = try CString.required(path, "the list path")
    } catch {
        return failure(error)
    }
    let handle = ListHandle(client: clientHandle, path: listPath)
    outList.pointee = OpaquePointer(Unmanaged.passRetained(handle).toOpaque())
    return success()
}

@c @implementation
public func sheaf_list_free(_ list: OpaquePointer?) {
    guard let list, let handle = ListHandle.from(list) else { return }
    // The caller may close its fd once this returns.
    handle.session.close { handle.notifyTarget.withLock { $0 = -1 } }
    Unmanaged<ListHandle>.fromOpaque(UnsafeRawPointer(list)).release()
}

@c @implementation
public func sheaf_list_error(_ list: OpaquePointer?) -> UnsafeMutablePointer<sheaf_error>? {
    ListHandle.from(list)?.lastError.map(cError)
}

@c @implementation
public func sheaf_list_add_query(_ list: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                 _ value: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let name = try CString.nonEmpty(name, "the query parameter name")
        let value = try CString.required(value, "the query value")
        try handle.session.describe { $0.query.append((name, value)) }
    }
}

@c @implementation
public func sheaf_list_add_header(_ list: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                  _ value: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let header = try HeaderRules.check(HTTPHeader(name: try CString.nonEmpty(name, "the header name"),
                                                      value: try CString.text(value, "the header value") ?? ""))
        try handle.session.configure { $0.headers.replace(with: header) }
    }
}

@c @implementation
public func sheaf_list_set_body(_ list: OpaquePointer?, _ method: UnsafePointer<CChar>?, _ contentType: UnsafePointer<CChar>?,
                                _ body: UnsafeRawPointer?, _ length: Int) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let method = try CString.nonEmpty(method, "the method")
        let contentType = try HeaderRules.check(HTTPHeader(name: "Content-Type",
                                                           value: try CString.text(contentType, "the content type") ?? "application/json")).value
        guard length >= 0, length == 0 || body != nil else { throw SheafError(.invalidArgument, "the body is NULL but its length is \(length)") }
        let bytes = length == 0 ? [] : Array(UnsafeRawBufferPointer(start: body, count: length))
        let request = method == "GET" && bytes.isEmpty ? nil : ListRequest(method: method, contentType: contentType, body: bytes)
        var checked = ListDescription(path: "")
        checked.request = request
        _ = try checked.pageBody() // the method, now; the body, with the paging that goes in it, at the start
        try handle.session.describe { $0.request = request }
    }
}

@c @implementation
public func sheaf_list_set_paging(_ list: OpaquePointer?, _ kind_: sheaf_paging, _ param: UnsafePointer<CChar>?,
                                  _ first: Int64, _ sizeParam: UnsafePointer<CChar>?, _ size: Int64) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let kind: String
        switch kind_ {
        case SHEAF_PAGING_DETECT: kind = "detect"
        case SHEAF_PAGING_SINGLE: kind = "single"
        case SHEAF_PAGING_NEXT: kind = "next"
        case SHEAF_PAGING_PAGE_NUMBER: kind = "page_number"
        case SHEAF_PAGING_OFFSET: kind = "offset"
        case SHEAF_PAGING_CURSOR: kind = "cursor"
        default: throw SheafError(.invalidArgument, "unknown paging kind \(kind_.rawValue)")
        }
        // What the header says is ignored for a kind is not passed on; the core judges the rest.
        let takesParameter = kind == "page_number" || kind == "offset" || kind == "cursor"
        let parameter = takesParameter ? (try CString.text(param, "the paging parameter") ?? "") : nil
        let sizeParameter = try CString.text(sizeParam, "the page size parameter")
        let numbered = kind == "page_number" || kind == "offset"
        let paging: Paging
        do throws(DescriptionRefusal) {
            paging = try Paging.described(kind: kind, parameter: parameter, first: numbered ? Int(clamping: first) : 0,
                                          sizeParameter: sizeParameter, size: sizeParameter == nil ? nil : Int(clamping: size))
        } catch {
            throw error.asError
        }
        try handle.session.describe { $0.paging = paging }
    }
}

@c @implementation
public func sheaf_list_set_signal(_ list: OpaquePointer?, _ signal: sheaf_signal, _ source: sheaf_source,
                                  _ location: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let which: Signal
        switch signal {
        case SHEAF_SIGNAL_ITEMS: which = .items
        case SHEAF_SIGNAL_NEXT: which = .next
        case SHEAF_SIGNAL_CURSOR: which = .cursor
        case SHEAF_SIGNAL_TOTAL: which = .total
        case SHEAF_SIGNAL_PAGE_COUNT: which = .pageCount
        case SHEAF_SIGNAL_HAS_MORE: which = .hasMore
        case SHEAF_SIGNAL_IS_LAST: which = .isLast
        case SHEAF_SIGNAL_IDENTITY: which = .identity
        default: throw SheafError(.invalidArgument, "unknown signal \(signal.rawValue)")
        }
        let kind: String
        switch source {
        case SHEAF_SOURCE_NONE: kind = "none"
        case SHEAF_SOURCE_DETECT: kind = "detect"
        case SHEAF_SOURCE_BODY: kind = "body"
        case SHEAF_SOURCE_HEADER: kind = "header"
        case SHEAF_SOURCE_LINK: kind = "link"
        case SHEAF_SOURCE_ITEM: kind = "item"
        case SHEAF_SOURCE_LAST_ITEM: kind = "last_item"
        default: throw SheafError(.invalidArgument, "unknown source \(source.rawValue)")
        }
        // `where` is ignored for NONE and DETECT; the core judges the rest.
        let location = source == SHEAF_SOURCE_NONE || source == SHEAF_SOURCE_DETECT ? nil : try CString.text(location, "where")
        let from: SignalSource
        do throws(DescriptionRefusal) {
            from = try SignalSource.described(which, kind: kind, where: location)
        } catch {
            throw error.asError
        }
        try handle.session.describe { $0.signals[which] = from }
    }
}

@c @implementation
public func sheaf_list_set_description(_ list: OpaquePointer?, _ json: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let text = try CString.required(json, "the description")
        // Read whole before the list changes: a refused description leaves it as it was.
        try handle.session.describe { (description) throws(SheafError) in try description.describe(json: Array(text.utf8)) }
    }
}

@c @implementation
public func sheaf_list_use_preset(_ list: OpaquePointer?, _ name: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let preset = try Preset.named(try CString.nonEmpty(name, "the preset name"))
        try handle.session.describe { $0 = preset.applied(to: $0) }
    }
}

@c @implementation
public func sheaf_list_description(_ list: OpaquePointer?, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                   _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        guard let outJSON else { throw SheafError(.invalidArgument, "out_json must not be NULL") }
        handOver(handle.session.descriptionJSON { description in
            (try? handle.client.makeClient()).flatMap { try? $0.listURL(of: description) }
        }, outJSON, outLength)
    }
}

@c @implementation
public func sheaf_list_url(_ list: OpaquePointer?, _ outURL: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> sheaf_result {
    guard let outURL else { return failure(SheafError(.invalidArgument, "out_url must not be NULL")) }
    outURL.pointee = nil
    return withList(list) { (handle) throws(SheafError) in
        outURL.pointee = CString.mallocCopy(try handle.session.url { () throws(SheafError) in try handle.client.makeClient() })
    }
}

@c @implementation
public func sheaf_preset_count() -> Int {
    Preset.all.count
}

private let presetNames = Preset.all.map { OwnedCString($0.name) }

@c @implementation
public func sheaf_preset_name(_ index: Int) -> UnsafePointer<CChar>? {
    index >= 0 && index < presetNames.count ? UnsafePointer(presetNames[index].pointer) : nil
}

@c @implementation
public func sheaf_preset_description(_ name: UnsafePointer<CChar>?, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                     _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    guard let outJSON else { return failure(SheafError(.invalidArgument, "out_json must not be NULL")) }
    outJSON.pointee = nil
    outLength?.pointee = 0
    do {
        let preset = try Preset.named(try CString.nonEmpty(name, "the preset name"))
        handOver(preset.descriptionJSON, outJSON, outLength)
        return success()
    } catch {
        return failure(error)
    }
}

@c @implementation
public func sheaf_list_set_max_items(_ list: OpaquePointer?, _ maxItems: Int64) -> sheaf_result {
    sheaf_list_set_budget(list, SHEAF_BUDGET_ITEMS, maxItems)
}

@c @implementation
public func sheaf_list_set_budget(_ list: OpaquePointer?, _ budget: sheaf_budget, _ value: Int64) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        guard value >= 0, let amount = Int(exactly: value) else { throw SheafError(.invalidArgument, "a budget must not be negative") }
        let limit = amount == 0 ? nil : amount
        switch budget {
        case SHEAF_BUDGET_ITEMS: try handle.session.describe { $0.maxItems = limit }
        case SHEAF_BUDGET_PAGES: try handle.session.describe { $0.maxPages = limit }
        case SHEAF_BUDGET_REQUESTS: try handle.session.describe { $0.maxRequests = limit }
        case SHEAF_BUDGET_DEADLINE_MS: try handle.session.describe { $0.deadlineMilliseconds = limit }
        default: throw SheafError(.invalidArgument, "unknown budget \(budget.rawValue)")
        }
    }
}

@c @implementation
public func sheaf_list_set_resume(_ list: OpaquePointer?, _ token: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let token = try token.map { (text) throws(SheafError) in try ResumeToken(String(cString: text)) }
        try handle.session.describe { $0.resume = token }
    }
}

@c @implementation
public func sheaf_list_resume_token(_ list: OpaquePointer?, _ outToken: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> sheaf_result {
    guard let outToken else { return failure(SheafError(.invalidArgument, "out_token must not be NULL")) }
    outToken.pointee = nil
    return withList(list) { handle in
        outToken.pointee = handle.session.resumeToken().flatMap { CString.mallocCopy($0.description) }
    }
}

@c @implementation
public func sheaf_list_partitions(_ list: OpaquePointer?, _ n: Int64, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                  _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    sheaf_list_partitions_at_once(list, n, n, outJSON, outLength)
}

@c @implementation
public func sheaf_list_partitions_at_once(_ list: OpaquePointer?, _ n: Int64, _ atOnce: Int64,
                                          _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                          _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    outJSON?.pointee = nil
    outLength?.pointee = 0
    return withList(list) { (handle) throws(SheafError) in
        guard let outJSON else { throw SheafError(.invalidArgument, "out_json must not be NULL") }
        guard n >= 1, let count = Int(exactly: n) else {
            throw SheafError(.invalidArgument, "the number of partitions must be 1 or more, not \(n)")
        }
        let partitions = try handle.session.partitions(count: count, atOnce: Int(clamping: atOnce), client: handle.makeClient)
        var json: [UInt8] = [UInt8(ascii: "[")]
        for (index, partition) in partitions.enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            json += partition.json
        }
        json.append(UInt8(ascii: "]"))
        handOver(json, outJSON, outLength)
    }
}

@c @implementation
public func sheaf_list_set_partition(_ list: OpaquePointer?, _ json: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let text = try CString.required(json, "the partition")
        try handle.session.setPartition(try Partition(text))
    }
}

@c @implementation
public func sheaf_list_set_keep_items(_ list: OpaquePointer?, _ keep: Int32) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in try handle.session.setKeepsItems(keep != 0) }
}

@c @implementation
public func sheaf_list_set_notify_fd(_ list: OpaquePointer?, _ fd: Int32) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        guard fd >= -1 else { throw SheafError(.invalidArgument, "the notify fd must be a file descriptor or -1, not \(fd)") }
        try handle.session.configure { $0.notifyFD = fd }
    }
}

@c @implementation
public func sheaf_list_set_transport(_ list: OpaquePointer?, _ transport: sheaf_transport_fn?,
                                     _ userData: UnsafeMutableRawPointer?, _ destroy: sheaf_destroy_fn?) -> sheaf_result {
    registering(userData, destroy: destroy) { owned in
        withList(list) { (handle) throws(SheafError) in
            let transport = transport.map { CFunctionTransport(function: $0, userData: owned) }
            try handle.session.configure { $0.transport = transport }
        }
    }
}


@c @implementation
public func sheaf_list_poll(_ list: OpaquePointer?, _ offset: UnsafePointer<CChar>?, _ through: UnsafePointer<CChar>?,
                            _ format: sheaf_format, _ outItems: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ outLength: UnsafeMutablePointer<Int>?,
                            _ outOffset: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> sheaf_result {
    outItems?.pointee = nil
    outLength?.pointee = 0
    outOffset?.pointee = nil
    guard !CallbackContext.isInsideCallback else { return failure(SheafError.blockingCallInsideCallback, on: ListHandle.from(list)) }
    return withList(list) { (handle) throws(SheafError) in
        guard let outItems, let outOffset else { throw SheafError(.invalidArgument, "out_items and out_offset must not be NULL") }
        func read(_ text: UnsafePointer<CChar>?, _ name: String) throws(SheafError) -> (list: String?, state: SyncState)? {
            guard let text else { return nil }
            return try SyncState.offset(json: Array(try CString.required(text, name).utf8))
        }
        guard let format = ItemFormat(rawValue: Int(format.rawValue)) else {
            throw SheafError(.invalidArgument, "unknown output format \(format.rawValue)")
        }
        let (from, to) = (try read(offset, "the offset"), try read(through, "the end (through)"))
        let (client, description, _) = try handle.session.prototype(client: handle.makeClient)
        let poll = try client.poll(description, after: from, through: to, format: format)
        handOver(poll.output, outItems, outLength)
        handOver(poll.offsetJSON, outOffset, nil)
    }
}
