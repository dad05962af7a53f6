import CSheafHeader
import Sheaf
#if canImport(Glibc)
import Glibc
#endif

// sheaf_arrow_from_json: ArrowColumns read into the Arrow C data interface's two structs.
// Every struct and buffer handed out is owned by the parts object in its private_data and
// freed by its release callback; a parent's release releases its children (unless a consumer
// moved one out, which leaves that child's release NULL).

@c @implementation
public func sheaf_arrow_from_json(_ json: UnsafePointer<CChar>?, _ length: Int, _ known: UnsafePointer<ArrowSchema>?,
                                  _ outSchema: UnsafeMutablePointer<ArrowSchema>?,
                                  _ outArray: UnsafeMutablePointer<ArrowArray>?) -> sheaf_result {
    outSchema?.pointee.release = nil
    outArray?.pointee.release = nil
    guard let json, let outSchema, let outArray else {
        return failure(SheafError(.invalidArgument, "json, out_schema and out_array must not be NULL"))
    }
    guard length >= 0 else { return failure(SheafError(.invalidArgument, "the length is past any buffer (\(UInt(bitPattern: length)))")) }
    let root: ArrowColumn
    do throws(SheafError) {
        var fields = 0
        root = try known.map { (schema) throws(SheafError) in try KnownTypes.column(schema.pointee, at: "", fields: &fields) }
            ?? ArrowColumn(kind: .structure, known: false)
        guard root.kind == .structure else {
            throw SheafError(.invalidArgument, "known must be a struct schema (format \"+s\")")
        }
        try UnsafeRawPointer(json).withMemoryRebound(to: UInt8.self, capacity: length) { (bytes) throws(SheafError) in
            do throws(ArrowMismatch) {
                try ArrowColumns.read(UnsafeBufferPointer(start: bytes, count: length), into: root)
            } catch {
                throw SheafError(.badPage, "the items do not fit Arrow columns: \(error.message)")
            }
        }
    } catch {
        return failure(error)
    }
    outSchema.initialize(to: ExportedSchema.make(root, name: []))
    outArray.initialize(to: ExportedArray.make(root))
    return success()
}

/// The columns a caller's struct schema gives types to.
private enum KnownTypes {
    /// Deeper than this, no item could fill the schema (the JSON reader's own limit): a schema
    /// that nests further, or points back at itself, is refused, never followed down the stack.
    static let maxDepth = 512
    /// More fields than this in all is no schema a caller means (a stray count, or children
    /// that point at one another, which would be read again at every path to them).
    static let maxFields = 1 << 17

    static func column(_ schema: ArrowSchema, at path: String, depth: Int = 0, fields: inout Int) throws(SheafError) -> ArrowColumn {
        fields += 1
        guard fields <= maxFields, schema.n_children <= Int64(maxFields - fields) else {
            throw SheafError(.invalidArgument, "known: the schema has more than \(maxFields) fields (or its children point at one another)")
        }
        guard depth < maxDepth else {
            throw SheafError(.invalidArgument, "known: \(where_(path)) nests more than \(maxDepth) levels deep (or its children point back at it)")
        }
        guard schema.n_children >= 0 else {
            throw SheafError(.invalidArgument, "known: \(where_(path)) says it has \(schema.n_children) children")
        }
        guard let formatPointer = schema.format else { throw SheafError(.invalidArgument, "known: \(where_(path)) has no format") }
        let format = String(cString: formatPointer)
        func unsupported(_ why: String) -> SheafError {
            SheafError(.unsupported, "known: \(where_(path)) \(why); the library reads bool, int64, double, utf8, struct and list columns, nullable, without metadata")
        }
        if !path.isEmpty {
            guard schema.flags & Int64(ARROW_FLAG_NULLABLE) != 0 else { throw unsupported("is not nullable") }
            guard schema.metadata == nil else { throw unsupported("carries metadata") }
        }
        guard schema.dictionary == nil else { throw unsupported("is dictionary-encoded") }
        let children = try (0..<Int(schema.n_children)).map { (index) throws(SheafError) -> (name: [UInt8], schema: ArrowSchema) in
            guard let child = schema.children?[index]?.pointee else {
                throw SheafError(.invalidArgument, "known: \(where_(path)) lacks child \(index)")
            }
            return (child.name.map { Array(String(cString: $0).utf8) } ?? [], child)
        }
        switch format {
        case "n": return ArrowColumn(kind: .null, known: false)
        case "b": return ArrowColumn(kind: .boolean, known: true)
        case "l": return ArrowColumn(kind: .int64, known: true)
        case "g": return ArrowColumn(kind: .float64, known: true)
        case "u": return ArrowColumn(kind: .utf8, known: true)
        case "+s":
            let fields = try children.map { (child) throws(SheafError) -> (name: [UInt8], column: ArrowColumn) in
                let name = String(decoding: child.name, as: UTF8.self)
                return (child.name, try column(child.schema, at: path.isEmpty ? name : "\(path).\(name)", depth: depth + 1, fields: &fields))
            }
            return ArrowColumn(kind: .structure, known: true, fields: fields)
        case "+l":
            guard children.count == 1 else { throw SheafError(.invalidArgument, "known: \(where_(path)) is a list without one child") }
            guard children[0].name == ArrowColumn.elementName else {
                throw unsupported("names its list element \(String(decoding: children[0].name, as: UTF8.self)), not item")
            }
            let element = try column(children[0].schema, at: path + "[]", depth: depth + 1, fields: &fields)
            return ArrowColumn(kind: .list, known: true, element: element)
        default:
            throw unsupported("has format \"\(format)\"")
        }
    }

