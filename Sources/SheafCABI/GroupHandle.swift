import CSheafHeader
import Sheaf
#if canImport(Glibc)
import Glibc
#endif

/// The `sheaf_group` behind the opaque pointer: a `ListGroup` and the list handles of its lists.
final class GroupHandle: Sendable, ErrorRecording {
    private struct State {
        /// The handle of each list, by place: the ones added, and those made for children when
        /// the caller asks for them (sheaf_group_list).
        var lists: [Int: ListHandle] = [:]
        /// Set when started with sheaf_group_start_pull.
        var pulling = false
        /// The delta sheaf_group_next handed out last: its C memory lives until the next call.
        var lastTaken: GroupDeltaCopy?
        var lastError: SheafError?
        /// The user data of sheaf_group_start: destroyed by sheaf_group_free before it returns.
        var userData: CUserData?
    }

    let client: ClientHandle
    let group: ListGroup
    private let state = Locked(State())
    /// The delta the callback is being given (sheaf_group_delta_has_long_digits).
    let beingDelivered = DeltaBeingDelivered()
    /// Written to when a delta or the end is ready (sheaf_group_set_notify_fd); -1: none, and -1
    /// once the group is freed (under the lock each write holds).
    let notifyTarget = Locked<Int32>(-1)
    /// The fd the caller set, taken as the target when the group starts.
    private let notifyFD = Locked<Int32>(-1)

    func setNotifyFD(_ fd: Int32) throws(SheafError) {
        guard fd >= -1 else { throw SheafError(.invalidArgument, "the notify fd must be a file descriptor or -1, not \(fd)") }
        guard !group.hasStarted else { throw SheafError(.state, "the group has already been started") }
        notifyFD.withLock { $0 = fd }
    }

    /// The fd to notify, made the target at the start; nil when none was set.
    func notifying() -> Locked<Int32>? {
        let fd = notifyFD.withLock { $0 }
        guard fd >= 0 else { return nil }
        notifyTarget.withLock { $0 = fd }
        return notifyTarget
    }


    func keepUserData(_ owned: CUserData) { state.withLock { $0.userData = owned } }

    func takeUserData() -> CUserData? {
        state.withLock { state in
            defer { state.userData = nil }
            return state.userData
        }
    }

    init(client: ClientHandle, group: ListGroup) {
        self.client = client
        self.group = group
    }

    static func from(_ pointer: OpaquePointer?) -> GroupHandle? {
        pointer.map { Unmanaged<GroupHandle>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }

    func recordError(_ error: SheafError?) {
        state.withLock { $0.lastError = error }
    }

    var lastError: SheafError? { state.withLock { $0.lastError } }

    var isPulling: Bool { state.withLock { $0.pulling } }

    func setPulling() {
        state.withLock { $0.pulling = true }
    }

    /// Keeps `list` as the handle of the list at `index`.
    func keep(_ list: ListHandle, at index: Int) {
        state.withLock { $0.lists[index] = list }
    }

    /// The handle of the list at `index`, made for a child on first asking.
    func list(at index: Int) -> ListHandle? {
        state.withLock { state in
            if let list = state.lists[index] { return list }
            guard let member = group.member(at: index) else { return nil }
            let list = ListHandle(client: client, adopting: member.run, description: member.description,
                                  keepsItems: member.keepsItems)
            state.lists[index] = list
            return list
        }
    }

    /// Whether the items of the delta the caller has now (the callback's, or the one taken
    /// last) hold 19 digits in a row: found when asked (see ListHandle.deltaHasLongDigits).
    var deltaHasLongDigits: Bool {
        beingDelivered.hasLongDigits ?? state.withLock { $0.lastTaken }?.deltaHasLongDigits ?? false
    }

    /// Keeps `delta` as the one handed out last; returns its C view.
    func handOut(_ delta: GroupDeltaCopy) -> UnsafePointer<sheaf_group_delta> {
        state.withLock { $0.lastTaken = delta }
        return UnsafePointer(delta.value)
    }

    /// Every list handle the group has made or taken (to let go of them).
    func allLists() -> [ListHandle] {
        state.withLock { Array($0.lists.values) }
    }
}

/// A group delta in C memory: the tag and the items as NUL-terminated text, freed with it.
final class GroupDeltaCopy: @unchecked Sendable {
    // Safe: immutable after init (C only reads it); freed once in deinit.
    let value: UnsafeMutablePointer<sheaf_group_delta>
    private let tag: UnsafeMutablePointer<CChar>?
    private let json: UnsafeMutablePointer<CChar>?
    /// A parent's templates as a JSON array (`templates_json`); nil for a list of items.
    private let templates: UnsafeMutablePointer<CChar>?

