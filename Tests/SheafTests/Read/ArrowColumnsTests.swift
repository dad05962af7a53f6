import XCTest
@testable import Sheaf

final class ArrowColumnsTests: XCTestCase {
    private func read(_ json: String, into root: ArrowColumn = ArrowColumn(kind: .structure, known: false)) throws(ArrowMismatch) -> ArrowColumn {
        var bytes = Array(json.utf8)
        bytes.append(0)
        try bytes.withUnsafeBufferPointer { (buffer) throws(ArrowMismatch) in
            try ArrowColumns.read(UnsafeBufferPointer(rebasing: buffer.dropLast()), into: root)
        }
        return root
    }

    private func field(_ column: ArrowColumn, _ name: String) -> ArrowColumn? {
        column.names.firstIndex(of: Array(name.utf8)).map { column.children[$0] }
    }

    private func mismatch(_ json: String, into root: ArrowColumn = ArrowColumn(kind: .structure, known: false)) -> ArrowMismatch? {
        do throws(ArrowMismatch) {
            _ = try read(json, into: root)
            return nil
        } catch {
            return error
        }
    }

    func testEachFieldTakesTheKindOfItsFirstValueThatIsNotNull() throws {
        let root = try read(#"[{"a": null, "b": [], "c": {}}, {"a": "x", "b": [1], "c": {"d": true}, "e": 2.5}]"#)
        XCTAssertEqual(root.length, 2)
        XCTAssertEqual(root.names.map { String(decoding: $0, as: UTF8.self) }, ["a", "b", "c", "e"])
        XCTAssertEqual(field(root, "a")?.kind, .utf8)
        XCTAssertEqual(field(root, "a")?.nullCount, 1)
        XCTAssertEqual(field(root, "b")?.kind, .list)
        XCTAssertEqual(field(root, "b")?.children.first?.kind, .int64)
        XCTAssertEqual(field(root, "c").flatMap { self.field($0, "d") }?.kind, .boolean)
        XCTAssertEqual(field(root, "e")?.kind, .float64)
        XCTAssertEqual(field(root, "e")?.nullCount, 1)   // absent from the first item
    }

    func testAnInferredIntegerColumnMeetingAFractionBecomesDoubleWithItsValues() throws {
        let column = try XCTUnwrap(field(try read(#"[{"n": 3}, {"n": -2}, {"n": 0.5}]"#), "n"))
        XCTAssertEqual(column.kind, .float64)
        XCTAssertEqual(column.values.withValues(Double.self) { Array($0) }, [3, -2, 0.5])
    }

    func testAKnownIntegerColumnRefusesAFractionNamingItemAndField() {
        let known = ArrowColumn(kind: .structure, known: true,
                                fields: [(Array("n".utf8), ArrowColumn(kind: .int64, known: true))])
        let error = mismatch(#"[{"n": 1}, {"n": 1.5}]"#, into: known)
        XCTAssertEqual(error?.item, 1)
        XCTAssertEqual(error?.field, "n")
    }

    func testNestedPathsAreNamedAsFieldsAndListElements() {
        XCTAssertEqual(mismatch(#"[{"a": {"b": [[1], ["x"]]}}]"#)?.field, "a.b[][]")
        XCTAssertEqual(mismatch(#"[{"t": [{"x": 1}, {"x": "y"}]}]"#)?.field, "t[].x")
    }

    func testWhatArrowsReaderWouldReadOtherwiseIsAMismatch() {
        for json in [#"[{"a": 1, "a": 2}]"#, #"[1]"#, #"[{"a": 18446744073709551616}]"#, #"[{"a": 1e400}]"#,
                     #"[{"a": "\ud800"}]"#, #"[{"a": 1}"#, #"{"a": 1}"#, #"[{"a": 01}]"#] {
            XCTAssertNotNil(mismatch(json), json)
        }
    }

    func testIntegersAtTheEdgesOf64BitsAreRead() throws {
        let column = try XCTUnwrap(field(try read(#"[{"n": 9223372036854775807}, {"n": -9223372036854775808}, {"n": -0}]"#), "n"))
        XCTAssertEqual(column.kind, .int64)
        XCTAssertEqual(column.values.withValues(Int64.self) { Array($0) }, [.max, .min, 0])
    }

    func testStringsAreUnescapedAndPlainOnesKeptAsTheyAre() throws {
        let column = try XCTUnwrap(field(try read(#"[{"s": "plain text longer than eight"}, {"s": "caf\u00e9 \ud83d\ude00 \"q\""}]"#), "s"))
        let text = column.values.withValues(UInt8.self) { String(decoding: $0, as: UTF8.self) }
        XCTAssertEqual(text, "plain text longer than eightcafé 😀 \"q\"")
        XCTAssertEqual(column.offsets.withValues(Int32.self) { Array($0) }, [0, 28, Int32("plain text longer than eightcafé 😀 \"q\"".utf8.count)])
    }
}
