#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A private, on-disk cache of GET answers, revalidated every time it is used.
///
/// RFC 9111 lets a private cache store a response with a validator and reuse it once the origin
/// confirms it (§4.3): every GET whose answer is stored is sent again with `If-None-Match` (its
/// `ETag`) and `If-Modified-Since` (its `Last-Modified`), and a `304 Not Modified` is answered
/// with the stored status, headers and body, the 304's own headers replacing stored ones of the
/// same name (§4.3.4). Nothing is served without asking the origin: a list re-synced is as
/// current as one fetched, and an unchanged page costs a 304 (GitHub charges no quota for one).
///
/// What is stored: a 200 answer to a GET with an `ETag` or a `Last-Modified`, without
/// `Cache-Control: no-store` or `Vary: *`, its body whole in memory (not a download's file) and at
/// most an eighth of the cache's size. Not its per-answer headers (`Date`, `Set-Cookie`, rate-limit
/// fields, `Retry-After`, hop-by-hop ones): a 304 brings its own.
///
/// The key of an entry is an HMAC (under a random key made with the cache, in its folder) of the
/// method, the URL as sent and every request header (the credential's, the client's and the
/// list's): one credential's answers never answer another's, a `Vary`ing header is part of the
/// key whatever it is, and no URL, token or header value is written to disk. Each entry carries
/// its key and an HMAC of its contents: a file that is cut short, renamed, edited or forged is a
/// miss, never a wrong answer or a crash.
///
/// The folder and its files are private to the user (0700 and 0600, the folder tightened when it
/// is the user's own; refused when it is a symbolic link or another user's). An entry is written
/// to a file of its own and renamed into place: a crash leaves the old entry or the new, and two
/// processes sharing the folder each read whole entries. Over `maxBytes`, the least recently used
/// entries are removed until it holds three quarters of it. A folder that cannot be written to (read
/// only, full) still answers from what it holds; storing is skipped.
public final class ResponseCache: Sendable, Equatable {
    /// The same cache (not one on the same folder).
    public static func == (a: ResponseCache, b: ResponseCache) -> Bool { a === b }

    /// The folder the entries are in.
    public let folder: String
    /// The most bytes the entries take before the least recently used go.
    public let maxBytes: Int
    public static let defaultMaxBytes = 512 << 20

    private let key: HMACKey
    /// The entries' bytes, as this process last counted them (another process's writes are
    /// counted at the next scan).
    private let storedBytes: Atomic<Int>
    private let evicting = Atomic<Bool>(false)

    private static let magic = Array("sheaf-cache-entry-1\n".utf8)
    private static let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
    private static let keyFileName = "key"
    private static let entryPrefix = "e-"
    private static let temporaryPrefix = "t-"

    /// Opens the cache in `folder`, making it (and its missing parents, 0700) when it is not there.
    /// - Throws: `.invalidArgument` for an empty path, a symbolic link, something that is not a
    ///   folder, another user's folder, or `maxBytes` below 64 KiB; `.io` when the folder cannot
    ///   be made or its key can be neither read nor written.
    public init(folder: String, maxBytes: Int = ResponseCache.defaultMaxBytes) throws(SheafError) {
        guard !folder.isEmpty, !folder.utf8.contains(0) else {
            throw SheafError(.invalidArgument, "the cache folder must be a path without NUL characters")
        }
        guard maxBytes >= 1 << 16, maxBytes <= 1 << 50 else {
            throw SheafError(.invalidArgument, "the cache's size must be 64 KiB to 1 PiB, not \(maxBytes) bytes")
        }
        self.folder = folder.count > 1 && folder.hasSuffix("/") ? String(folder.dropLast()) : folder
        self.maxBytes = maxBytes
        try Self.prepareFolder(self.folder)
        key = HMACKey(try Self.readOrMakeKey(in: self.folder))
        storedBytes = Atomic(0)
        storedBytes.store(scan().reduce(0) { $0 + $1.bytes }, ordering: .relaxed)
    }

    // MARK: Entries

    /// A stored answer, and the name it is stored under.
    struct Entry: Sendable {
        let name: String
        var response: HTTPResponse