    init(_ delta: GroupDelta) {
        tag = CString.mallocCopy(Array(delta.tag.utf8))
        templates = delta.templates.flatMap { CString.mallocCopy(Array(templatesJSON($0).utf8)) }
        let items = delta.snapshot?.delta.json ?? Array("[]".utf8)
        json = CString.mallocCopy(items)
        value = .allocate(capacity: 1)
        value.initialize(to: cGroupDelta(delta, tag: tag.map { UnsafePointer($0) } ?? UnsafePointer(emptyText.pointer),
                                         json: json.map { UnsafePointer($0) } ?? UnsafePointer(emptyArrayText.pointer),
                                         length: json == nil ? 2 : items.count,
                                         templates: templates.map { UnsafePointer($0) }))
    }

    /// Whether the items hold 19 or more digits in a row.
    var deltaHasLongDigits: Bool { hasLongDigitRun(json, count: value.pointee.delta_length) }

    deinit {
        value.deallocate()
        free(tag)
        free(json)
        free(templates)
    }
}

/// A parent's templates as the JSON array `templates_json` holds.
private func templatesJSON(_ templates: [String]) -> String {
    "[" + templates.map(JSONText.quote).joined(separator: ",") + "]"
}

private let emptyText = OwnedCString("")
private let emptyArrayText = OwnedCString("[]")

private func cGroupDelta(_ delta: GroupDelta, tag: UnsafePointer<CChar>, json: UnsafePointer<CChar>, length: Int,
                         templates: UnsafePointer<CChar>?) -> sheaf_group_delta {
    sheaf_group_delta(
        version: UInt32(SHEAF_GROUP_DELTA_VERSION),
        list: delta.list,
        tag: tag,
        delta_json: json,
        delta_length: length,
        delta_items: delta.snapshot?.delta.items ?? 0,
        items: delta.snapshot?.delta.totalItems ?? 0,
        finished: delta.outcome == nil ? 0 : 1,
        result: delta.outcome?.cResult ?? SHEAF_OK,
        parent: delta.templates == nil ? 0 : 1,
        templates_json: templates)
}

/// Runs `body` against the group behind `group`, turning a thrown error into the group's and the
/// thread's error.
private func withGroup(_ group: OpaquePointer?, _ body: (GroupHandle) throws(SheafError) -> Void) -> sheaf_result {
    guard let handle = GroupHandle.from(group) else { return failure(SheafError(.invalidArgument, "the group must not be NULL")) }
    do {
        try body(handle)
        if handle.group.outcome == nil { handle.recordError(nil) }
        return success()
    } catch {
        return failure(error, on: handle)
    }
}

/// A list handed to a group: it must be of the group's client and not started.
private func listForTheGroup(_ list: OpaquePointer?, _ handle: GroupHandle, _ what: String) throws(SheafError) -> ListHandle {
    guard let list = ListHandle.from(list) else { throw SheafError(.invalidArgument, "\(what) must not be NULL") }
    guard list.client === handle.client else {
        throw SheafError(.invalidArgument, "\(what) is of another client than the group's")
    }
    return list
}

/// Takes the caller's reference to `list` (the group frees it).
private func take(_ list: OpaquePointer?) {
    if let list { Unmanaged<ListHandle>.fromOpaque(UnsafeRawPointer(list)).release() }
}

/// The run the group just made for the list at `index`.
private func runOf(_ group: ListGroup, _ index: Int) throws(SheafError) -> ListRun {
    guard let run = group.member(at: index)?.run else { throw SheafError(.internal, "a list joined the group without a run") }
    return run
}

// MARK: - Exports

@c @implementation
public func sheaf_group_new(_ outGroup: UnsafeMutablePointer<OpaquePointer?>?, _ client: OpaquePointer?) -> sheaf_result {
    guard let outGroup else { return failure(SheafError(.invalidArgument, "out_group must not be NULL")) }
    outGroup.pointee = nil
    guard let clientHandle = ClientHandle.from(client) else { return failure(SheafError(.invalidArgument, "the client must not be NULL")) }
    do {
        let handle = GroupHandle(client: clientHandle, group: try clientHandle.makeClient().makeGroup())
        outGroup.pointee = OpaquePointer(Unmanaged.passRetained(handle).toOpaque())
        return success()
    } catch {
        return failure(error)
    }
}

@c @implementation
public func sheaf_group_free(_ group: OpaquePointer?) {
    guard let group, let handle = GroupHandle.from(group) else { return }
    handle.group.closePulling()
    handle.notifyTarget.withLock { $0 = -1 }   // the caller may close its fd once this returns
    // Waits out a running callback unless called from one (see sheaf_list_free).
    handle.group.close()
    for list in handle.allLists() { list.session.run?.close() }
    // No callback runs now and none will: the user data goes before this returns (from inside
    // the callback, when the closure holding it is dropped, after the callback returns).
    if !CallbackContext.isServing(handle.group) { handle.takeUserData()?.destroyNow() }
    Unmanaged<GroupHandle>.fromOpaque(UnsafeRawPointer(group)).release()
}

@c @implementation
public func sheaf_group_error(_ group: OpaquePointer?) -> UnsafeMutablePointer<sheaf_error>? {
    guard let handle = GroupHandle.from(group) else { return nil }
    return (handle.group.outcome?.error ?? handle.lastError).map(cError)
}

@c @implementation
public func sheaf_group_set_option(_ group: OpaquePointer?, _ option: sheaf_group_option, _ value: Int64) -> sheaf_result {
    withGroup(group) { (handle) throws(SheafError) in
        guard value == 0 || value == 1 else { throw SheafError(.invalidArgument, "a group option is 0 or 1, not \(value)") }
        var options = handle.group.options
        switch option {
        case SHEAF_GROUP_ORDERED: options.ordered = value == 1
        case SHEAF_GROUP_FAIL_FAST: options.failFast = value == 1
        case SHEAF_GROUP_MISSING_FAILS: options.missingValueFails = value == 1
        default: throw SheafError(.invalidArgument, "unknown group option \(option.rawValue)")
        }
        try handle.group.setOptions(options)
    }
}

@c @implementation
public func sheaf_group_add(_ group: OpaquePointer?, _ list: OpaquePointer?, _ tag: UnsafePointer<CChar>?,
                            _ outIndex: UnsafeMutablePointer<Int>?) -> sheaf_result {
    withGroup(group) { (handle) throws(SheafError) in
        let listHandle = try listForTheGroup(list, handle, "the list")
        let tag = try CString.text(tag, "the tag")
        var index = 0
        try listHandle.session.joinGroup(client: listHandle.makeClient) { (client, description, keepsItems) throws(SheafError) -> ListRun in
            index = try handle.group.add(description, tag: tag, keepsItems: keepsItems, client: client)
            return try runOf(handle.group, index)
        }
        handle.keep(listHandle, at: index)
        take(list)
        outIndex?.pointee = index
    }
}

@c @implementation
public func sheaf_group_add_each(_ group: OpaquePointer?, _ parent: OpaquePointer?,
                                 _ templates: UnsafePointer<UnsafePointer<CChar>?>?, _ levels: Int,
                                 _ child: OpaquePointer?, _ outIndex: UnsafeMutablePointer<Int>?) -> sheaf_result {
    withGroup(group) { (handle) throws(SheafError) in
        guard child == nil || child != parent else {
            throw SheafError(.invalidArgument, "the child list is the parent list: give the child a list of its own, or NULL")
        }
        let parentHandle = try listForTheGroup(parent, handle, "the parent list")
        let childHandle = try child.map { (child) throws(SheafError) in try listForTheGroup(child, handle, "the child list") }
        guard let templates, levels > 0 else { throw SheafError(.invalidArgument, "a fan-out needs at least one template") }
        guard levels <= 16 else { throw SheafError(.invalidArgument, "a fan-out has at most 16 levels, not \(levels)") }
        var texts: [String] = []
        for level in 0..<levels { texts.append(try CString.nonEmpty(templates[level], "template \(level)")) }
        let prototype = try childHandle.map { (child) throws(SheafError) in try child.session.prototype(client: child.makeClient) }
        var index = 0
        try parentHandle.session.joinGroup(client: parentHandle.makeClient) { (client, description, _) throws(SheafError) -> ListRun in
            index = try handle.group.addEach(parent: description, templates: texts, child: prototype?.description,
                                             keepsItems: prototype?.keepsItems ?? true, client: client)
            return try runOf(handle.group, index)
        }
        handle.keep(parentHandle, at: index)
        take(parent)
        take(child)
        outIndex?.pointee = index
    }
}

@c @implementation
public func sheaf_group_set_notify_fd(_ group: OpaquePointer?, _ fd: Int32) -> sheaf_result {
    withGroup(group) { (handle) throws(SheafError) in try handle.setNotifyFD(fd) }
}

@c @implementation
public func sheaf_group_start(_ group: OpaquePointer?, _ onDelta: sheaf_group_fn?,
                              _ userData: UnsafeMutableRawPointer?, _ destroy: sheaf_destroy_fn?) -> sheaf_result {
    registering(userData, destroy: destroy) { owned in
        withGroup(group) { (handle) throws(SheafError) in
            let target = handle.notifying()
            // The group drops this closure after its last delta: the user data goes then (and
            // the handle, which the closure holds so that a free from inside it frees nothing in use).
            try handle.group.start { delta in
                defer { target?.wake() }
                return withExtendedLifetime((owned, handle)) {
                    guard let onDelta else { return true }
                    let pointer = OpaquePointer(Unmanaged.passUnretained(handle).toOpaque())
                    let json = delta.snapshot?.delta.json ?? Array("[]".utf8)
                    let tag = OwnedCString(delta.tag)
                    let templates = delta.templates.map { OwnedCString(templatesJSON($0)) }
                    let items = json + [0]
                    // The C strings live until the callback returns (not only to their last use here).
                    return withExtendedLifetime((tag, templates)) {
                        items.withUnsafeBufferPointer { buffer in
                            var value = cGroupDelta(delta, tag: UnsafePointer(tag.pointer),
                                                    json: UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self),
                                                    length: buffer.count - 1, templates: templates.map { UnsafePointer($0.pointer) })
                            return handle.beingDelivered.during(json) { onDelta(pointer, &value, owned.pointer) == 0 }
                        }
                    }
                }
            }
            handle.keepUserData(owned)
            if let target { handle.group.whenFinished { target.wake() } }
        }
    }
}

