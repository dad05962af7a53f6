import Foundation
import Synchronization
import XCTest
@testable import Sheaf

/// A fake list endpoint answering in the anchor shape
/// `{"items":[{"id":i,"name":"item-i"},...],"next_page":url|null,"total":n}`,
/// paged by `page` (from 1) and `per_page`, for a `ScriptedTransport`.
struct FakeAnchorAPI: Sendable {
    /// Items in the list.
    var count: Int
    /// The page size when the request names none.
    var defaultPageSize = 10
    /// The largest page size honoured (larger requests are silently capped).
    var cap = 100
    /// The total the pages report; nil reports `count`.
    var claimedTotal: Int? = nil
    var reportsTotal = true
    var reportsNext = true

    /// The answer to `request`.
    func reply(_ request: HTTPRequest) -> ScriptedReply {
        .json(body(request.url))
    }

    /// The body of the page at `url`.
    func body(_ url: String) -> String {
        let page = Self.query(url, "page").flatMap { Int($0) } ?? 1
        let size = min(Self.query(url, "per_page").flatMap { Int($0) } ?? defaultPageSize, cap)
        let start = (page - 1) * size
        let items = start < count ? Array(start..<min(start + size, count)) : []
        var text = #"{"items":"# + Self.itemsJSON(items)
        if reportsNext {
            let next = start + size < count ? "\"" + Self.settingQuery(url, "page", String(page + 1)) + "\"" : "null"
            text += #","next_page":"# + next
        }
        if reportsTotal { text += #","total":"# + String(claimedTotal ?? count) }
        return text + "}"
    }

    static func itemsJSON(_ ids: [Int]) -> String {
        "[" + ids.map { #"{"id":\#($0),"name":"item-\#($0)"}"# }.joined(separator: ",") + "]"
    }

    static func query(_ url: String, _ name: String) -> String? {
        URLComponents(string: url)?.queryItems?.first { $0.name == name }?.value
    }

    static func settingQuery(_ url: String, _ name: String, _ value: String) -> String {
        var components = URLComponents(string: url)!
        var items = components.queryItems ?? []
        if let index = items.firstIndex(where: { $0.name == name }) {
            items[index].value = value
        } else {
            items.append(URLQueryItem(name: name, value: value))
        }
        components.queryItems = items
        return components.string!
    }
}

/// The ids of a JSON array of `{"id":...}` items.
func itemIDs(_ json: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> [Int] {
    guard let array = try? JSONSerialization.jsonObject(with: Data(json)) as? [[String: Any]] else {
        XCTFail("not a JSON array of objects: \(String(decoding: json.prefix(200), as: UTF8.self))", file: file, line: line)
        return []
    }
    return array.map { ($0["id"] as? Int) ?? -1 }
}

/// A lock-protected value shared with callbacks.
final class Shared<Value: Sendable>: Sendable {
    private let box: Mutex<Value>

    init(_ value: Value) {
        box = Mutex(value)
    }

    var value: Value { box.withLock { $0 } }

    func update<R: Sendable>(_ body: (inout Value) -> R) -> R {
        box.withLock { body(&$0) }
    }
}

/// Waits for `run` at most `seconds`; on timeout cancels it, records a failure and returns nil.
func outcome(of run: ListRun, within seconds: Double = 10,
             file: StaticString = #filePath, line: UInt = #line) -> ListOutcome? {
    let result = Shared<Result<ListOutcome, SheafError>?>(nil)
    let finished = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        let outcome = Result { () throws(SheafError) -> ListOutcome in try run.wait() }
        result.update { $0 = outcome }
        finished.signal()
    }
    guard finished.wait(timeout: .now() + seconds) == .success else {
        XCTFail("the list did not finish within \(seconds) s", file: file, line: line)
        run.cancel()
        _ = finished.wait(timeout: .now() + 5)
        return nil
    }
    switch result.value {
    case .success(let outcome): return outcome
    case .failure(let error):
        XCTFail("wait() threw \(error)", file: file, line: line)
        return nil
    case nil: return nil
    }
}