        /// The headers that revalidate it (RFC 9110 §13.1).
        var validators: [HTTPHeader] {
            var headers: [HTTPHeader] = []
            if let tag = response.headers.first(named: "etag") { headers.append(HTTPHeader(name: "If-None-Match", value: tag)) }
            if let date = response.headers.first(named: "last-modified") {
                headers.append(HTTPHeader(name: "If-Modified-Since", value: date))
            }
            return headers
        }

        /// The answer a 304 stands for: the stored one, the 304's headers replacing stored ones of
        /// the same name (but not the 304's framing: it has no body).
        func answer(to notModified: HTTPResponse) -> HTTPResponse {
            var merged = response
            let fresh = notModified.headers.filter { !ResponseCache.framing.contains($0.name.lowercased()) }
            let names = Set(fresh.map { $0.name.lowercased() })
            merged.headers.removeAll { names.contains($0.name.lowercased()) }
            merged.headers += fresh
            return merged
        }
    }

    /// The name `request`'s answer is stored under: nil for a request the cache takes no part in
    /// (not a GET, a download, or one that carries validators of its caller's own).
    func name(for request: HTTPRequest) -> String? {
        guard request.method == "GET", request.sink == nil,
              !request.headers.contains(where: { Self.conditional.contains($0.name.lowercased()) }) else { return nil }
        var hasher = key.start()
        hasher.field(Array("request".utf8))
        hasher.field(Array(request.method.utf8))
        hasher.field(Array(request.url.utf8))
        let headers = request.headers.map { (name: $0.name.lowercased(), value: $0.value) }
            .sorted { ($0.name, $0.value) < ($1.name, $1.value) }
        for header in headers {
            hasher.field(Array(header.name.utf8))
            hasher.field(Array(header.value.utf8))
        }
        hasher.field(request.body)
        return Self.hex(key.finish(hasher))
    }