    private static func where_(_ path: String) -> String {
        path.isEmpty ? "the schema" : "the field \(path)"
    }
}

/// The children a schema or an array hands out: each struct allocated alone, the array of
/// pointers to them too; the parent's release releases them (a child a consumer moved out has
/// its release NULL, and is only deallocated here).
private struct ExportedChildren<Child> {
    let pointers: UnsafeMutablePointer<UnsafeMutablePointer<Child>?>?
    let count: Int

    init(_ children: [Child]) {
        count = children.count
        guard !children.isEmpty else {
            pointers = nil
            return
        }
        let pointers = UnsafeMutablePointer<UnsafeMutablePointer<Child>?>.allocate(capacity: children.count)
        for (index, child) in children.enumerated() {
            let slot = UnsafeMutablePointer<Child>.allocate(capacity: 1)
            slot.initialize(to: child)
            pointers[index] = slot
        }
        self.pointers = pointers
    }

    func release(_ releaseChild: (UnsafeMutablePointer<Child>) -> Void) {
        for index in 0..<count {
            guard let child = pointers?[index] else { continue }
            releaseChild(child)
            child.deallocate()
        }
        pointers?.deallocate()
    }
}

/// An ArrowSchema's owned parts: its strings and its children.
private final class ExportedSchema {
    var strings: [UnsafeMutablePointer<CChar>?] = []
    var children = ExportedChildren<ArrowSchema>([])

    deinit {
        for string in strings { free(string) }
    }

    static func make(_ column: ArrowColumn, name: [UInt8]) -> ArrowSchema {
        let parts = ExportedSchema()
        let format: String = switch column.kind {
        case .null: "n"
        case .boolean: "b"
        case .int64: "l"
        case .float64: "g"
        case .utf8: "u"
        case .list: "+l"
        case .structure: "+s"
        }
        parts.strings = [CString.mallocCopy(format), CString.mallocCopy(name)]
        let childSchemas: [ArrowSchema] = switch column.kind {
        case .list: [make(column.children[0], name: ArrowColumn.elementName)]
        case .structure: zip(column.names, column.children).map { make($1, name: $0) }
        default: []
        }
        parts.children = ExportedChildren(childSchemas)
        return ArrowSchema(format: UnsafePointer(parts.strings[0]), name: UnsafePointer(parts.strings[1]), metadata: nil,
                           flags: name.isEmpty && column.kind == .structure ? 0 : Int64(ARROW_FLAG_NULLABLE),
                           n_children: Int64(childSchemas.count), children: parts.children.pointers, dictionary: nil,
                           release: releaseSchema, private_data: Unmanaged.passRetained(parts).toOpaque())
    }
}

private func releaseSchema(_ schema: UnsafeMutablePointer<ArrowSchema>?) {
    guard let schema, schema.pointee.release != nil, let data = schema.pointee.private_data else { return }
    Unmanaged<ExportedSchema>.fromOpaque(data).takeRetainedValue().children.release { $0.pointee.release?($0) }
    schema.pointee.release = nil
    schema.pointee.private_data = nil
}

/// An ArrowArray's owned parts: its buffers and its children.
private final class ExportedArray {
    var buffers: UnsafeMutablePointer<UnsafeRawPointer?>
    var bufferCount: Int
    var children = ExportedChildren<ArrowArray>([])

    init(_ owned: [UnsafeMutableRawPointer?]) {
        bufferCount = owned.count
        buffers = .allocate(capacity: Swift.max(1, owned.count))
        for (index, buffer) in owned.enumerated() { buffers[index] = UnsafeRawPointer(buffer) }
    }

    deinit {
        for index in 0..<bufferCount { free(UnsafeMutableRawPointer(mutating: buffers[index])) }
        buffers.deallocate()
    }

    /// The column's arrays; its buffers are handed over (the column is empty after).
    static func make(_ column: ArrowColumn) -> ArrowArray {
        let validity: UnsafeMutableRawPointer?
        if column.nullCount == 0 || column.kind == .null {   // a null column has no buffer at all
            column.validity.free()
            validity = nil
        } else {
            validity = column.validity.bytes.take()
        }
        let owned: [UnsafeMutableRawPointer?] = switch column.kind {
        case .null: []
        case .boolean: [validity, column.flags.bytes.take()]
        case .int64, .float64: [validity, column.values.take()]
        case .utf8: [validity, column.offsets.take(), column.values.take()]
        case .list: [validity, column.offsets.take()]
        case .structure: [validity]
        }
        let parts = ExportedArray(owned)
        let childArrays = column.kind == .null ? [] : column.children.map(make)
        parts.children = ExportedChildren(childArrays)
        return ArrowArray(length: Int64(column.length), null_count: Int64(column.nullCount), offset: 0,
                          n_buffers: Int64(owned.count), n_children: Int64(childArrays.count),
                          buffers: parts.buffers, children: parts.children.pointers, dictionary: nil,
                          release: releaseArray, private_data: Unmanaged.passRetained(parts).toOpaque())
    }
}

private func releaseArray(_ array: UnsafeMutablePointer<ArrowArray>?) {
    guard let array, array.pointee.release != nil, let data = array.pointee.private_data else { return }
    Unmanaged<ExportedArray>.fromOpaque(data).takeRetainedValue().children.release { $0.pointee.release?($0) }
    array.pointee.release = nil
    array.pointee.private_data = nil
}
