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

/// A download: the body streamed to a file of its own beside the destination, renamed over it
/// only once the whole body has arrived (as coreutils' `install` and rsync write files).
///
/// That file, `.<name>.sheaf-XXXXXX`, is created exclusively (`O_EXCL|O_NOFOLLOW`, another name
/// drawn while one exists), so a link planted at a name the download might use can never
/// redirect its writes, and two downloads to one destination never share a file: each renames
/// its own whole body, the last one wins. A failed or cancelled download removes it.
///
/// A retry after a broken transfer resumes with `Range` when the server sent a validator (ETag
/// or Last-Modified) and answers 206 for the same one; otherwise it starts again from byte 0.
/// Resuming happens within one download only, on the descriptor it keeps open: the partial file
/// is never looked up by name, so it needs no stable one (and a `<destination>.part` left by an
/// older version is neither read nor touched).
final class FileDownload: ResponseBodySink, @unchecked Sendable {
    // Safe: every mutable field is guarded by `lock`.
    private let lock = Lock()
    let destination: String
    /// This download's own file, renamed over the destination at the end.
    let temporaryPath: String
    private var descriptor: Int32 = -1
    /// Whether `temporaryPath` is still this download's to remove (false once renamed or removed).
    private var ownsTemporary = true
    private var written: Int64 = 0
    private var expected: Int64 = -1
    /// The first answer's ETag (strong) or else its Last-Modified: what a resumed range must
    /// still carry, in the same field.
    private var validator: HTTPHeader?
    /// The first byte the attempt under way asked for (with `Range`) and the If-Range it sent,
    /// or nil: it asked for all of the file.
    private var asked: (from: Int64, validator: HTTPHeader)?
    /// Why writing failed, for the error.
    private var failure: SheafError?

    /// Creates the destination's folders and this download's temporary file.
    /// - Throws: `.invalidArgument` for an empty path or a destination that is not a regular
    ///   file (see `checkReplaceable`); `.io` when a folder or the temporary file cannot be created.
    init(destination: String) throws(SheafError) {
        guard !destination.isEmpty else { throw SheafError(.invalidArgument, "the download destination is empty") }
        self.destination = destination
        let mode = try Self.checkReplaceable(destination)
        try Self.makeFolders(for: destination)
        (descriptor, temporaryPath) = try Self.createTemporary(beside: destination, mode: mode)
    }

    deinit {
        // Never completed nor abandoned (a request made but not sent): its file goes too.
        if descriptor >= 0 { close(descriptor) }
        if ownsTemporary { unlink(temporaryPath) }
    }

    /// (bytes written, bytes expected or -1).
    var progress: (done: Int64, expected: Int64) { lock.withLock { (written, expected) } }

    /// The headers that ask for the rest of a broken transfer, or none.
    func resumeHeaders() -> [HTTPHeader] {
        lock.withLock {
            guard written > 0, let validator else {
                asked = nil
                return []
            }
            asked = (written, validator)
            return [HTTPHeader(name: "Range", value: "bytes=\(written)-"), HTTPHeader(name: "If-Range", value: validator.value)]
        }
    }

