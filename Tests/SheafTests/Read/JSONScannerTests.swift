import XCTest
@testable import Sheaf

/// Scans `bytes` with the given targets (a pointer each; "*" suffix on the text asks for the
/// array's element ranges) and returns the filled targets.
private func scan(_ bytes: [UInt8], _ pointers: [String] = []) throws -> [JSONScanner.Target] {
    var targets = pointers.map { text in
        let collects = text.hasSuffix("*")
        return JSONScanner.Target(pointer: JSONPointer(collects ? String(text.dropLast()) : text)!,
                                  collectsElements: collects)
    }
    try bytes.withUnsafeBufferPointer { buffer in
        try JSONScanner(buffer).scanDocument(&targets)
    }
    return targets
}

private func scan(_ text: String, _ pointers: [String] = []) throws -> [JSONScanner.Target] {
    try scan(Array(text.utf8), pointers)
}

/// The text of `range` in `text`.
private func slice(_ text: String, _ range: Range<Int>?) -> String? {
    guard let range else { return nil }
    return String(decoding: Array(text.utf8)[range], as: UTF8.self)
}

final class JSONScannerTests: XCTestCase {
    // MARK: Valid documents

    func testAcceptsEveryKindOfValueAsAWholeDocument() throws {
        let documents = [
            "0", "-0", "7", "-12", "3.25", "-0.5", "1e9", "1E+9", "2.5e-3", "123456789012345678901234567890",
            "true", "false", "null", #""""#, #""text""#, "[]", "{}", " \t\r\n[ 1 , 2 ]\n ",
            #"{"a":[1,{"b":null}],"c":"d","e":{}}"#, #"[[[]],[{}],"",0,true]"#,
            #""\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00""#, "\"caf\u{e9} \u{1F600} \u{10FFFF}\"",
            "\"\u{7F}\"", // DEL is not a control character in JSON
        ]
        for document in documents {
            XCTAssertNoThrow(try scan(document), document)
        }
    }

    func testTheWholeDocumentPointerCoversTheValueWithoutSurroundingWhitespace() throws {
        let text = "  [1, 2]  "
        let targets = try scan(text, [""])
        XCTAssertEqual(slice(text, targets[0].range), "[1, 2]")
    }

    // MARK: Rejections

    func testRejectsEmptyAndWhitespaceOnlyBodies() {
        XCTAssertThrowsError(try scan(""))
        XCTAssertThrowsError(try scan(" \n\t "))
    }

    func testRejectsDataAfterTheValue() {
        for document in ["{} x", "[1] [2]", "1 2", "true false", #""a""b""#, "nullx", "{}}"] {
            XCTAssertThrowsError(try scan(document), document) { error in
                XCTAssertTrue(error is JSONSyntaxError)
            }
        }
    }

    func testReportsTheOffsetOfTrailingData() {
        XCTAssertThrowsError(try scan("[1]  x")) { error in
            XCTAssertEqual((error as? JSONSyntaxError)?.offset, 5)
        }
    }

    func testRejectsMalformedNumbers() {
        for document in ["01", "-01", "1.", "-", "1e", "1e+", "1E-", ".5", "+1", "-.5", "0x10", "1.e5",
                         "[01]", "[1.]", "[-]", "[1e]", "{\"a\":-}", "NaN", "Infinity", "-Infinity"] {
            XCTAssertThrowsError(try scan(document), document)
        }
    }

    func testRejectsBadEscapes() {
        for document in [#""\x""#, #""\a""#, #""\u12""#, #""\u12G4""#, #""\U0041""#, #""\'""#, #""\"#, #""\u"#] {
            XCTAssertThrowsError(try scan(document), document)
        }
    }

    func testRejectsControlCharactersInStrings() {
        for byte: UInt8 in [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1F] {
            XCTAssertThrowsError(try scan([0x22, 0x61, byte, 0x62, 0x22]), "byte \(byte)")
        }
    }

