import CSheafHeader
import Sheaf
#if canImport(Glibc)
import Glibc
#endif

/// C strings owned by the library.
enum CString {
    /// A malloc'd, NUL-terminated copy of `bytes`, for the caller to release with sheaf_free.
    static func mallocCopy(_ bytes: [UInt8]) -> UnsafeMutablePointer<CChar>? {
        guard let memory = malloc(bytes.count + 1)?.assumingMemoryBound(to: CChar.self) else { return nil }
        bytes.withUnsafeBufferPointer { buffer in
            if let base = buffer.baseAddress { memcpy(memory, base, buffer.count) }
        }
        memory[bytes.count] = 0
        return memory
    }

    /// A malloc'd copy of `text`.
    static func mallocCopy(_ text: String) -> UnsafeMutablePointer<CChar>? {
        strdup(text)
    }

    /// A string from a C argument, or nil for NULL; invalid UTF-8 repaired (for text a transport
    /// relays from a server).
    static func read(_ pointer: UnsafePointer<CChar>?) -> String? {
        pointer.map { String(cString: $0) }
    }

    /// A caller's string argument, or nil for NULL. Invalid UTF-8 is refused, never repaired:
    /// a token, path or query silently changed by U+FFFD would be sent as something else.
    static func text(_ pointer: UnsafePointer<CChar>?, _ what: String) throws(SheafError) -> String? {
        guard let pointer else { return nil }
        guard let text = String(validatingCString: pointer) else {
            throw SheafError(.invalidArgument, "\(what) is not valid UTF-8")
        }
        return text
    }

    /// A caller's string argument that must be there.
    /// - Throws: `.invalidArgument` for NULL or invalid UTF-8.
    static func required(_ pointer: UnsafePointer<CChar>?, _ what: String) throws(SheafError) -> String {
        guard let text = try text(pointer, what) else { throw SheafError(.invalidArgument, "\(what) must not be NULL") }
        return text
    }

    /// A header from a caller's name and value, both required and checked (`HeaderRules`).
    static func header(_ name: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) throws(SheafError) -> HTTPHeader {
        try HeaderRules.check(HTTPHeader(name: try required(name, "the header name"), value: try required(value, "the header value")))
    }

    /// A caller's string argument that must be there and not be empty.
    static func nonEmpty(_ pointer: UnsafePointer<CChar>?, _ what: String) throws(SheafError) -> String {
        guard let text = try text(pointer, what), !text.isEmpty else {
            throw SheafError(.invalidArgument, "\(what) must be a non-empty string")
        }
        return text
    }
}

/// A C string kept for as long as its owner, for borrowed `const char *` results.
final class OwnedCString: @unchecked Sendable {
    // Safe: immutable after init; freed once in deinit.
    let pointer: UnsafeMutablePointer<CChar>

    init(_ text: String) {
        pointer = strdup(text)
    }

    deinit {
        free(pointer)
    }
}
