import Dispatch

/// Completes the nested connections of a GraphQL list's nodes (`GraphQLConnection.nested`): for
/// each node whose connection says `hasNextPage`, the rest is fetched by the connection's own
/// query (a list of its own, on the same client: it shares the origin's window with the outer
/// list, which goes on meanwhile), and the node is rewritten to hold every node of it.
///
/// A page is handed back whole (`complete`), its items in their order; a node's list that fails
/// fails the page, naming the node and the connection. `cancel` stops every list in flight.
///
/// The outer list is a walk: each of its pages waits for the one before, and a window full of
/// nested requests would hold every one of them back by a request's time. So the nested lists
/// run at most one fewer than the origin's window at once; the others wait their turn, in order.
final class NestedCompletion: Sendable {
    private let client: SheafClient
    private let outer: ListDescription
    private let nested: [NestedConnection]
    private let pace: OriginPace
    private struct Runs {
        var next = 0
        /// Every list made and not finished, started or waiting.
        var live: [Int: ListRun] = [:]
        var waiting: [Int] = []
        var running: Set<Int> = []
        var cancelled = false
    }
    private let runs = Locked(Runs())

    /// One connection of one node that has more pages.
    struct Need: Sendable {
        let item: Int
        let connection: Int
    }

    init?(client: SheafClient, description: ListDescription) {
        guard let graphQL = description.graphQL, !graphQL.nested.isEmpty else { return nil }
        self.client = client
        outer = description
        nested = graphQL.nested
        pace = client.pace(for: (try? client.firstURL(of: description)) ?? client.baseURL)
    }

    /// The completion of `page`'s nodes, to start once the page is handed in (`done` is called
    /// once, with the page whole or the first failure); nil when no node has more.
    func completion(of page: Page, _ done: @escaping @Sendable (Result<Page, SheafError>) -> Void) -> (() -> Void)? {
        let needs = needs(page)
        return needs.isEmpty ? nil : { self.complete(page, needs, done) }
    }

    /// The connections of `page`'s nodes that have more pages.
    private func needs(_ page: Page) -> [Need] {
        let flags = nested.map { JSONPointer(tokens: $0.field.tokens + ["pageInfo", "hasNextPage"]) }
        return page.body.withUnsafeBufferPointer { buffer in
            let scanner = JSONScanner(buffer)
            return page.items.indices.flatMap { item in
                flags.indices.compactMap { connection -> Need? in
                    guard let flag = scanner.locate(flags[connection], in: page.items[item]),
                          buffer[flag.lowerBound] == UInt8(ascii: "t") else { return nil }
                    return Need(item: item, connection: connection)
                }
            }
        }
    }

    /// Fetches what `needs` lack and calls `done` once with the page whole, or the first failure.
    private func complete(_ page: Page, _ needs: [Need], _ done: @escaping @Sendable (Result<Page, SheafError>) -> Void) {
        // Only the nodes completed are parsed and written out again; the others keep their bytes.
        let completed = Set(needs.map(\.item))
        let items = page.items.indices.map { completed.contains($0) ? JSONValue.parsing(Array(page.body[page.items[$0]])) : nil }
        let left = Locked((count: needs.count, items: items, failed: false, runs: [Int]()))
        @Sendable func finish(_ need: Need, _ result: Result<[JSONValue], SheafError>) {
            let ended = left.withLock { state -> Result<Page, SheafError>? in
                guard !state.failed else { return nil }
                switch result {
                case .failure(let error):
                    state.failed = true
                    return .failure(error)
                case .success(let rest):
                    do throws(SheafError) {
                        state.items[need.item] = try whole(state.items[need.item], nested[need.connection], with: rest)
                    } catch {
                        state.failed = true
                        return .failure(error)
                    }
                    state.count -= 1
                    return state.count == 0 ? .success(rebuilt(page, state.items)) : nil
                }
            }
            guard let ended else { return }
            if case .failure = ended { left.withLock { $0.runs }.forEach { cancel($0) } }
            done(ended)
        }
        for need in needs {
            guard let node = items[need.item] else {
                return finish(need, .failure(SheafError(.badPage, "\(page.url): item \(need.item + 1) is not JSON", url: page.url)))
            }
            do throws(SheafError) {
                let key = try start(node, nested[need.connection], item: need.item, url: page.url) { finish(need, $0) }
                left.withLock { $0.runs.append(key) }
            } catch {
                return finish(need, .failure(error))
            }
        }
    }

    /// Stops every list in flight or waiting (the outer list ended).
    func cancel() {
        let live = runs.withLock { state -> [ListRun] in
            state.cancelled = true
            defer { (state.live, state.waiting) = ([:], []) }
            return Array(state.live.values)
        }
        live.forEach { $0.cancel() }
    }

    private func cancel(_ key: Int) {
        runs.withLock { state -> ListRun? in
            state.waiting.removeAll { $0 == key }
            return state.live.removeValue(forKey: key)
        }?.cancel()
    }