@c @implementation
public func sheaf_group_start_pull(_ group: OpaquePointer?) -> sheaf_result {
    withGroup(group) { (handle) throws(SheafError) in
        var whenReady: (@Sendable () -> Void)? = nil
        if let target = handle.notifying() { whenReady = { target.wake() } }
        try handle.group.startPulling(whenReady: whenReady)
        handle.setPulling()
    }
}

@c @implementation
public func sheaf_group_next(_ group: OpaquePointer?, _ timeoutMs: Int64,
                             _ outDelta: UnsafeMutablePointer<UnsafePointer<sheaf_group_delta>?>?) -> sheaf_result {
    guard let handle = GroupHandle.from(group), let outDelta else {
        return failure(SheafError(.invalidArgument, "the group and out_delta must not be NULL"))
    }
    outDelta.pointee = nil
    guard handle.isPulling else {
        return failure(SheafError(.state, "the group was not started with sheaf_group_start_pull"), on: handle)
    }
    if timeoutMs != 0, CallbackContext.isInsideCallback {
        return failure(SheafError.blockingCallInsideCallback, on: handle)
    }
    switch handle.group.next(timeoutMilliseconds: timeoutMs < 0 ? nil : Int(clamping: timeoutMs)) {
    case .snapshot(let delta):
        outDelta.pointee = handle.handOut(GroupDeltaCopy(delta))
    case .end:
        break
    case .pending:
        return success(SHEAF_PENDING)
    }
    return success()
}

