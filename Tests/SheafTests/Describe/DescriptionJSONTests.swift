import XCTest
@testable import Sheaf

/// A seeded generator, so a failing description can be made again.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// JSON text of `value` (members in the order given).
private func text(_ value: JSONValue) -> String {
    switch value {
    case .null: "null"
    case .bool(let flag): flag ? "true" : "false"
    case .number(let number): number
    case .string(let string): JSONText.quote(string)
    case .array(let elements): "[" + elements.map(text).joined(separator: ",") + "]"
    case .object(let members): "{" + members.map { JSONText.quote($0.name) + ":" + text($0.value) }.joined(separator: ",") + "}"
    }
}

/// `value` with every object's members sorted by name: parsed JSON compared as JSON compares.
private func canonical(_ value: JSONValue) -> JSONValue {
    switch value {
    case .array(let elements): .array(elements.map(canonical))
    case .object(let members): .object(members.map { ($0.name, canonical($0.value)) }.sorted { $0.0 < $1.0 })
    default: value
    }
}

private func parsed(_ bytes: [UInt8]) throws -> JSONValue { canonical(try JSONValue(parsing: bytes)) }
private func parsed(_ string: String) throws -> JSONValue { try parsed(Array(string.utf8)) }

/// describe(set(x)): the description `json` spells, printed as sheaf_list_description prints it.
private func describedAgain(_ json: String) throws -> JSONValue {
    try parsed(try ListDescription(path: "/things", json: Array(json.utf8)).json(resolution: nil, plan: nil))
}

/// The message `json` is refused with.
private func refusal(_ json: String, file: StaticString = #filePath, line: UInt = #line) -> String {
    do {
        _ = try ListDescription(path: "/things", json: Array(json.utf8))
        XCTFail("\(json) was accepted", file: file, line: line)
        return ""
    } catch {
        XCTAssertEqual(error.code, .invalidArgument, file: file, line: line)
        return error.message
    }
}

/// A whole description as the library prints it for a list that has not run.
private func generated(_ random: inout SplitMix64) -> JSONValue {
    func pick<T>(_ choices: [T]) -> T { choices.randomElement(using: &random)! }
    func whole(from low: Int) -> JSONValue {
        .number(String(pick([low, low + 1, Int.random(in: low...1000, using: &random), 1 << 53,
                             Int.random(in: low...(1 << 53), using: &random)])))
    }
    let kind = pick(Paging.kindNames)
    let takesParameter = ["page_number", "offset", "cursor"].contains(kind)
    let numbered = kind == "page_number" || kind == "offset"
    let sizeParameter: String? = takesParameter ? pick([nil, "per_page", "limit", "page[size]", "größe"]) : nil
    let size: JSONValue = sizeParameter == nil || pick([true, false, false]) ? .null : whole(from: 1)
    let paging: JSONValue = .object([
        ("kind", .string(kind)),
        ("param", takesParameter ? .string(pick(["page", "offset", "page[number]", "$skip", "pageToken", "ä"])) : .null),
        ("first", numbered ? whole(from: 0) : .number("0")),
        ("size_param", sizeParameter.map(JSONValue.string) ?? .null),
        ("size", size),
        ("detected", .bool(false)),
    ])
    var signals: [(name: String, value: JSONValue)] = []
    for signal in Signal.allCases {
        let kinds = signal == .identity ? ["null", "item"] : ["null", "detect"] + signal.sourceNames
        var source = pick(kinds)
        if signal == .cursor {
            // Cursor paging reads a cursor; any other fixed paging has none to send.
            if kind == "cursor", source == "null" { source = "detect" }
            if kind != "cursor", kind != "detect", source != "null" { source = pick(["null", "detect"]) }
        }
        let location: JSONValue
        switch source {
        case "body", "item", "last_item": location = .string(pick(["", "/items", "/a/b/0", "/a~1b", "/~0t", "/ünï", "/\"q\""]))
        case "header": location = .string(pick(["X-Total", "X-Next-Page", "Content-Range", "x!#$%&'*+.^_`|~1"]))
        case "link": location = .string(pick(["next", "last", "https://example.com/rel/more"]))
        default: location = .null
        }
        signals.append((signal.rawValue, source == "null" ? .null
            : .object([("source", .string(source)), ("where", location), ("detected", .bool(false))])))
    }
    var members: [(name: String, value: JSONValue)] = [("paging", paging), ("signals", .object(signals)), ("plan", .null)]
    if pick([true, false, false, false]) {
        let preset = pick(Preset.all)
        members += [("preset", .string(preset.name)), ("summary", .string(preset.summary))]
        // A preset's range filter is the description's unless it says otherwise.
        if let split = preset.split { members.append(("split", try! JSONValue(parsing: Array(split.json.utf8)))) }
    } else {
        members.append(("preset", .null))
    }
    return .object(members)
}

