#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a transport may stream a successful response body instead of collecting it in memory.
public protocol ResponseBodySink: Sendable {
    /// Called once per response, before its first body byte: whether this response's body goes to
    /// the sink (`write`) rather than into `HTTPResponse.body`. A sink takes 2xx answers only.
    func begin(status: Int, headers: [HTTPHeader]) -> Bool
    /// A chunk of the body; false aborts the transfer (the sink keeps the reason).
    func write(_ chunk: UnsafeRawBufferPointer) -> Bool
}

/// A download: the body streamed to `<destination>.part` beside the destination, renamed over it
/// only once the whole body has arrived. A retry after a broken transfer resumes with `Range`
/// when the server sent a validator (ETag or Last-Modified) and answers 206 for the same one;
/// otherwise it starts again from byte 0.
final class FileDownload: ResponseBodySink, @unchecked Sendable {
    // Safe: every mutable field is guarded by `lock`.
    private let lock = Lock()
    let destination: String
    let partPath: String
    private var descriptor: Int32 = -1
    private var written: Int64 = 0
    private var expected: Int64 = -1
    /// The first answer's ETag or Last-Modified: what a resumed range must still match.
    private var validator: String?
    /// Why writing failed, for the error.
    private var failure: SheafError?

    /// Creates the destination's folders and the part file.
    /// - Throws: `.invalidArgument` for an empty path or a destination that is a directory;
    ///   `.io` when a folder or the part file cannot be created.
    init(destination: String) throws(SheafError) {
        guard !destination.isEmpty else { throw SheafError(.invalidArgument, "the download destination is empty") }
        self.destination = destination
        partPath = destination + ".part"
        var status = stat()
        if stat(destination, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
            throw SheafError(.invalidArgument, "the download destination \(destination) is a directory")
        }
        try Self.makeFolders(for: destination)
        descriptor = open(partPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Self.ioError("cannot create \(partPath)") }
    }

    deinit {
        // Never completed nor abandoned (a request made but not sent): the part file goes too.
        if descriptor >= 0 {
            close(descriptor)
            unlink(partPath)
        }
    }

    /// (bytes written, bytes expected or -1).
    var progress: (done: Int64, expected: Int64) { lock.withLock { (written, expected) } }

    /// The headers that ask for the rest of a broken transfer, or none.
    func resumeHeaders() -> [HTTPHeader] {
        lock.withLock {
            guard written > 0, let validator else { return [] }
            return [HTTPHeader(name: "Range", value: "bytes=\(written)-"), HTTPHeader(name: "If-Range", value: validator)]
        }
    }

    func begin(status: Int, headers: [HTTPHeader]) -> Bool {
        guard (200...299).contains(status) else { return false }
        return lock.withLock {
            // A body the transport decodes (gzip) is not as long as its Content-Length says.
            let encoded = headers.first(named: "Content-Encoding").map { $0.lowercased() != "identity" } ?? false
            let length = encoded ? nil : headers.first(named: "Content-Length").flatMap { Int64($0) }
            if status == 206, let range = headers.first(named: "Content-Range"), let start = Self.rangeStart(range),
               start == written, written > 0 {
                expected = length.map { written.addingReportingOverflow($0) }.flatMap { $0.overflow ? nil : $0.partialValue } ?? -1
                return true
            }
            // A whole body: from the start, whatever was written before.
            guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
                failure = Self.ioError("cannot truncate \(partPath)")
                return true // the write fails and aborts the transfer
            }
            written = 0
            expected = length ?? -1
            validator = headers.first(named: "ETag").flatMap { $0.hasPrefix("W/") ? nil : $0 }
                ?? headers.first(named: "Last-Modified")
            return true
        }
    }

    func write(_ chunk: UnsafeRawBufferPointer) -> Bool {
        lock.withLock {
            guard failure == nil, descriptor >= 0 else { return false }
            let code = writeAll(descriptor, chunk)
            guard code == 0 else {
                failure = SheafError(.io, "cannot write \(partPath): \(errnoText(code))")
                return false
            }
            written += Int64(chunk.count)
            return true
        }
    }

    /// Why the last write failed, if it did.
    var writeFailure: SheafError? { lock.withLock { failure } }

    /// The whole body has arrived: flush it to disk and rename it into place.
    /// - Throws: `.io` when the file cannot be synced, closed or renamed; `.transport` when
    ///   fewer bytes arrived than the server announced.
    func complete() throws(SheafError) {
        try lock.withLock { () throws(SheafError) in
            if let failure { throw failure }
            if expected >= 0, written != expected {
                throw SheafError(.transport, "the download ended after \(written) of \(expected) bytes")
            }
            let descriptor = self.descriptor
            self.descriptor = -1
            if fsync(descriptor) != 0 {
                let error = Self.ioError("cannot write \(partPath)")
                close(descriptor)
                throw error
            }
            guard close(descriptor) == 0 else { throw Self.ioError("cannot write \(partPath)") }
            guard rename(partPath, destination) == 0 else { throw Self.ioError("cannot rename \(partPath) to \(destination)") }
        }
    }

    /// The download failed or was cancelled: the part file goes; the destination is untouched.
    func abandon() {
        lock.withLock {
            if descriptor >= 0 { close(descriptor) }
            descriptor = -1
            unlink(partPath)
        }
    }

    /// The first byte position of `Content-Range: bytes START-END/TOTAL`.
    private static func rangeStart(_ value: String) -> Int64? {
        let trimmed = value.drop { $0 == " " }
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        return Int64(trimmed.dropFirst(6).prefix { $0 != "-" })
    }

    private static func makeFolders(for path: String) throws(SheafError) {
        var folder = ""
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        for (index, part) in parts.enumerated() {
            folder += (index == 0 ? "" : "/") + part
            guard !part.isEmpty, part != "." else { continue }
            if mkdir(folder, 0o755) != 0, errno != EEXIST {
                throw ioError("cannot create the folder \(folder)")
            }
        }
    }

    private static func ioError(_ what: String) -> SheafError {
        SheafError(.io, "\(what): \(errnoText(errno))")
    }
}