@c @implementation
public func sheaf_group_delta_has_long_digits(_ group: OpaquePointer?, _ outLong: UnsafeMutablePointer<Int32>?) -> sheaf_result {
    answerLongDigits(of: GroupHandle.from(group), "the group", into: outLong)
}

@c @implementation
public func sheaf_group_wait(_ group: OpaquePointer?) -> sheaf_result {
    guard let handle = GroupHandle.from(group) else { return failure(SheafError(.invalidArgument, "the group must not be NULL")) }
    if handle.isPulling, !CallbackContext.isInsideCallback { handle.group.closePulling() }
    do {
        let outcome = try handle.group.wait()
        if let error = outcome.error { return failure(error, on: handle) }
        handle.recordError(nil)
        return success()
    } catch {
        return failure(error, on: handle)
    }
}

@c @implementation
public func sheaf_group_cancel(_ group: OpaquePointer?) -> sheaf_result {
    guard let handle = GroupHandle.from(group) else { return failure(SheafError(.invalidArgument, "the group must not be NULL")) }
    handle.group.cancel()
    return success()
}

@c @implementation
public func sheaf_group_count(_ group: OpaquePointer?) -> Int {
    GroupHandle.from(group)?.group.count ?? 0
}

@c @implementation
public func sheaf_group_list(_ group: OpaquePointer?, _ index: Int) -> OpaquePointer? {
    guard let list = GroupHandle.from(group)?.list(at: index) else { return nil }
    return OpaquePointer(Unmanaged.passUnretained(list).toOpaque())
}
