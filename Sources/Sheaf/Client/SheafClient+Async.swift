#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The async API: lists decoded into `Decodable` items, as one array or as an `AsyncSequence` of
/// snapshots, and single requests decoded and encoded with `Codable`. It runs on the same core as
/// the C library: nothing blocks the caller's executor, and cancelling the task cancels the call.
extension SheafClient {
    // MARK: Lists

    /// Every item of the list, decoded, in order and de-duplicated (by the description's identity).
    /// Decoding happens on the list's own thread while the next pages are fetched.
    ///
    /// - Returns: every item, and why the list stopped: `.complete`, or fewer items when the
    ///   description's budgets stop the list early (its `maxItems`, `maxPages`, `maxRequests`),
    ///   which is not a failure.
    /// - Throws: `ListFailure` with the error (every field of `SheafError`) and every item decoded
    ///   before it (for an item that does not decode: every item before that one): an HTTP
    ///   failure after retries, a page that is not what the list describes, an item that does
    ///   not decode as `Item` (`.decoding`, naming the item's index and the JSON location inside
    ///   it), `.cancelled` when the task is cancelled.
    public func fetchAll<Item: Decodable & Sendable>(_ type: Item.Type, _ description: ListDescription,
                                                     decoder: JSONDecoder = JSONDecoder()) async throws(ListFailure<Item>) -> ListItems<Item> {
        var items: [Item] = []
        var snapshots = ListSnapshots<Item>(client: self, description: description, decoder: ItemDecoder(decoder: decoder),
                                      keepsPrefix: false).makeAsyncIterator()
        do throws(SheafError) {
            while let snapshot = try await snapshots.next() {
                items += snapshot.items
            }
        } catch {
            throw ListFailure(error: error, items: items + snapshots.driver.decodedBeforeFailure)
        }
        return ListItems(items: items, stopReason: snapshots.stopReason ?? .complete)
    }

    /// Every item of the list at `path` (joined to the base URL; may carry a query), its shape
    /// detected from the first page. See `fetchAll(_:_:decoder:)`.
    public func fetchAll<Item: Decodable & Sendable>(_ type: Item.Type, path: String,
                                                     decoder: JSONDecoder = JSONDecoder()) async throws(ListFailure<Item>) -> ListItems<Item> {
        try await fetchAll(type, ListDescription(path: path), decoder: decoder)
    }

    /// The list's snapshots, in order, as they arrive: each holds the items it added, decoded,
    /// the counts so far and the whole prefix on demand. Iterate with `for try await`; leaving
    /// the loop or cancelling the task cancels the list.
    public func snapshots<Item: Decodable & Sendable>(_ type: Item.Type, _ description: ListDescription,
                                                      decoder: JSONDecoder = JSONDecoder()) -> ListSnapshots<Item> {
        ListSnapshots(client: self, description: description, decoder: ItemDecoder(decoder: decoder), keepsPrefix: true)
    }

    /// The snapshots of the list at `path`. See `snapshots(_:_:decoder:)`.
    public func snapshots<Item: Decodable & Sendable>(_ type: Item.Type, path: String,
                                                      decoder: JSONDecoder = JSONDecoder()) -> ListSnapshots<Item> {
        snapshots(type, ListDescription(path: path), decoder: decoder)
    }

    // MARK: Single requests

    /// Sends `request` and returns the response, whatever its status.
    /// - Throws: `.invalidArgument` for a request that cannot be sent; the transport's failure
    ///   when no response came (after retries); `.cancelled` when the task is cancelled.
    public func response(for request: Request) async throws(SheafError) -> Response {
        try await exchange(request).response
    }

    /// Sends `request`: the response, and the request's error for it (a failing status, with the
    /// server's own fields; a download that could not be saved).
    private func exchange(_ request: Request) async throws(SheafError) -> (response: Response, error: SheafError?) {
        let run = try makeRequest(request)
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<(Response, SheafError?), SheafError>, Never>) in
                do throws(SheafError) {
                    try run.start()
                } catch {
                    return continuation.resume(returning: .failure(error))
                }
                run.whenFinished {
                    let (response, error) = run.outcome
                    continuation.resume(returning: response.map { .success(($0, error)) }
                        ?? .failure(error ?? SheafError(.internal, "a request ended without an outcome")))
                }
            }
        } onCancel: {
            run.cancel()
        }
        return try outcome.get()
    }

    /// GETs `path` and decodes the body as `Value`.
    /// - Throws: `.http` for a failing status (with the server's own error fields), `.decoding`
    ///   when the body is not a `Value` (naming the JSON location), and as `response(for:)`.
    public func fetch<Value: Decodable>(_ type: Value.Type, path: String, query: [Request.FormField] = [],
                                        headers: [HTTPHeader] = [], decoder: JSONDecoder = JSONDecoder()) async throws(SheafError) -> Value {
        var request = Request(method: "GET", path: path)
        request.query = query
        request.headers = headers
        return try decoded(type, try await exchange(request), decoder: decoder)
    }

    /// Sends `body` encoded as JSON with `method` to `path` and decodes the answer as `Value`.
    /// POST and PATCH are tried once unless `headers` carry an `Idempotency-Key`.
    /// - Throws: `.invalidArgument` when the body does not encode; otherwise as `fetch`.
    public func send<Value: Decodable, Body: Encodable>(_ type: Value.Type, method: String, path: String, body: Body,
                                                        headers: [HTTPHeader] = [], encoder: JSONEncoder = JSONEncoder(),
                                                        decoder: JSONDecoder = JSONDecoder()) async throws(SheafError) -> Value {
        var request = Request(method: method, path: path)
        request.headers = headers
        do {
            request.body = .bytes(Array(try encoder.encode(body)), contentType: "application/json")
        } catch {
            throw SheafError(.invalidArgument, "the body could not be encoded as JSON: \(error)")
        }
        return try decoded(type, try await exchange(request), decoder: decoder)
    }

    /// The body of a successful response decoded as `Value`; the request's error otherwise.
    private func decoded<Value: Decodable>(_ type: Value.Type, _ exchanged: (response: Response, error: SheafError?),
                                           decoder: JSONDecoder) throws(SheafError) -> Value {
        if let error = exchanged.error { throw error }
        let response = exchanged.response
        do {
            return try decoder.decode(Value.self, from: Data(response.body))
        } catch let error as DecodingError {
            var failure = DecodingFailure.error(error, type: Value.self, itemOffset: nil)
            failure.url = redactor.redact(response.url)
            throw failure
        } catch {
            throw SheafError(.decoding, "the body could not be decoded as \(Value.self): \(error)", url: redactor.redact(response.url))
        }
    }
}

/// A whole list's items, and why it stopped where it did (a budget's stop is no failure). A
/// collection of the items: index it, count it and iterate it as the array it holds.
public struct ListItems<Item: Sendable>: RandomAccessCollection, Sendable {
    /// The items, in list order.
    public let items: [Item]
    /// Why the list ended there: `.complete`, or the limit or budget of the description that
    /// stopped it.
    public let stopReason: StopReason

    public var startIndex: Int { items.startIndex }
    public var endIndex: Int { items.endIndex }
    public subscript(position: Int) -> Item { items[position] }
}

extension ListItems: Equatable where Item: Equatable {}
