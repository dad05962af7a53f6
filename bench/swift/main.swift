// The Swift driver of bench/swift.py: one measured run per process, one JSON object on stdout.
//
//   sheaf-swift-bench async --base URL --path PATH --expect N --page-size S
//       SheafClient.fetchAll(Thing.self, ...): the async API, items decoded as they arrive.
//   sheaf-swift-bench raw --base URL --path PATH --expect N --page-size S
//       the blocking fetchAll (the JSON array, as C's sheaf_list_fetch_all gives it), then
//       JSONDecoder alone on those bytes, timed apart ("decode_seconds").
//
// The list is the test API's /anchor, paged by `page` and `per_page`, its total read. Every run
// checks it got items 0..<N in order, after the clock stopped; a wrong result exits 3.
import Foundation
import Sheaf
import SheafCurl

struct Thing: Decodable, Sendable {
    let id: Int
    let name: String
}

func option(_ name: String) -> String {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else {
        FileHandle.standardError.write(Data("missing \(name)\n".utf8))
        exit(2)
    }
    return arguments[index + 1]
}

func fail(_ why: String) -> Never {
    FileHandle.standardError.write(Data("sheaf-swift-bench: \(why)\n".utf8))
    exit(3)
}

func check(_ things: [Thing], _ expected: Int) {
    guard things.count == expected else { fail("\(things.count) items, expected \(expected)") }
    for (index, thing) in things.enumerated() where thing.id != index { fail("item \(index) has id \(thing.id)") }
}

let mode = CommandLine.arguments.dropFirst().first ?? ""
let expected = Int(option("--expect"))!
var description = ListDescription(path: option("--path"))
description.signals[.items] = .body(JSONPointer("/items")!)
description.signals[.next] = .body(JSONPointer("/next_page")!)
description.signals[.total] = .body(JSONPointer("/total")!)
for signal in Signal.allCases where description.signals[signal] == nil { description.signals[signal] = SignalSource.none }
description.paging = .pageNumber(.init(parameter: "page", first: 1, size: .init(parameter: "per_page", value: Int(option("--page-size"))!)))
var configuration = ClientConfiguration()
configuration.maxPages = 100_000
configuration.window = 8
configuration.adaptsWindow = false // the C driver's fixed window 8: the same plan on both sides
let client = try SheafClient(baseURL: option("--base"), transport: CurlTransport(), configuration: configuration)
let clock = ContinuousClock()

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

switch mode {
case "async":
    var things: [Thing] = []
    let took = try await clock.measure {
        things = try await client.fetchAll(Thing.self, description).items
    }
    check(things, expected)
    print(#"{"seconds": \#(seconds(took)), "items": \#(things.count)}"#)
case "raw":
    var json: [UInt8] = []
    let fetched = try clock.measure {
        let (bytes, outcome) = try client.fetchAll(description)
        guard outcome == .complete else { fail("the list ended \(outcome)") }
        json = bytes
    }
    var things: [Thing] = []
    let data = Data(json)
    let decoded = try clock.measure {
        things = try JSONDecoder().decode([Thing].self, from: data)
    }
    check(things, expected)
    print(#"{"seconds": \#(seconds(fetched)), "decode_seconds": \#(seconds(decoded)), "bytes": \#(json.count)}"#)
default:
    fail("usage: sheaf-swift-bench async|raw --base URL --path PATH --expect N --page-size S")
}
