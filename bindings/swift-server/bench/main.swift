// The driver of bench/swift_server.py: one measured run per process, one JSON object on stdout.
//
//   sheaf-server-bench sheaf --base URL --path PATH --expect N --page-size S [--window W]
//       SheafClient.fetchAll(Thing.self, ...) over AsyncHTTPClientTransport; without --window,
//       the client's default window (8, adapting up to 64), with it a fixed window of W. With
//       --learnt, the list runs once untimed first on the same client, as in a service whose
//       client has been in use: the timed list starts with the window the origin learnt.
//   sheaf-server-bench curl --base URL --path PATH --expect N --page-size S [--window W]
//       the same over Sheaf's libcurl transport (CurlTransport), for comparison.
//   sheaf-server-bench ahc --base URL --path PATH --expect N --page-size S --window W
//       AsyncHTTPClient alone, as a skilled Swift user writes it: page one, its total read, then
//       the other pages in a task group with W in flight, each decoded with JSONDecoder, the
//       items put in order at the end.
//
// Both share one HTTPClient made with AsyncHTTPClientTransport.configuration(for:) (no
// redirects, 64 connections per host). The list is the test API's /anchor. Every run checks it
// got items 0..<N in order after the clock stopped; a wrong result exits 3.
import AsyncHTTPClient
import Foundation
import Sheaf
import SheafAsyncHTTPClient
import SheafCurl

struct Thing: Decodable, Sendable {
    let id: Int
    let name: String
}

struct AnchorPage: Decodable {
    let items: [Thing]
    let total: Int
}

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func required(_ name: String) -> String {
    guard let value = option(name) else { fail("missing \(name)") }
    return value
}

func fail(_ why: String) -> Never {
    FileHandle.standardError.write(Data("sheaf-server-bench: \(why)\n".utf8))
    exit(3)
}

func check(_ things: [Thing], _ expected: Int) {
    guard things.count == expected else { fail("\(things.count) items, expected \(expected)") }
    for (index, thing) in things.enumerated() where thing.id != index { fail("item \(index) has id \(thing.id)") }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

let mode = CommandLine.arguments.dropFirst().first ?? ""
let base = required("--base"), path = required("--path")
let expected = Int(required("--expect"))!, pageSize = Int(required("--page-size"))!
let window = option("--window").flatMap { Int($0) }
let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: AsyncHTTPClientTransport.configuration())
let clock = ContinuousClock()

func page(_ number: Int) async throws -> AnchorPage {
    let separator = path.contains("?") ? "&" : "?"
    let request = HTTPClientRequest(url: "\(base)\(path)\(separator)page=\(number)&per_page=\(pageSize)")
    let response = try await http.execute(request, timeout: .seconds(30))
    guard response.status == .ok else { fail("page \(number): \(response.status)") }
    let body = try await response.body.collect(upTo: 64 << 20)
    return try JSONDecoder().decode(AnchorPage.self, from: Data(body.readableBytesView))
}

var things: [Thing] = []
switch mode {
case "sheaf", "curl":
    var description = ListDescription(path: path)
    description.signals[.items] = .body(JSONPointer("/items")!)
    description.signals[.next] = .body(JSONPointer("/next_page")!)
    description.signals[.total] = .body(JSONPointer("/total")!)
    for signal in Signal.allCases where description.signals[signal] == nil { description.signals[signal] = SignalSource.none }
    description.paging = .pageNumber(.init(parameter: "page", first: 1, size: .init(parameter: "per_page", value: pageSize)))
    var configuration = ClientConfiguration()
    configuration.maxPages = 100_000
    if let window {
        configuration.window = window
        configuration.maxWindow = max(configuration.maxWindow, window)
        configuration.adaptsWindow = false
    }
    let transport: any Transport = mode == "curl" ? CurlTransport() : AsyncTransportAdapter(AsyncHTTPClientTransport(client: http))
    let client = try SheafClient(baseURL: base, transport: transport, configuration: configuration)
    if CommandLine.arguments.contains("--learnt") {
        check(try await client.fetchAll(Thing.self, description).items, expected)
    }
    let took = try await clock.measure {
        things = try await client.fetchAll(Thing.self, description).items
    }
    check(things, expected)
    print(#"{"seconds": \#(seconds(took)), "items": \#(things.count)}"#)
case "ahc":
    let width = window ?? 64
    let took = try await clock.measure {
        let first = try await page(1)
        let pages = (first.total + pageSize - 1) / pageSize
        var byPage: [[Thing]] = Array(repeating: [], count: pages)
        byPage[0] = first.items
        try await withThrowingTaskGroup(of: (Int, [Thing]).self) { group in
            var next = 2
            while next <= pages && next - 2 < width {
                let number = next
                group.addTask { (number, try await page(number).items) }
                next += 1
            }
            while let (number, items) = try await group.next() {
                byPage[number - 1] = items
                if next <= pages {
                    let number = next
                    group.addTask { (number, try await page(number).items) }
                    next += 1
                }
            }
        }
        things = byPage.flatMap { $0 }
    }
    check(things, expected)
    print(#"{"seconds": \#(seconds(took)), "items": \#(things.count)}"#)
default:
    fail("usage: sheaf-server-bench sheaf|curl|ahc --base URL --path PATH --expect N --page-size S [--window W]")
}
try await http.shutdown().get()
