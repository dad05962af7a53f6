#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A JSON array of objects (a snapshot's delta) read into Arrow columns in one pass: the
/// library's reading of a list as Arrow (`sheaf_arrow_from_json`), so that a caller wanting a
/// table never parses the items a second time.
///
/// The columns follow the rules of Arrow's own JSON reader, so that a batch read here equals
/// the batch pyarrow would read from the same bytes:
/// - a field given a type (`ArrowColumn.known`) keeps it: an integer in a float64 column is a
///   float; anything else that is not its kind (or null) is a `ArrowMismatch`;
/// - a field not given one takes the kind of its first value that is not null: null until
///   then, int64 for an integer, float64 for a number with a fraction or exponent (an int64
///   column that meets one becomes float64), utf8, bool, a struct for an object (its fields in
///   the order first seen), a list for an array (of null while every one is empty);
/// - fields not given a type follow the given ones, in the order they first appear;
/// - an absent field is null.
/// Where Arrow's reader would do something else (widen an integer beyond 64 bits to a float,
/// refuse a lone surrogate or a name given twice, read an item that is not an object), this
/// reader stops with an `ArrowMismatch` and reads nothing: the caller reads those bytes its
/// own way, which also words the error the user sees.
package enum ArrowKind: Sendable, Equatable {
    case null, boolean, int64, float64, utf8, list, structure
}

/// Why a JSON array did not become Arrow columns here: where (item and field) and what.
package struct ArrowMismatch: Error, Sendable {
    package var item: Int
    package var field: String
    package var reason: String

    package var message: String {
        field.isEmpty ? "item \(item): \(reason)" : "item \(item), field \(field): \(reason)"
    }

    /// The mismatch as seen from the value holding it: `part` (a field's name, or "[]" for a
    /// list's element) before the field, as "owner.id" or "tags[]"; past 200 characters the
    /// path keeps its end only.
    func inside(_ part: String) -> ArrowMismatch {
        var outer = self
        if field.utf8.count > 200 {
            outer.field = field.hasPrefix("…") ? field : "…" + field
        } else {
            outer.field = field.isEmpty ? part : field.hasPrefix("[]") ? part + field : part + "." + field
        }
        return outer
    }
}

/// Bytes that grow, on the C heap (an Arrow buffer the caller frees through its release).
package struct ArrowBuffer {
    package private(set) var base: UnsafeMutableRawPointer?
    package private(set) var count = 0
    private var capacity = 0

    @inline(__always)
    mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(count + extra) }
    }

    private mutating func grow(_ needed: Int) {
        var size = Swift.max(64, capacity)
        while size < needed { size *= 2 }
        guard let moved = realloc(base, size) else { fatalError("sheaf: out of memory (\(size) bytes for an Arrow buffer)") }
        base = moved
        capacity = size
    }

    @inline(__always)
    mutating func append<T: BitwiseCopyable>(_ value: T) {
        reserve(MemoryLayout<T>.size)
        base!.storeBytes(of: value, toByteOffset: count, as: T.self)
        count += MemoryLayout<T>.size
    }

    mutating func append(_ bytes: UnsafeRawPointer, count length: Int) {
        reserve(length)
        if length > 0 { (base! + count).copyMemory(from: bytes, byteCount: length) }
        count += length
    }

    mutating func appendZeros(_ length: Int) {
        reserve(length)
        if length > 0 { (base! + count).initializeMemory(as: UInt8.self, repeating: 0, count: length) }
        count += length
    }

    /// The bytes, handed over (at least one allocated, never NULL; the doubling's spare room
    /// given back): the buffer is empty after.
    package mutating func take() -> UnsafeMutableRawPointer {
        reserve(1)
        if capacity - count > 4096, let fitted = realloc(base, count) { base = fitted }
        let taken = base!
        base = nil
        count = 0
        capacity = 0
        return taken
    }

    package mutating func free() {
        releaseMemory(base)
        base = nil
        count = 0
        capacity = 0
    }

    /// The stored values of type T, in place.
    func withValues<T: BitwiseCopyable, R>(_ type: T.Type, _ body: (UnsafeMutableBufferPointer<T>) -> R) -> R {
        guard let base else { return body(UnsafeMutableBufferPointer(start: nil, count: 0)) }
        return body(UnsafeMutableBufferPointer(start: base.assumingMemoryBound(to: T.self), count: count / MemoryLayout<T>.size))
    }
}

private func releaseMemory(_ pointer: UnsafeMutableRawPointer?) {
    free(pointer)
}

