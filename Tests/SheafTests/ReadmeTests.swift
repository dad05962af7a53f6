import Foundation
import XCTest

/// The README's Swift quick start is the file the package compiles (Tests/QuickStart).
final class ReadmeTests: XCTestCase {
    func testTheSwiftQuickStartIsTheCompiledFile() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let compiled = try String(contentsOf: root.appendingPathComponent("Tests/QuickStart/QuickStart.swift"), encoding: .utf8)
        let section = try XCTUnwrap(readme.range(of: "## Swift quick start"))
        let start = try XCTUnwrap(readme.range(of: "```swift\n", range: section.upperBound..<readme.endIndex))
        let end = try XCTUnwrap(readme.range(of: "```\n", range: start.upperBound..<readme.endIndex))
        XCTAssertEqual(String(readme[start.upperBound..<end.lowerBound]), compiled)
    }
}