    func begin(status: Int, headers: [HTTPHeader]) -> Bool {
        guard (200...299).contains(status) else { return false }
        return lock.withLock {
            // A body a transport decodes (gzip) is not as long as its Content-Length says (the
            // libcurl transport saves a download's bytes as served, but one of one's own may not).
            let encoded = headers.first(named: "Content-Encoding").map { $0.lowercased() != "identity" } ?? false
            let length = encoded ? nil : headers.first(named: "Content-Length").flatMap { Int64($0) }
            if status == 206 {
                let range = headers.first(named: "Content-Range")
                let span = range.flatMap(Self.byteRange)
                let shown = range.map { "Content-Range: \($0)" } ?? "no Content-Range"
                if let asked {
                    // A server that honours If-Range answers another version with a 200, whole;
                    // a 206 of another version would splice two files into one.
                    let sent = headers.first(named: asked.validator.name)
                    guard sent == asked.validator.value else {
                        failure = SheafError(.transport, "the file changed on the server during the download (\(asked.validator.name) "
                                                         + "\(asked.validator.value) when it began, \(sent ?? "none") in the resumed "
                                                         + "part the server sent despite If-Range); the two versions are not "
                                                         + "spliced, nothing was kept")
                        return true // the write fails and aborts the transfer
                    }
                    guard let span, span.first == asked.from, asked.from == written else {
                        failure = SheafError(.transport, "the server resumed the download elsewhere than byte \(written) "
                                                         + "as asked (\(shown)); nothing was kept")
                        return true // the write fails and aborts the transfer
                    }
                    expected = length.map { written.addingReportingOverflow($0) }.flatMap { $0.overflow ? nil : $0.partialValue } ?? -1
                    return true
                }
                // Asked for all of it: a part is not the file (unless the part is all of it).
                guard let span, span.first == 0, let total = span.total, span.last + 1 == total else {
                    failure = SheafError(.transport, "the server sent part of the file (\(shown)) to a request for "
                                                     + "all of it; nothing was kept")
                    return true // the write fails and aborts the transfer
                }
            }
            // A whole body: from the start, whatever was written before.
            guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
                failure = Self.ioError("cannot truncate \(temporaryPath)")
                return true // the write fails and aborts the transfer
            }
            written = 0
            expected = length ?? -1
            // A weak ETag cannot validate a range (RFC 9110 §13.1.5).
            validator = headers.first(named: "ETag").flatMap { $0.hasPrefix("W/") ? nil : HTTPHeader(name: "ETag", value: $0) }
                ?? headers.first(named: "Last-Modified").map { HTTPHeader(name: "Last-Modified", value: $0) }
            return true
        }
    }

    func write(_ chunk: UnsafeRawBufferPointer) -> Bool {
        lock.withLock {
            guard failure == nil, descriptor >= 0 else { return false }
            let code = writeAll(descriptor, chunk)
            guard code == 0 else {
                failure = SheafError(.io, "cannot write \(temporaryPath): \(errnoText(code))")
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
                let error = Self.ioError("cannot write \(temporaryPath)")
                close(descriptor)
                throw error
            }
            guard close(descriptor) == 0 else { throw Self.ioError("cannot write \(temporaryPath)") }
            // Again, just before: whatever came to stand at the destination meanwhile.
            _ = try Self.checkReplaceable(destination)
            guard rename(temporaryPath, destination) == 0 else { throw Self.ioError("cannot rename \(temporaryPath) to \(destination)") }
            ownsTemporary = false
        }
    }

    /// The download failed or was cancelled: its file goes (once: after a rename, or a removal,
    /// the name may be another download's); the destination is untouched.
    func abandon() {
        lock.withLock {
            if descriptor >= 0 { close(descriptor) }
            descriptor = -1
            if ownsTemporary { unlink(temporaryPath) }
            ownsTemporary = false
        }
    }

    /// The byte positions of `Content-Range: bytes FIRST-LAST/TOTAL` (TOTAL may be `*`).
    private static func byteRange(_ value: String) -> (first: Int64, last: Int64, total: Int64?)? {
        let trimmed = value.drop { $0 == " " }
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let parts = trimmed.dropFirst(6).split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let positions = parts[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard positions.count == 2, let first = Int64(positions[0]), let last = Int64(positions[1]), first <= last else {
            return nil
        }
        if parts[1] == "*" { return (first, last, nil) }
        guard let total = Int64(parts[1]), last < total else { return nil }
        return (first, last, total)
    }

    /// A download replaces nothing but a regular file: a device, a FIFO, a socket or a directory
    /// is refused, not replaced by a file (as root, `/dev/null` would be). A symbolic link is
    /// replaced itself, never followed (its target stays as it was), unless it leads to one of
    /// those: then it is refused the same way (`/dev/stdout` is a link to the process's output).
    /// - Returns: the permission bits of the regular file standing there, which the new one takes;
    ///   nil for a new file (or one replacing a link), made 0666 less the umask.
    /// - Throws: `.invalidArgument` naming what stands there.
    private static func checkReplaceable(_ destination: String) throws(SheafError) -> mode_t? {
        var status = stat()
        // Nothing there (or no way to tell): creating the folders or the file will say.
        guard lstat(destination, &status) == 0 else { return nil }
        var through = ""
        if status.st_mode & S_IFMT == S_IFLNK {
            guard stat(destination, &status) == 0 else { return nil } // a dangling link: replaced
            guard status.st_mode & S_IFMT != S_IFREG else { return nil }
            through = " (through a symbolic link)"
        }
        let kind: String
        switch status.st_mode & S_IFMT {
        // Set-user-ID, set-group-ID and sticky bits are not carried over to a body from the network.
        case S_IFREG: return status.st_mode & 0o777
        case S_IFDIR: kind = "directory"
        case S_IFCHR: kind = "character device"
        case S_IFBLK: kind = "block device"
        case S_IFIFO: kind = "FIFO"
        case S_IFSOCK: kind = "socket"
        default: kind = "special file"
        }
        throw SheafError(.invalidArgument, "the download destination \(destination) is a \(kind)\(through), not a regular file; "
                                           + "a download only creates or replaces a regular file")
    }

    /// Creates `.<name>.sheaf-XXXXXX` in the destination's folder, exclusively: never an existing
    /// file, never through a link; another random name while the drawn one exists. Its mode is
    /// `mode` exactly, or 0666 less the umask.
    private static func createTemporary(beside destination: String, mode: mode_t?) throws(SheafError) -> (Int32, String) {
        let slash = destination.lastIndex(of: "/")
        let folder = slash.map { String(destination[...$0]) } ?? ""
        let name = slash.map { String(destination[destination.index(after: $0)...]) } ?? destination
        guard !name.isEmpty else {
            throw SheafError(.invalidArgument, "the download destination \(destination) names a folder, not a file")
        }
        // Short enough that the whole name stays under NAME_MAX (255 bytes).
        let prefix = folder + "." + String(decoding: name.utf8.prefix(200), as: UTF8.self) + ".sheaf-"
        let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100 {
            let path = prefix + String((0..<6).map { _ in letters.randomElement(using: &generator)! })
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
            if descriptor >= 0 {
                // The file it replaces keeps its mode (the umask would narrow it at open).
                if let mode, fchmod(descriptor, mode) != 0 {
                    let error = ioError("cannot set the mode of \(path)")
                    close(descriptor)
                    unlink(path)
                    throw error
                }
                return (descriptor, path)
            }
            guard errno == EEXIST else { throw ioError("cannot create a file in \(folder.isEmpty ? "." : folder)") }
        }
        throw SheafError(.io, "cannot create a file in \(folder.isEmpty ? "." : folder): 100 names drawn were all taken")
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