/// A bitmap that grows a bit at a time (validity, booleans), least significant bit first.
package struct ArrowBits {
    package var bytes = ArrowBuffer()
    package private(set) var bits = 0

    @inline(__always)
    mutating func append(_ set: Bool) {
        if bits & 7 == 0 { bytes.append(UInt8(0)) }
        if set { bytes.base!.storeBytes(of: bytes.base!.load(fromByteOffset: bits >> 3, as: UInt8.self) | UInt8(1 << (bits & 7)),
                                        toByteOffset: bits >> 3, as: UInt8.self) }
        bits += 1
    }

    mutating func appendZeros(_ count: Int) {
        let end = bits + count
        let bytesNeeded = (end + 7) >> 3
        if bytesNeeded > bytes.count { bytes.appendZeros(bytesNeeded - bytes.count) }
        bits = end
    }

    package mutating func free() {
        bytes.free()
        bits = 0
    }
}

/// One Arrow column being filled: its kind, validity, values, and (struct, list) children.
package final class ArrowColumn {
    @exclusivity(unchecked) package private(set) var kind: ArrowKind
    /// Its type was given: it keeps it (an int64 never becomes float64).
    package let known: Bool
    @exclusivity(unchecked) package private(set) var length = 0
    @exclusivity(unchecked) package private(set) var nullCount = 0
    @exclusivity(unchecked) package var validity = ArrowBits()
    /// int64 and float64 values, a boolean bitmap's bytes (in `flags`), utf8 bytes.
    @exclusivity(unchecked) package var values = ArrowBuffer()
    @exclusivity(unchecked) package var flags = ArrowBits()
    /// utf8 and list offsets (Int32, length + 1 of them once filled).
    @exclusivity(unchecked) package var offsets = ArrowBuffer()
    /// A struct's fields, in order; a list's one element column.
    @exclusivity(unchecked) package private(set) var children: [ArrowColumn] = []
    @exclusivity(unchecked) package private(set) var names: [[UInt8]] = []
    /// The struct field most likely named next (items tend to repeat their fields' order).
    @exclusivity(unchecked) private var cursor = 0
    /// The places of the first `indexed` fields by name: past a few fields, a name not at the
    /// cursor is one hash away, not a scan of every name (an object of 80,000 fields was
    /// quadratic in them).
    @exclusivity(unchecked) private var places: [[UInt8]: Int] = [:]
    @exclusivity(unchecked) private var indexed = 0
    /// Up to this many fields a scan is cheaper than a hash of the name.
    private static let scannedFields = 16

    package init(kind: ArrowKind, known: Bool, fields: [(name: [UInt8], column: ArrowColumn)] = [], element: ArrowColumn? = nil) {
        self.kind = kind
        self.known = known
        if kind == .utf8 || kind == .list { offsets.append(Int32(0)) }
        switch kind {
        case .structure:
            names = fields.map(\.name)
            children = fields.map(\.column)
        case .list:
            children = [element ?? ArrowColumn(kind: .null, known: false)]
        default:
            break
        }
    }

    deinit {
        validity.free()
        values.free()
        flags.free()
        offsets.free()
    }

    /// The name a list gives its element field (as Arrow's JSON reader does).
    package static let elementName = Array("item".utf8)

    // MARK: Appending

    @inline(__always)
    private func appendValid() {
        validity.append(true)
        length += 1
    }

    func appendNull() {
        validity.append(false)
        length += 1
        nullCount += 1
        switch kind {
        case .null: break
        case .boolean: flags.append(false)
        case .int64: values.append(Int64(0))
        case .float64: values.append(Double(0))
        case .utf8: offsets.append(Int32(truncatingIfNeeded: values.count))
        case .list: offsets.append(Int32(truncatingIfNeeded: children[0].length))
        case .structure: for child in children { child.appendNull() }
        }
    }

    /// Becomes `kind` (from null, its nulls kept), or says whether it already is one.
    @inline(__always)
    private func become(_ wanted: ArrowKind) -> Bool {
        if kind == wanted { return true }
        guard kind == .null, !known else { return false }
        kind = wanted
        switch wanted {
        case .boolean: flags.appendZeros(length)
        case .int64, .float64: values.appendZeros(length * 8)
        case .utf8: offsets.appendZeros((length + 1) * 4)
        case .list:
            offsets.appendZeros((length + 1) * 4)
            children = [ArrowColumn(kind: .null, known: false)]
        case .structure, .null: break
        }
        return true
    }

    /// int64 values turned float64 (an inferred column meeting a fraction).
    private func widenToFloat() {
        values.withValues(Int64.self) { integers in
            for index in integers.indices {
                let value = Double(integers[index])
                integers[index] = Int64(bitPattern: value.bitPattern)
            }
        }
        kind = .float64
    }

    fileprivate func appendBool(_ value: Bool) -> Bool {
        guard become(.boolean) else { return false }
        flags.append(value)
        appendValid()
        return true
    }

    fileprivate func appendInteger(_ value: Int64) -> Bool {
        if kind == .float64 { return appendFloat(Double(value)) }
        guard become(.int64) else { return false }
        values.append(value)
        appendValid()
        return true
    }

    fileprivate func appendFloat(_ value: Double) -> Bool {
        if kind == .int64, !known { widenToFloat() }
        guard become(.float64) else { return false }
        values.append(value)
        appendValid()
        return true
    }

    fileprivate func appendString(_ bytes: UnsafeRawPointer, count: Int) -> Bool {
        guard become(.utf8) else { return false }
        values.append(bytes, count: count)
        guard values.count <= Int(Int32.max) else { return false }
        offsets.append(Int32(values.count))
        appendValid()
        return true
    }

    /// Opens a list value: its elements go to `children[0]`, then `closeList`.
    fileprivate func openList() -> ArrowColumn? {
        become(.list) ? children[0] : nil
    }

    fileprivate func closeList() -> Bool {
        guard children[0].length <= Int(Int32.max) else { return false }
        offsets.append(Int32(children[0].length))
        appendValid()
        return true
    }

    fileprivate func openStruct() -> Bool {
        become(.structure)
    }

    /// The field named `name` of this struct, added (null in every row before) when new; nil
    /// when it was already given a value in the row being filled (a name given twice).
    fileprivate func field(_ name: UnsafeRawBufferPointer) -> ArrowColumn? {
        let count = children.count
        if cursor < count, Self.same(names[cursor], name) {
            let child = children[cursor]
            cursor += 1
            return child.length == length ? child : nil
        }
        if count <= Self.scannedFields {
            for index in 0..<count where Self.same(names[index], name) {
                cursor = index + 1
                let child = children[index]
                return child.length == length ? child : nil
            }
        } else {
            while indexed < count {
                if places[names[indexed]] == nil { places[names[indexed]] = indexed } // the first of a name given twice
                indexed += 1
            }
            if let index = places[Array(name.bindMemory(to: UInt8.self))] {
                cursor = index + 1
                let child = children[index]
                return child.length == length ? child : nil
            }
        }
        // A C string cannot hold the name whole: refused, never cut at the NUL.
        if !name.isEmpty, memchr(name.baseAddress!, 0, name.count) != nil { return nil }
        let child = ArrowColumn(kind: .null, known: false)
        for _ in 0..<length { child.appendNull() }
        names.append(Array(name))
        children.append(child)
        cursor = count + 1
        return child
    }

    @inline(__always)
    private static func same(_ name: [UInt8], _ key: UnsafeRawBufferPointer) -> Bool {
        name.count == key.count && name.withUnsafeBytes { memcmp($0.baseAddress!, key.baseAddress!, key.count) == 0 }
    }

    /// Ends a struct row: fields it did not name are null there.
    fileprivate func closeStruct() {
        for child in children where child.length == length { child.appendNull() }
        cursor = 0
        appendValid()
    }

    /// The kind as Arrow names it, for messages.
    package var typeName: String {
        switch kind {
        case .null: "null"
        case .boolean: "bool"
        case .int64: "int64"
        case .float64: "double"
        case .utf8: "string"
        case .list: "list<\(children[0].typeName)>"
        case .structure: "struct"
        }
    }
}

