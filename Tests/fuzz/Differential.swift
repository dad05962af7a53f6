// Fuzz target "differential" (Entry.swift runs it): the JSON scanner against a reference parser (jansson, strict RFC 8259).
// Compiled with the core's sources and Reference.h by run.sh. For every input both must agree
// whether it is JSON; when it is and it is an array, the scanner's elements must match the
// reference's in number and kind, and its strings and non-negative integers in value. Any
// disagreement traps, which libFuzzer reports as a crash with the input saved.
//
// Where the two differ on purpose, the input is not compared (each named below):
// - lone UTF-16 surrogate escapes ("\ud800"): the scanner keeps them (identities compare the
//   exact JSON text, ARCHITECTURE.md), jansson refuses them;
// - numbers beyond jansson's int64/double range: valid JSON the scanner keeps as text;
// - nesting past either parser's depth limit (512 here, 2048 in jansson);
// - a raw NUL byte: never valid JSON (not whitespace, and a control character inside a string),
//   which the scanner refuses, but jansson takes as the end of the text ("42\0" parses as 42).

import FoundationEssentials

public func sheafFuzzDifferential(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let buffer = UnsafeBufferPointer(start: data, count: size)
    if buffer.contains(0) {
        var targets: [JSONScanner.Target] = []
        precondition((try? JSONScanner(buffer).scanDocument(&targets)) == nil, "the scanner accepts a NUL byte")
        return 0
    }
    var error = json_error_t()
    let reference = data.withMemoryRebound(to: CChar.self, capacity: max(size, 1)) {
        json_loadb($0, size, Int(JSON_DECODE_ANY | JSON_ALLOW_NUL), &error)
    }
    defer { json_decref(reference) }
    let referenceReason = withUnsafeBytes(of: error.text) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    // jansson's own limits, not JSON's: among them a key holding \u0000, which JSON allows and
    // jansson cannot store (JSON_ALLOW_NUL covers string values only).
    let exempt = ["Unicode", "overflow", "too big", "maximum parsing depth", "NUL byte in object key"]
    if reference == nil, exempt.contains(where: { referenceReason.contains($0) }) { return 0 }

    var targets = [JSONScanner.Target(pointer: JSONPointer("")!, collectsElements: true)]
    let scanner = JSONScanner(buffer)
    do {
        try scanner.scanDocument(&targets)
    } catch {
        if error.reason == "nesting too deep" { return 0 }
        guard reference == nil else {
            fatalError("the scanner refuses what jansson accepts: \(error)")
        }
        return 0
    }
    guard let reference else { fatalError("the scanner accepts what jansson refuses: \(referenceReason)") }
    guard reference.pointee.type == JSON_ARRAY else {
        precondition(targets[0].elements.isEmpty, "elements collected from a non-array")
        return 0
    }
    let elements = targets[0].elements
    precondition(elements.count == json_array_size(reference),
                 "\(elements.count) elements, jansson has \(json_array_size(reference))")
    for (index, range) in elements.enumerated() {
        let value = json_array_get(reference, index)!
        compare(scanner, range, value)
    }
    return 0
}

/// One array element: the same kind, and for strings and non-negative integers the same value.
private func compare(_ scanner: JSONScanner, _ range: Range<Int>, _ value: UnsafeMutablePointer<json_t>) {
    let first = scanner.bytes[range.lowerBound]
    switch value.pointee.type {
    case JSON_OBJECT: precondition(first == UInt8(ascii: "{"))
    case JSON_ARRAY: precondition(first == UInt8(ascii: "["))
    case JSON_TRUE, JSON_FALSE: precondition(first == UInt8(ascii: "t") || first == UInt8(ascii: "f"))
    case JSON_NULL: precondition(first == UInt8(ascii: "n"))
    case JSON_STRING:
        precondition(first == UInt8(ascii: "\""))
        let ours = try? scanner.decodeUTF8(at: range.lowerBound, marksLoneSurrogates: false)
        let theirs = Array(UnsafeBufferPointer(start: json_string_value(value), count: json_string_length(value)))
            .map { UInt8(bitPattern: $0) }
        precondition(ours == theirs, "string \(ours.map { String(decoding: $0, as: UTF8.self) } ?? "nil") differs")
    case JSON_INTEGER:
        let integer = json_integer_value(value)
        if first == UInt8(ascii: "-") {
            precondition(scanner.nonNegativeInteger(at: range) == nil, "-\(integer) read as non-negative")
        } else {
            precondition(scanner.nonNegativeInteger(at: range) == Int(integer), "integer \(integer) differs")
        }
    default:
        precondition(first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first))
    }
}