    func testRejectsInvalidUTF8InStrings() {
        let sequences: [String: [UInt8]] = [
            "overlong slash": [0xC0, 0xAF],
            "overlong two-byte lead C1": [0xC1, 0xBF],
            "overlong three-byte": [0xE0, 0x80, 0xAF],
            "overlong four-byte": [0xF0, 0x80, 0x80, 0xAF],
            "high surrogate": [0xED, 0xA0, 0x80],
            "low surrogate": [0xED, 0xBF, 0xBF],
            "beyond U+10FFFF": [0xF4, 0x90, 0x80, 0x80],
            "lead F5": [0xF5, 0x80, 0x80, 0x80],
            "lone continuation": [0x80],
            "truncated two-byte": [0xC3],
            "truncated three-byte": [0xE2, 0x82],
            "truncated four-byte": [0xF0, 0x9F, 0x98],
            "bad continuation": [0xE2, 0x28, 0xA1],
            "FF": [0xFF],
        ]
        for (name, sequence) in sequences {
            XCTAssertThrowsError(try scan([0x22] + sequence + [0x22]), name)
            XCTAssertThrowsError(try scan([0x22] + sequence), name + " at the end of the body")
        }
        // The boundaries themselves are fine.
        for sequence: [UInt8] in [[0xC2, 0x80], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80],
                                  [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF]] {
            XCTAssertNoThrow(try scan([0x22] + sequence + [0x22]), "\(sequence)")
        }
    }

    func testRejectsUnterminatedValues() {
        for document in [#""abc"#, #"["a""#, "[1,2", "[1,", "[", "{", #"{"a""#, #"{"a":"#, #"{"a":1"#,
                         #"{"a":1,"#, "tru", "nul", "[1 2]", #"{"a" 1}"#, #"{"a":1 "b":2}"#, "{1:2}",
                         "[1,]", #"{"a":1,}"#, "[,1]", "]", "}"] {
            XCTAssertThrowsError(try scan(document), document)
        }
    }

    func testRejectsNestingDeeperThan512AndAcceptsExactly512() {
        let deepest = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        XCTAssertNoThrow(try scan(deepest))
        let tooDeep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        XCTAssertThrowsError(try scan(tooDeep)) { error in
            XCTAssertEqual((error as? JSONSyntaxError)?.reason, "nesting too deep")
        }
        let tooDeepObjects = String(repeating: #"{"a":"#, count: 513) + "1" + String(repeating: "}", count: 513)
        XCTAssertThrowsError(try scan(tooDeepObjects))
        // The limit holds on the path to a target too, not only where values are skipped.
        let tooDeepOnPath = String(repeating: #"{"a":"#, count: 513) + "1" + String(repeating: "}", count: 513)
        XCTAssertThrowsError(try scan(tooDeepOnPath, ["/" + Array(repeating: "a", count: 513).joined(separator: "/")]))
    }

    func testAHugeNestingIsRejectedWithoutExhaustingTheStack() {
        let text = String(repeating: "[", count: 100_000)
        XCTAssertThrowsError(try scan(text, ["/0/0*"]))
    }

    // MARK: Locating targets

    func testLocatesSeveralTargetsInOnePass() throws {
        let text = #"{"items":[{"id":1},{"id":2}],"meta":{"next":"/p?page=2","total":42},"x":[true,false]}"#
        let targets = try scan(text, ["/items*", "/meta/next", "/meta/total", "/x/1", "/missing", "/meta/nope/deeper"])
        XCTAssertEqual(slice(text, targets[0].range), #"[{"id":1},{"id":2}]"#)
        XCTAssertEqual(targets[0].elements.map { slice(text, $0) }, [#"{"id":1}"#, #"{"id":2}"#])
        XCTAssertEqual(slice(text, targets[1].range), #""/p?page=2""#)
        XCTAssertEqual(slice(text, targets[2].range), "42")
        XCTAssertEqual(slice(text, targets[3].range), "false")
        XCTAssertNil(targets[4].range)
        XCTAssertNil(targets[5].range)
    }

    func testLocatesNestedPointersAndArrayIndices() throws {
        let text = #"{"data":{"list":[[10,11],[20,{"deep":"here"}]]}}"#
        let targets = try scan(text, ["/data/list/1/1/deep", "/data/list/0/1", "/data/list/2", "/data/list/01"])
        XCTAssertEqual(slice(text, targets[0].range), #""here""#)
        XCTAssertEqual(slice(text, targets[1].range), "11")
        XCTAssertNil(targets[2].range, "past the end of the array")
        XCTAssertNil(targets[3].range, "array indices have no leading zeros")
    }

    func testATargetOnAPrefixOfAnotherTargetIsLocatedToo() throws {
        let text = #"{"a":{"b":[1,2,3]}}"#
        let targets = try scan(text, ["/a", "/a/b*", "/a/b/2"])
        XCTAssertEqual(slice(text, targets[0].range), #"{"b":[1,2,3]}"#)
        XCTAssertEqual(targets[1].elements.map { slice(text, $0) }, ["1", "2", "3"])
        XCTAssertEqual(slice(text, targets[2].range), "3")
    }

    func testMatchesKeysWrittenWithEscapesAndPointersWithTildeEscapes() throws {
        let text = #"{"a/b":1,"m~n":2,"\u0063af\u00e9":3,"quo\"te":4,"s\/lash":5}"#
        let targets = try scan(text, ["/a~1b", "/m~0n", "/caf\u{e9}", "/quo\"te", "/s~1lash"])
        XCTAssertEqual(targets.map { slice(text, $0.range) }, ["1", "2", "3", "4", "5"])
    }

    func testAKeyIsNotMatchedByAPrefixOrAnExtension() throws {
        let text = #"{"item":1,"itemsx":2,"items":3}"#
        let targets = try scan(text, ["/items"])
        XCTAssertEqual(slice(text, targets[0].range), "3")
    }

    func testCollectsArrayElementRangesExactly() throws {
        let text = #"{"items": [ 1 , "two" ,{"three":[3]}, [4 ,4], null ,-5.5e1 ] }"#
        let targets = try scan(text, ["/items*"])
        XCTAssertEqual(targets[0].elements.map { slice(text, $0) },
                       ["1", #""two""#, #"{"three":[3]}"#, "[4 ,4]", "null", "-5.5e1"])
    }

    func testCollectsTheElementsOfABareArrayAndOfAnEmptyOne() throws {
        XCTAssertEqual(try scan("[ ]", ["*"])[0].elements, [])
        let text = "[1,[2],3]"
        XCTAssertEqual(try scan(text, ["*"])[0].elements.map { slice(text, $0) }, ["1", "[2]", "3"])
    }

    func testCollectsNoElementsWhenTheTargetIsNotAnArray() throws {
        let targets = try scan(#"{"items":{"0":1}}"#, ["/items*"])
        XCTAssertNotNil(targets[0].range)
        XCTAssertEqual(targets[0].elements, [])
    }

    func testStillValidatesTheRestOfTheDocumentAfterEveryTargetWasFound() {
        XCTAssertThrowsError(try scan(#"{"items":[1],"later":01}"#, ["/items*"]))
        XCTAssertThrowsError(try scan(#"{"items":[1],"later":"\x"}"#, ["/items*"]))
    }

    // MARK: locate

    func testLocateFindsValuesInsideAnAlreadyScannedValue() throws {
        let text = #"{"id": 7, "tags":["a", {"k":"v"}], "a/b": true}"#
        let bytes = Array(text.utf8)
        let results = bytes.withUnsafeBufferPointer { buffer -> [String?] in
            let scanner = JSONScanner(buffer)
            let whole = 0..<buffer.count
            return ["/id", "/tags/1/k", "/tags/0", "/a~1b", "/tags/2", "/nope", "/id/x", ""].map {
                scanner.locate(JSONPointer($0)!, in: whole).map { String(decoding: bytes[$0], as: UTF8.self) }
            }
        }
        XCTAssertEqual(results, ["7", #""v""#, #""a""#, "true", nil, nil, nil, text])
    }

    // MARK: Decoding strings

    func testDecodeStringHandlesEveryEscape() throws {
        XCTAssertEqual(try decode(#""plain""#), "plain")
        XCTAssertEqual(try decode(#""\"\\\/\b\f\n\r\t""#), "\"\\/\u{8}\u{C}\n\r\t")
        XCTAssertEqual(try decode(#""\u0061\u00E9\u20ac""#), "a\u{e9}\u{20ac}")
        XCTAssertEqual(try decode(#""caf\u00e9 \u00E9t\u00e9""#), "caf\u{e9} \u{e9}t\u{e9}")
        XCTAssertEqual(try decode("\"\u{e9}\\n\u{1F600}\""), "\u{e9}\n\u{1F600}")
    }

    func testDecodeStringJoinsSurrogatePairs() throws {
        XCTAssertEqual(try decode(#""\uD83D\uDE00""#), "\u{1F600}")
        XCTAssertEqual(try decode(#""x\ud834\udd1ey""#), "x\u{1D11E}y")
    }

    func testDecodeStringReplacesLoneSurrogates() throws {
        XCTAssertEqual(try decode(#""\uD83D""#), "\u{FFFD}")
        XCTAssertEqual(try decode(#""\uDE00x""#), "\u{FFFD}x")
        XCTAssertEqual(try decode(#""\uD83D\u0041""#), "\u{FFFD}A")
    }

    private func decode(_ text: String) throws -> String {
        try Array(text.utf8).withUnsafeBufferPointer { try JSONScanner($0).decodeString(at: 0) }
    }

    // MARK: Integers

    func testNonNegativeIntegerAcceptsOnlyPlainDigitsThatFit() {
        func integer(_ text: String) -> Int? {
            Array(text.utf8).withUnsafeBufferPointer { JSONScanner($0).nonNegativeInteger(at: 0..<$0.count) }
        }
        XCTAssertEqual(integer("0"), 0)
        XCTAssertEqual(integer("1234"), 1234)
        XCTAssertEqual(integer(String(Int.max)), Int.max)
        XCTAssertNil(integer("9223372036854775808"))
        XCTAssertNil(integer("-1"))
        XCTAssertNil(integer("1.0"))
        XCTAssertNil(integer("1e3"))
        XCTAssertNil(integer(""))
    }

    /// The first byte of a word that a string scan must stop at is found exactly, whatever comes
    /// after it (the borrows of the word-at-a-time test may mark later bytes too).
    func testTheFirstSpecialByteOfAWordIsFoundExactly() {
        func isSpecial(_ byte: UInt8) -> Bool { byte < 0x20 || byte >= 0x80 || byte == 0x22 || byte == 0x5C }
        func word(_ bytes: [UInt8]) -> UInt64 { bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) } }
        let plain: [UInt8] = Array("abc 09~}".utf8)
        XCTAssertEqual(JSONScanner.specialBytes(word(plain)), 0)
        var generator = SystemRandomNumberGenerator()
        for special: UInt8 in [0x00, 0x01, 0x1F, 0x22, 0x5C, 0x80, 0xC3, 0xFF] {
            for position in 0..<8 {
                for _ in 0..<50 {
                    var bytes = plain
                    bytes[position] = special
                    for later in position + 1..<8 { bytes[later] = UInt8.random(in: 0...255, using: &generator) }
                    let marks = JSONScanner.specialBytes(word(bytes))
                    XCTAssertEqual(marks.trailingZeroBitCount >> 3, position, "byte \(special) at \(position) in \(bytes)")
                }
            }
        }
        for _ in 0..<20_000 {
            let bytes = (0..<8).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let first = bytes.firstIndex(where: isSpecial)
            let marks = JSONScanner.specialBytes(word(bytes))
            XCTAssertEqual(marks == 0 ? nil : marks.trailingZeroBitCount >> 3, first, "\(bytes)")
        }
    }
}