final class DescriptionJSONTests: XCTestCase {
    // MARK: Round trips

    func testEveryPresetsDescriptionSetAndDescribedIsItself() throws {
        for preset in Preset.all {
            let printed = String(decoding: preset.descriptionJSON, as: UTF8.self)
            XCTAssertEqual(try describedAgain(printed), try parsed(printed), preset.name)
            XCTAssertEqual(try describedAgain(#"{"preset": \#(JSONText.quote(preset.name))}"#), try parsed(printed),
                           "a preset is a description: \(preset.name)")
        }
    }

    func testGeneratedDescriptionsSetAndDescribedAreThemselves() throws {
        var random = SplitMix64(state: 20_261_126)
        for _ in 0..<2000 {
            let description = generated(&random)
            XCTAssertEqual(try describedAgain(text(description)), canonical(description), text(description))
        }
    }

    func testARunsDescriptionIsTakenBackWithWhatWasDetectedPinned() throws {
        let body = #"{"results": [{"id": 1}], "next": "https://api.example.com/things?page=2", "count": 40}"#
        let resolution = try Detector.resolve(ListDescription(path: "/things"),
                                              HTTPResponse(status: 200, headers: [], body: Array(body.utf8)),
                                              url: "https://api.example.com/things")
        let printed = resolution.description.json(resolution: resolution, plan: "parallel")
        XCTAssertTrue(String(decoding: printed, as: UTF8.self).contains(#""detected":true"#))
        let again = try ListDescription(path: "/things", json: printed)
        XCTAssertEqual(again.paging, resolution.description.paging)
        for signal in Signal.allCases {
            XCTAssertEqual(again.source(of: signal), resolution.description.source(of: signal), signal.rawValue)
        }
        // The output-only fields come back as a list that has not run prints them.
        XCTAssertEqual(try parsed(again.json(resolution: nil, plan: nil)),
                       try parsed(resolution.description.json(resolution: nil, plan: nil)))
    }

    func testAPartialDescriptionLeavesTheRestToThePresetOrToDetection() throws {
        let github = try ListDescription(path: "/issues", json: Array(#"{"preset": "github", "paging": {"size": 100}}"#.utf8))
        XCTAssertEqual(github.paging, .pageNumber(.init(parameter: "page", first: 1, size: .init(parameter: "per_page", value: 100))))
        XCTAssertEqual(github.source(of: .next), .link("next"))
        let items = try ListDescription(path: "/things", json: Array(#"{"signals": {"items": {"source": "body", "where": "/data"}}}"#.utf8))
        XCTAssertEqual(items.paging, .detect)
        XCTAssertEqual(items.source(of: .items), .body(JSONPointer("/data")!))
        XCTAssertEqual(items.source(of: .total), .detect)
        XCTAssertEqual(items.source(of: .identity), .none)
    }

    func testADescriptionKeepsThePathQueryAndBudgetsAndARefusedOneChangesNothing() throws {
        var description = ListDescription(path: "/things")
        description.query = [("state", "open")]
        description.maxItems = 10
        try description.describe(json: Array(#"{"paging": {"kind": "next"}}"#.utf8))
        XCTAssertEqual(description.path, "/things")
        XCTAssertEqual(description.query.first?.name, "state")
        XCTAssertEqual(description.maxItems, 10)
        XCTAssertEqual(description.paging, .next)
        XCTAssertThrowsError(try description.describe(json: Array(#"{"paging": {"kind": "single"}, "signals": {"x": null}}"#.utf8)))
        XCTAssertEqual(description.paging, .next)
    }

    // MARK: Refusals

    func testAnUnknownFieldIsRefusedNamingIt() {
        XCTAssertTrue(refusal(#"{"pagin": {}}"#).hasPrefix("the description's /pagin: unknown field"))
        XCTAssertTrue(refusal(#"{"paging": {"knd": "next"}}"#).hasPrefix("the description's /paging/knd: unknown field"))
        XCTAssertTrue(refusal(#"{"signals": {"totl": null}}"#).hasPrefix("the description's /signals/totl: unknown field"))
        XCTAssertTrue(refusal(#"{"a/b~": 1}"#).hasPrefix("the description's /a~1b~0: unknown field"))
        XCTAssertEqual(refusal(#"{"plan": null, "plan": null}"#), "the description's /plan: given twice")
    }

    func testNumbersOutOfRangeAreRefusedNeverTrapped() {
        let numbered = #"{"paging": {"kind": "offset", "param": "o", "first": %@}}"#
        for (number, message) in [("-1", "must be a whole number of 0 or more, not -1"),
                                  ("1.5", "must be a whole number (no fraction or exponent), not 1.5"),
                                  ("1e400", "must be a whole number (no fraction or exponent), not 1e400"),
                                  ("9007199254740993", "is out of range: at most 2^53 (9007199254740992), not 9007199254740993"),
                                  ("99999999999999999999999999999999999999", "is out of range"),
                                  ("-99999999999999999999999999999999999999", "must be a whole number of 0 or more"),
                                  ("true", "must be a whole number or null, not a boolean")] {
            let json = numbered.replacingOccurrences(of: "%@", with: number)
            XCTAssertTrue(refusal(json).hasPrefix("the description's /paging/first: " + message), json)
        }
        XCTAssertNoThrow(try ListDescription(path: "/", json: Array(numbered.replacingOccurrences(of: "%@", with: "-0").utf8)))
        let size = #"{"paging": {"kind": "cursor", "param": "c", "size_param": "limit", "size": 0}}"#
        XCTAssertTrue(refusal(size).hasPrefix("the description's /paging/size: a page size parameter needs"))
    }

    func testValuesAreRefusedWithWhatIsAllowed() {
        XCTAssertEqual(refusal(#"{"paging": {"kind": "pages"}}"#),
                       #"the description's /paging/kind: the paging kind must be one of detect, single, next, page_number, offset, cursor; not "pages""#)
        XCTAssertEqual(refusal(#"{"signals": {"total": {"source": "link", "where": "last"}}}"#),
                       "the description's /signals/total/source: the total signal cannot be read from link; it can be read from detect, body, header")
        XCTAssertEqual(refusal(#"{"signals": {"identity": {"source": "detect"}}}"#),
                       "the description's /signals/identity/source: the identity signal cannot be read from detect; it can be read from item (or none: null)")
        XCTAssertTrue(refusal(#"{"signals": {"items": {"source": "body", "where": "items"}}}"#)
            .hasPrefix(#"the description's /signals/items/where: "items" is not a JSON pointer"#))
        XCTAssertTrue(refusal(#"{"paging": {"kind": "next", "size_param": "limit", "size": 5}}"#)
            .hasPrefix("the description's /paging/size_param: a page size goes with page_number, offset or cursor paging"))
        XCTAssertTrue(refusal(#"{"paging": {"kind": "cursor", "param": "c"}, "signals": {"cursor": null}}"#)
            .hasPrefix("the description's /signals/cursor: cursor paging needs a cursor signal"))
        XCTAssertTrue(refusal(#"{"preset": "githb"}"#).hasPrefix(#"the description's /preset: unknown preset "githb"; known presets: anchor"#))
        XCTAssertTrue(refusal(#"{"summary": "mine"}"#).hasPrefix("the description's /summary: is printed, not read"))
        XCTAssertTrue(refusal(#"{"plan": "fast"}"#).hasPrefix("the description's /plan: is printed, not read"))
        XCTAssertEqual(refusal("[]"), "the description: must be a JSON object, not an array")
        XCTAssertTrue(refusal(#"{"paging": "#).hasPrefix("the description is not JSON"))
    }

    func testTheCSettersAndTheJSONFormShareTheirChecks() {
        // The C setter reports the sentence alone; the JSON form names the field before it.
        do {
            _ = try Paging.described(kind: "page_number", parameter: "page", first: -1, sizeParameter: nil, size: nil)
            XCTFail("accepted")
        } catch {
            XCTAssertEqual(error.field, "first")
            XCTAssertEqual(error.asError.message, "the first page number or offset must be 0 or more (at most 2^53), not -1")
        }
        do {
            _ = try SignalSource.described(.total, kind: "header", where: "X Total")
            XCTFail("accepted")
        } catch {
            XCTAssertEqual(error.field, "where")
            XCTAssertTrue(refusal(#"{"signals": {"total": {"source": "header", "where": "X Total"}}}"#)
                .hasSuffix(error.message))
        }
    }
}