    /// The entry stored under `name`, or nil (none, or one that is unreadable, damaged or not
    /// this cache's). A hit marks the entry used.
    func load(_ name: String, maxBodyBytes: Int) -> Entry? {
        let path = folder + "/" + Self.entryPrefix + name
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, status.st_uid == geteuid() else { return nil }
        let size = Int(status.st_size)
        guard size > Self.magic.count + 64, size <= maxBodyBytes.addingReportingOverflow(1 << 20).partialValue else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        var filled = 0
        while filled < size {
            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, size - filled) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            filled += count
        }
        guard let response = decode(bytes, name: name), response.body.count <= maxBodyBytes else { return nil }
        _ = futimens(descriptor, nil) // used now: the last to go
        return Entry(name: name, response: response)
    }

    /// Whether `response`, the answer to a GET, may be stored.
    func isStorable(_ response: HTTPResponse) -> Bool {
        guard response.status == 200, !response.bodyStreamed, response.body.count <= maxBytes / 8 else { return false }
        let headers = response.headers
        guard headers.first(named: "etag") != nil || headers.first(named: "last-modified") != nil else { return false }
        let control = headers.filter { $0.name.lowercased() == "cache-control" }.map { $0.value.lowercased() }.joined(separator: ",")
        if control.split(separator: ",").contains(where: { $0.trimmingSpaces == "no-store" }) { return false }
        return !headers.filter { $0.name.lowercased() == "vary" }.contains { $0.value.split(separator: ",").contains { $0.trimmingSpaces == "*" } }
    }

    /// Stores `response` under `name` (see `isStorable`); when it may not be stored, removes the
    /// entry it `replaces` (no longer the answer). False when nothing was written (a folder read
    /// only or full, or an answer not to store).
    @discardableResult
    func store(_ response: HTTPResponse, as name: String, replaces: Bool = false) -> Bool {
        guard isStorable(response) else {
            if replaces { unlink(folder + "/" + Self.entryPrefix + name) }
            return false
        }
        var kept = response
        kept.headers.removeAll { Self.perAnswer($0.name.lowercased()) }
        let bytes = encode(kept, name: name)
        var random = SystemRandomNumberGenerator()
        let temporary = folder + "/" + Self.temporaryPrefix + name.prefix(16) + "-\(getpid())-\(random.next() as UInt64)"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        let failed = bytes.withUnsafeBytes { writeAll(descriptor, $0) } != 0
        guard close(descriptor) == 0, !failed, rename(temporary, folder + "/" + Self.entryPrefix + name) == 0 else {
            unlink(temporary)
            return false
        }
        if storedBytes.add(bytes.count, ordering: .relaxed).newValue > maxBytes { evict() }
        return true
    }

    /// Keeps what a 304 changed of an entry: rewritten when its validators moved.
    func refresh(_ entry: Entry, with answer: HTTPResponse) {
        let moved = ["etag", "last-modified"].contains { answer.headers.first(named: $0) != entry.response.headers.first(named: $0) }
        if moved { store(answer, as: entry.name, replaces: true) }
    }

    // MARK: The format

    /// magic, the entry's name, its status, its headers, its body (each length first), then an
    /// HMAC of all of it.
    private func encode(_ response: HTTPResponse, name: String) -> [UInt8] {
        var bytes = Self.magic
        func field(_ part: [UInt8]) {
            bytes += UInt64(part.count).bigEndianBytes
            bytes += part
        }
        field(Array(name.utf8))
        bytes += UInt64(response.status).bigEndianBytes
        bytes += UInt64(response.headers.count).bigEndianBytes
        for header in response.headers {
            field(Array(header.name.utf8))
            field(Array(header.value.utf8))
        }
        field(response.body)
        bytes += key.mac(bytes)
        return bytes
    }

    private func decode(_ bytes: [UInt8], name: String) -> HTTPResponse? {
        let end = bytes.count - 32
        guard end >= Self.magic.count, equalInConstantTime(key.mac(bytes[..<end]), bytes[end...]),
              bytes.starts(with: Self.magic) else { return nil }
        var at = Self.magic.count
        // Each number is checked against what is left before it is used: a count or a length
        // past the end is a damaged entry, never a read past it or an overflow.
        func number() -> UInt64? {
            guard end - at >= 8 else { return nil }
            defer { at += 8 }
            return bytes[at..<(at + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
        func field() -> [UInt8]? {
            guard let count = number(), count <= UInt64(end - at) else { return nil }
            defer { at += Int(count) }
            return Array(bytes[at..<(at + Int(count))])
        }
        func text() -> String? { field().flatMap { String(validating: $0, as: UTF8.self) } }
        guard text() == name, let status = number(), (200...299).contains(status),
              let count = number(), count <= UInt64(end - at) / 16 else { return nil }
        var headers: [HTTPHeader] = []
        for _ in 0..<count {
            guard let name = text(), let value = text() else { return nil }
            headers.append(HTTPHeader(name: name, value: value))
        }
        guard let body = field(), at == end else { return nil }
        return HTTPResponse(status: Int(status), headers: headers, body: body)
    }

    // MARK: The folder

    private static func prepareFolder(_ folder: String) throws(SheafError) {
        var status = stat()
        if lstat(folder, &status) != 0 {
            guard errno == ENOENT else { throw fileError("cannot look at the cache folder \(folder)", errno) }
            // Its missing parents first (mkdir -p), each private.
            let bytes = Array(folder.utf8)
            for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "/") && index > 0 {
                let parent = String(decoding: bytes[..<index], as: UTF8.self)
                if mkdir(parent, 0o700) != 0, errno != EEXIST { throw fileError("cannot make the folder \(parent)", errno) }
            }
            if mkdir(folder, 0o700) != 0, errno != EEXIST { throw fileError("cannot make the cache folder \(folder)", errno) }
            guard lstat(folder, &status) == 0 else { throw fileError("cannot look at the cache folder \(folder)", errno) }
        }
        guard (status.st_mode & S_IFMT) != S_IFLNK else {
            throw SheafError(.invalidArgument, "the cache folder \(folder) is a symbolic link; give the folder it points to")
        }
        guard (status.st_mode & S_IFMT) == S_IFDIR else {
            throw SheafError(.invalidArgument, "the cache folder \(folder) is not a folder")
        }
        guard status.st_uid == geteuid() else {
            throw SheafError(.invalidArgument, "the cache folder \(folder) belongs to another user")
        }
        if status.st_mode & 0o077 != 0, chmod(folder, 0o700) != 0 {
            throw fileError("the cache folder \(folder) is open to other users and cannot be made private", errno)
        }
    }

    /// The folder's key: read, or made (32 random bytes; the first process to make it wins).
    private static func readOrMakeKey(in folder: String) throws(SheafError) -> [UInt8] {
        let path = folder + "/" + keyFileName
        if let key = readKey(path) { return key }
        var random = SystemRandomNumberGenerator()
        let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
        let temporary = folder + "/" + temporaryPrefix + "key-\(getpid())-\(random.next() as UInt64)"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw fileError("cannot write to the cache folder \(folder)", errno) }
        let failed = key.withUnsafeBytes { writeAll(descriptor, $0) }
        close(descriptor)
        defer { unlink(temporary) }
        guard failed == 0 else { throw fileError("cannot write the cache's key in \(folder)", failed) }
        // A key that is there and unusable (damaged, the wrong size) is replaced: the entries it
        // signed become misses. Otherwise the first key made stays (link fails on an existing one).
        if link(temporary, path) != 0 {
            if errno == EEXIST, let theirs = readKey(path) { return theirs }
            guard rename(temporary, path) == 0 else { throw fileError("cannot write the cache's key in \(folder)", errno) }
        }
        return key
    }

    private static func readKey(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, status.st_uid == geteuid(),
              status.st_size == 32 else { return nil }
        var key = [UInt8](repeating: 0, count: 33)
        let count = key.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, 33) }
        return count == 32 ? Array(key.prefix(32)) : nil
    }

    /// The entries there now (and temporary files of writes that died, removed on the way).
    private func scan() -> [(name: String, bytes: Int, used: Int)] {
        guard let directory = opendir(folder) else { return [] }
        defer { closedir(directory) }
        var entries: [(name: String, bytes: Int, used: Int)] = []
        let now = time(nil)
        while let record = readdir(directory) {
            // Read in place up to its NUL: a record is as long as its name, not sizeof(dirent),
            // and copying d_name whole would read past it.
            let name = String(cString: UnsafeRawPointer(record).advanced(by: Self.nameOffset).assumingMemoryBound(to: CChar.self))
            let isEntry = name.hasPrefix(Self.entryPrefix)
            guard isEntry || name.hasPrefix(Self.temporaryPrefix) else { continue }
            var status = stat()
            guard lstat(folder + "/" + name, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { continue }
            if isEntry {
                entries.append((name, Int(status.st_size), Int(status.st_mtim.tv_sec) &* 1_000_000_000 &+ Int(status.st_mtim.tv_nsec)))
            } else if now - status.st_mtim.tv_sec > 3600 {
                unlink(folder + "/" + name) // a write that never finished
            }
        }
        return entries
    }

    /// Removes the least recently used entries until three quarters of `maxBytes` are left.
    private func evict() {
        guard evicting.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return }
        defer { evicting.store(false, ordering: .releasing) }
        var entries = scan()
        var total = entries.reduce(0) { $0 + $1.bytes }
        entries.sort { $0.used < $1.used }
        for entry in entries where total > maxBytes / 4 * 3 {
            if unlink(folder + "/" + entry.name) == 0 || errno == ENOENT { total -= entry.bytes }
        }
        storedBytes.store(total, ordering: .relaxed)
    }

    // MARK: Headers

    /// Request headers that make a request conditional on its caller's own validators.
    private static let conditional: Set<String> = ["if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range", "range"]
    /// A response's framing: never taken from a 304.
    private static let framing: Set<String> = ["content-length", "content-encoding", "transfer-encoding", "content-range"]

    /// Headers of one answer, not of the representation: never stored.
    private static func perAnswer(_ name: String) -> Bool {
        ["date", "age", "set-cookie", "set-cookie2", "retry-after", "connection", "keep-alive", "transfer-encoding",
         "content-length", "proxy-authenticate", "www-authenticate", "trailer", "upgrade"].contains(name)
            || name.hasPrefix("x-ratelimit-") || name.hasPrefix("ratelimit")
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }

    private static func fileError(_ message: String, _ code: Int32) -> SheafError {
        SheafError(.io, "\(message): \(errnoText(code))")
    }
}