    /// Starts the lists waiting while fewer than the window, less the outer walk's place, run.
    private func startWaiting(finished: Int? = nil) {
        let window = pace.window
        let due = runs.withLock { state -> [ListRun] in
            if let finished { state.running.remove(finished) }
            var due: [ListRun] = []
            while state.running.count < max(1, window - 1), !state.waiting.isEmpty {
                let key = state.waiting.removeFirst()
                guard let run = state.live[key] else { continue }
                state.running.insert(key)
                due.append(run)
            }
            return due
        }
        for run in due {
            do throws(SheafError) {
                try run.start()
            } catch {
                run.cancel() // its whenFinished reports the failure as the list's
            }
        }
    }

    /// Starts the list of the rest of `node`'s connection, after its end cursor.
    private func start(_ node: JSONValue, _ connection: NestedConnection, item: Int, url: String,
                       _ ended: @escaping @Sendable (Result<[JSONValue], SheafError>) -> Void) throws(SheafError) -> Int {
        let held = node.at(connection.field.tokens)
        guard let id = node[connection.id], id != .null else {
            throw SheafError(.badPage, "\(url): item \(item + 1) has no \(connection.id) to complete its \(connection.field) by",
                             url: url, jsonPointer: "/" + connection.id)
        }
        let cursor = held?.at(["pageInfo", "endCursor"]) ?? .null
        var description = ListDescription(path: outer.path)
        description.query = outer.query
        let variables = JSONValue.object([(connection.id, id), (connection.after, cursor)])
        description.request = ListRequest(method: outer.request?.method ?? "POST", contentType: outer.request?.contentType ?? "application/json",
                                          body: Array(JSONValue.object([("query", .string(connection.query)), ("variables", variables)]).text.utf8))
        description.readGraphQL(GraphQLConnection(connection: connection.connection, first: connection.first, pageSize: connection.pageSize,
                                                  after: connection.after, allowsPartial: outer.graphQL?.allowsPartial ?? false))
        // The total is the node's whole connection, of which this list reads the rest: checked here.
        description.signals[.total] = SignalSource.none
        let run = try ListRun(client: client, description: description, keepsItems: true, consumer: .nobody)
        let key = runs.withLock { state -> Int? in
            guard !state.cancelled else { return nil }
            state.next += 1
            state.live[state.next] = run
            state.waiting.append(state.next)
            return state.next
        }
        guard let key else { throw SheafError(.cancelled, "the list ended") }
        let name = "\(connection.field) of the node with \(connection.id) \(id.text)"
        run.whenFinished { [weak self] in
            self?.runs.withLock { _ = $0.live.removeValue(forKey: key) }
            self?.startWaiting(finished: key)
            guard let outcome = run.outcome else { return }
            if let error = outcome.error {
                var named = error
                named.message = "the nested connection \(name): \(error.message)"
                return ended(.failure(named))
            }
            guard case .array(let rest)? = JSONValue.parsing(run.prefixJSON()) else {
                return ended(.failure(SheafError(.internal, "the nested connection \(name): its items are not an array")))
            }
            ended(.success(rest))
        }
        startWaiting()
        return key
    }

    /// `node` with `rest` after the nodes (or edges) its connection holds, and no next page;
    /// refused where the connection's totalCount says otherwise, or where `rest` repeats a node
    /// it held (by the nested connection's id field: a server that ignores the cursor variable
    /// serves the first nodes again).
    private func whole(_ node: JSONValue?, _ connection: NestedConnection, with rest: [JSONValue]) throws(SheafError) -> JSONValue? {
        guard let node, var held = node.at(connection.field.tokens) else { return node }
        let edges = held["nodes"] == nil && held["edges"] != nil
        guard case .array(let first)? = held[edges ? "edges" : "nodes"] else { return node }
        let heldIDs = Set(first.compactMap { (edges ? $0["node"] : $0)?[connection.id]?.text })
        if let repeated = rest.first(where: { $0[connection.id].map { heldIDs.contains($0.text) } ?? false }) {
            throw SheafError(.repeatedPage, "the nested connection \(connection.field) of the node with \(connection.id) "
                             + "\(node[connection.id]?.text ?? "?") repeats the node \(repeated[connection.id]!.text) it held: the server "
                             + "ignores the cursor variable \(connection.after), or the query does not send it")
        }
        let all = first + (edges ? rest.map { JSONValue.object([("node", $0)]) } : rest)
        if case .number(let digits)? = held["totalCount"], let total = Int(digits), total != all.count {
            throw SheafError(.incomplete, "the nested connection \(connection.field) of the node with \(connection.id) \(node[connection.id]?.text ?? "?") "
                             + "holds \(all.count) nodes, but its totalCount is \(total)")
        }
        held = held.setting(.array(all), at: [edges ? "edges" : "nodes"]) ?? held
        held = held.setting(.bool(false), at: ["pageInfo", "hasNextPage"]) ?? held
        return node.setting(held, at: connection.field.tokens[...])
    }

    /// `page` with `items` in place of its own where they are not nil, its signals kept.
    private func rebuilt(_ page: Page, _ items: [JSONValue?]) -> Page {
        var whole = page
        whole.body = []
        whole.items = []
        for (index, item) in items.enumerated() {
            let start = whole.body.count
            if let item { whole.body += Array(item.text.utf8) } else { whole.body += page.body[page.items[index]] }
            whole.items.append(start..<whole.body.count)
        }
        return whole
    }
}