/// Reads a JSON array of objects into a struct column (`ArrowColumns.read`).
package enum ArrowColumns {
    /// The rows of `json` (a JSON array of objects) appended to `root`, a struct column (given
    /// types in it are kept). On a mismatch `root` is left partly filled: discard it.
    package static func read(_ json: UnsafeBufferPointer<UInt8>, into root: ArrowColumn) throws(ArrowMismatch) {
        let scanner = JSONScanner(json)
        var reader = Reader(scanner: scanner)
        try reader.readItems(into: root)
    }

    private struct Reader {
        let scanner: JSONScanner
        var index = 0
        var item = 0
        var bytes: UnsafeBufferPointer<UInt8> { scanner.bytes }

        func mismatch(_ reason: String) -> ArrowMismatch {
            ArrowMismatch(item: item, field: "", reason: reason)
        }

        @inline(__always)
        mutating func skipSpace() {
            index = scanner.skipWhitespace(index)
        }

        @inline(__always)
        func byte() -> UInt8 {
            index < bytes.count ? bytes[index] : 0
        }

        @inline(__always)
        mutating func expect(_ wanted: UInt8, _ what: String) throws(ArrowMismatch) {
            skipSpace()
            guard byte() == wanted else { throw mismatch("not JSON: expected \(what) at byte \(index)") }
            index += 1
        }

        mutating func readItems(into root: ArrowColumn) throws(ArrowMismatch) {
            try expect(UInt8(ascii: "["), "'['")
            skipSpace()
            if byte() == UInt8(ascii: "]") {
                index += 1
            } else {
                while true {
                    skipSpace()
                    guard byte() == UInt8(ascii: "{") else { throw mismatch("the item is not a JSON object") }
                    try readObject(into: root, depth: 1)
                    item += 1
                    skipSpace()
                    if byte() == UInt8(ascii: ",") { index += 1; continue }
                    try expect(UInt8(ascii: "]"), "',' or ']'")
                    break
                }
            }
            skipSpace()
            guard index == bytes.count else { throw mismatch("not JSON: data after the array at byte \(index)") }
        }

        /// The object at `index` as a row of the struct `column`.
        mutating func readObject(into column: ArrowColumn, depth: Int) throws(ArrowMismatch) {
            guard depth < JSONScanner.maxDepth else { throw mismatch("nested too deep") }
            guard column.openStruct() else { throw mismatch("an object where the field is \(column.typeName)") }
            index += 1
            skipSpace()
            if byte() == UInt8(ascii: "}") {
                index += 1
                column.closeStruct()
                return
            }
            while true {
                skipSpace()
                guard byte() == UInt8(ascii: "\"") else { throw mismatch("not JSON: expected a member name at byte \(index)") }
                let item = item
                let child = try withString { (name) throws(ArrowMismatch) -> ArrowColumn in
                    guard let child = column.field(name) else {
                        let nul = !name.isEmpty && memchr(name.baseAddress!, 0, name.count) != nil
                        throw ArrowMismatch(item: item, field: Self.text(name).split(separator: "\u{0}", omittingEmptySubsequences: false).joined(separator: "\\u0000"),
                                            reason: nul ? "the name holds a NUL, which an Arrow field name (a C string) cannot"
                                                        : "the name is given twice")
                    }
                    return child
                }
                try expect(UInt8(ascii: ":"), "':'")
                skipSpace()
                do throws(ArrowMismatch) {
                    try readValue(into: child, depth: depth + 1)
                } catch {
                    throw error.inside(Self.text(column.names[column.children.firstIndex { $0 === child } ?? 0]))
                }
                skipSpace()
                if byte() == UInt8(ascii: ",") { index += 1; continue }
                try expect(UInt8(ascii: "}"), "',' or '}'")
                break
            }
            column.closeStruct()
        }

        static func text(_ name: some Collection<UInt8>) -> String {
            String(decoding: name, as: UTF8.self)
        }

        /// Calls `body` with the string at `index` (a quote) decoded, and moves past it.
        mutating func withString<R>(_ body: (UnsafeRawBufferPointer) throws(ArrowMismatch) -> R) throws(ArrowMismatch) -> R {
            let start = index
            // Most strings are printable ASCII to their quote: found eight bytes at a time.
            let base = UnsafeRawPointer(bytes.baseAddress!)
            var position = start + 1
            while position + 8 <= bytes.count {
                let special = JSONScanner.specialBytes(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self)))
                if special == 0 {
                    position += 8
                    continue
                }
                position += special.trailingZeroBitCount >> 3
                if bytes[position] == UInt8(ascii: "\"") {
                    index = position + 1
                    return try body(UnsafeRawBufferPointer(start: base + start + 1, count: position - start - 1))
                }
                break
            }
            let end: Int
            do { end = try scanner.skipString(at: start) } catch { throw mismatch("not JSON: \(error.reason) at byte \(error.offset)") }
            index = end
            let inner = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[(start + 1)..<(end - 1)])
            if inner.isEmpty || memchr(inner.baseAddress!, Int32(UInt8(ascii: "\\")), inner.count) == nil {
                return try body(inner)
            }
            let decoded: [UInt8]
            do { decoded = try scanner.decodeUTF8(at: start, marksLoneSurrogates: true) } catch { throw mismatch("not JSON: \(error.reason)") }
            // 0xFF marks a lone surrogate (valid UTF-8 never holds it): Arrow's reader refuses those.
            guard !decoded.contains(0xFF) else { throw mismatch("a string holds a lone surrogate escape") }
            let result = decoded.withUnsafeBytes { (buffer) in Result { () throws(ArrowMismatch) -> R in try body(buffer) } }
            return try result.get()
        }

        mutating func readValue(into column: ArrowColumn, depth: Int) throws(ArrowMismatch) {
            switch byte() {
            case UInt8(ascii: "\""):
                let fits = try withString { (text) throws(ArrowMismatch) -> Bool in
                    column.appendString(text.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, count: text.count)
                }
                guard fits else { throw mismatch("a string where the field is \(column.typeName)") }
            case UInt8(ascii: "{"):
                try readObject(into: column, depth: depth)
            case UInt8(ascii: "["):
                guard depth < JSONScanner.maxDepth else { throw mismatch("nested too deep") }
                guard let element = column.openList() else { throw mismatch("an array where the field is \(column.typeName)") }
                index += 1
                skipSpace()
                if byte() == UInt8(ascii: "]") {
                    index += 1
                } else {
                    while true {
                        skipSpace()
                        do throws(ArrowMismatch) {
                            try readValue(into: element, depth: depth + 1)
                        } catch {
                            throw error.inside("[]")
                        }
                        skipSpace()
                        if byte() == UInt8(ascii: ",") { index += 1; continue }
                        try expect(UInt8(ascii: "]"), "',' or ']'")
                        break
                    }
                }
                guard column.closeList() else { throw mismatch("a list too long for 32-bit offsets") }
            case UInt8(ascii: "t"), UInt8(ascii: "f"):
                let value = byte() == UInt8(ascii: "t")
                try literal(value ? "true" : "false")
                guard column.appendBool(value) else { throw mismatch("a boolean where the field is \(column.typeName)") }
            case UInt8(ascii: "n"):
                try literal("null")
                column.appendNull()
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try readNumber(into: column)
            default:
                throw mismatch("not JSON: expected a value at byte \(index)")
            }
        }

        mutating func literal(_ text: StaticString) throws(ArrowMismatch) {
            let count = text.utf8CodeUnitCount
            guard index + count <= bytes.count, memcmp(bytes.baseAddress! + index, text.utf8Start, count) == 0 else {
                throw mismatch("not JSON: invalid literal at byte \(index)")
            }
            index += count
        }

        mutating func readNumber(into column: ArrowColumn) throws(ArrowMismatch) {
            // Most numbers are short integers: up to 18 digits cannot overflow.
            if column.kind != .float64 {
                var position = index
                let negative = bytes[position] == UInt8(ascii: "-")
                if negative { position += 1 }
                let first = position
                var value: Int64 = 0
                while position < bytes.count, position - first < 18 {
                    let digit = bytes[position] &- UInt8(ascii: "0")
                    guard digit < 10 else { break }
                    value = value &* 10 &+ Int64(digit)
                    position += 1
                }
                let digits = position - first
                let next = position < bytes.count ? bytes[position] : 0
                if digits > 0, next &- UInt8(ascii: "0") >= 10, next != UInt8(ascii: "."), next | 0x20 != UInt8(ascii: "e"),
                   digits == 1 || bytes[first] != UInt8(ascii: "0") {
                    index = position
                    guard column.appendInteger(negative ? -value : value) else {
                        throw mismatch("a number where the field is \(column.typeName)")
                    }
                    return
                }
            }
            let start = index
            let end: Int
            do { end = try scanner.skipNumber(at: start) } catch { throw mismatch("not JSON: invalid number at byte \(start)") }
            index = end
            // What the short-integer path above left: a fraction or exponent, 19 digits or more,
            // or a float64 column. Rare enough to read through a String.
            let digits = UnsafeBufferPointer(rebasing: bytes[start..<end])
            let text = String(decoding: digits, as: UTF8.self)
            let fits: Bool
            if column.kind != .float64, !digits.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }) {
                // Arrow's reader widens an integer beyond 64 bits to a float: read those its way.
                guard let value = Int64(text) else { throw mismatch("an integer beyond 64 bits") }
                fits = column.appendInteger(value)
            } else {
                guard let value = Double(text), value.isFinite else { throw mismatch("a number beyond a double's range") }
                fits = column.appendFloat(value)
            }
            guard fits else { throw mismatch("a number where the field is \(column.typeName)") }
        }
    }
}
