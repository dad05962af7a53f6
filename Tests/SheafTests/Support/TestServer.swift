import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Counters and request log of a running `TestServer` (GET /_stats).
struct TestServerStats: Decodable {
    /// List requests served since the last reset (control endpoints are not counted).
    let requests: Int
    /// The most list requests handled at once since the last reset.
    let maxInFlight: Int
    /// List requests being handled right now.
    let inFlight: Int
    /// The last (at most 20000) requests, in arrival order.
    let log: [Entry]

    struct Entry: Decodable {
        /// The request target, e.g. "/anchor?page=2&per_page=10".
        let path: String
        /// The Authorization header as sent, or nil.
        let authorization: String?
    }

    enum CodingKeys: String, CodingKey {
        case requests
        case maxInFlight = "max_in_flight"
        case inFlight = "in_flight"
        case log
    }
}

enum TestServerError: Error, CustomStringConvertible {
    case launch(String)
    case http(String)

    var description: String {
        switch self {
        case .launch(let s): return "TestServer launch failed: \(s)"
        case .http(let s): return "TestServer request failed: \(s)"
        }
    }
}

/// Starts Tests/server/api_server.py on a free loopback port for the duration of a test.
///
/// The child gets `--exit-on-stdin-eof`, and its stdin is a pipe this object holds open, so the
/// server also goes away if the test process dies without calling `stop()`.
final class TestServer {
    /// <repo>/Tests/server/api_server.py, found from this file's location
    /// (<repo>/Tests/SheafTests/Support/TestServer.swift).
    static let scriptPath: String = {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()   // Support
            .deletingLastPathComponent()   // SheafTests
            .deletingLastPathComponent()   // Tests
            .appendingPathComponent("server")
            .appendingPathComponent("api_server.py")
            .path
    }()

    /// How long `init` waits for the "PORT <n>" line.
    static let startTimeoutSeconds: Double = 10
    /// Send/receive timeout of the control requests.
    static let requestTimeoutSeconds: Int = 10

    let port: Int
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// `baseURL` + `pathAndQuery` (which starts with "/").
    func url(_ pathAndQuery: String) -> String { baseURL + pathAndQuery }

    private var process: Process?
    private var stdinPipe: Pipe?
    private var stdoutPipe: Pipe?

    /// Launches `python3 <repo>/Tests/server/api_server.py --port 0 --exit-on-stdin-eof --quiet`
    /// (plus `--latency-ms` when non-zero) and waits at most 10 s for its "PORT <n>" line.
    /// The interpreter can be overridden with the environment variable SHEAF_TEST_PYTHON.
    init(latencyMilliseconds: Int = 0) throws {
        let script = TestServer.scriptPath
        guard FileManager.default.fileExists(atPath: script) else {
            throw TestServerError.launch("no server script at \(script)")
        }
        let python = ProcessInfo.processInfo.environment["SHEAF_TEST_PYTHON"] ?? "python3"
        var arguments = [python, script, "--port", "0", "--exit-on-stdin-eof", "--quiet"]
        if latencyMilliseconds > 0 {
            arguments += ["--latency-ms", String(latencyMilliseconds)]
        }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let stdinPipe = Pipe()
        let stdoutPipe = Pipe()
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        // stderr is inherited: with --quiet the server writes nothing there unless it fails to start.
        do {
            try process.run()
        } catch {
            throw TestServerError.launch("cannot run \(arguments.joined(separator: " ")): \(error)")
        }

        let port: Int
        do {
            port = try TestServer.readPortLine(
                fd: stdoutPipe.fileHandleForReading.fileDescriptor,
                timeoutSeconds: TestServer.startTimeoutSeconds)
        } catch {
            TestServer.terminate(process)
            throw error
        }
        self.port = port
        self.process = process
        self.stdinPipe = stdinPipe
        self.stdoutPipe = stdoutPipe
    }

    deinit {
        stop()
    }

    /// GET /_stats.
    func stats() throws -> TestServerStats {
        let body = try get("/_stats")
        do {
            return try JSONDecoder().decode(TestServerStats.self, from: body)
        } catch {
            throw TestServerError.http("cannot decode /_stats: \(error)")
        }
    }

    /// GET /_reset: clears the counters, the log and the fail counts.
    func reset() throws {
        _ = try get("/_reset")
    }

    /// Stops the server: SIGTERM, then SIGKILL if it has not exited within 5 s, and waits for it.
    /// Idempotent; also called by deinit.
    func stop() {
        guard let process = process else { return }
        self.process = nil
        TestServer.terminate(process)
        try? stdinPipe?.fileHandleForWriting.close()
        try? stdoutPipe?.fileHandleForReading.close()
        stdinPipe = nil
        stdoutPipe = nil
    }

    /// A blocking HTTP/1.0 GET of `pathAndQuery` on this server; returns the body of a 2xx answer
    /// and throws for anything else.
    func get(_ pathAndQuery: String) throws -> Data {
        let (status, body) = try TestServer.httpGet(port: port, pathAndQuery: pathAndQuery,
                                                    timeoutSeconds: TestServer.requestTimeoutSeconds)
        guard (200..<300).contains(status) else {
            let text = String(decoding: body.prefix(200), as: UTF8.self)
            throw TestServerError.http("GET \(pathAndQuery) answered \(status): \(text)")
        }
        return body
    }

    // MARK: - Process helpers

    private static func terminate(_ process: Process) {
        if process.isRunning {
            process.terminate()
            // Bounded wait: 5 s in 10 ms steps, then SIGKILL.
            var waited = 0
            while process.isRunning && waited < 500 {
                usleep(10_000)
                waited += 1
            }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
            }
        }
        process.waitUntilExit()
    }

    /// Reads from `fd` until a "PORT <n>\n" line arrives, at most `timeoutSeconds`.
    private static func readPortLine(fd: Int32, timeoutSeconds: Double) throws -> Int {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 256)
        while buffer.count < 4096 {  // the line is short; anything longer is an error
            let remainingMs = Int(deadline.timeIntervalSinceNow * 1000)
            if remainingMs <= 0 {
                throw TestServerError.launch("no PORT line within \(timeoutSeconds) s")
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(min(remainingMs, 1000)))
            if ready < 0 {
                if errno == EINTR { continue }
                throw TestServerError.launch("poll failed: errno \(errno)")
            }
            if ready == 0 { continue }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw TestServerError.launch("read failed: errno \(errno)")
            }
            if n == 0 {
                throw TestServerError.launch(
                    "server exited before printing its port (output: \(String(decoding: buffer, as: UTF8.self)))")
            }
            buffer.append(contentsOf: chunk[0..<n])
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                let parts = line.split(separator: " ")
                guard parts.count == 2, parts[0] == "PORT", let port = Int(parts[1]), port > 0 else {
                    throw TestServerError.launch("unexpected first line: \(line)")
                }
                return port
            }
        }
        throw TestServerError.launch("no PORT line in the first 4096 bytes")
    }

    // MARK: - Minimal HTTP/1.0 client (POSIX sockets, 127.0.0.1 only)

    /// GET over a fresh connection to 127.0.0.1:`port`; reads until EOF. Returns (status, body).
    static func httpGet(port: Int, pathAndQuery: String, timeoutSeconds: Int) throws -> (Int, Data) {
        #if canImport(Darwin)
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw TestServerError.http("socket failed: errno \(errno)") }
        defer { close(fd) }

        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))

        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        addr.sin_addr = in_addr(s_addr: UInt32(0x7f00_0001).bigEndian)
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            throw TestServerError.http("connect to 127.0.0.1:\(port) failed: errno \(errno)")
        }

        let request = Array("GET \(pathAndQuery) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {  // each send makes progress or fails
            let n = request.withUnsafeBytes { raw -> Int in
                #if canImport(Darwin)
                return send(fd, raw.baseAddress! + sent, raw.count - sent, 0)
                #else
                return send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                #endif
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw TestServerError.http("send failed: errno \(errno)")
            }
            sent += n
        }

        var response = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        let limit = 256 << 20
        while response.count < limit {  // ends at EOF, on error or timeout, or at 256 MiB
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 {
                if errno == EINTR { continue }
                throw TestServerError.http("recv failed (errno \(errno)) after \(response.count) bytes")
            }
            if n == 0 { break }
            response.append(contentsOf: chunk[0..<n])
        }

        let separator: [UInt8] = [13, 10, 13, 10]
        guard let headerEnd = TestServer.find(separator, in: response) else {
            throw TestServerError.http("malformed response (\(response.count) bytes, no header end)")
        }
        let head = String(decoding: response[..<headerEnd], as: UTF8.self)
        let statusLine = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let fields = statusLine.split(separator: " ")
        guard fields.count >= 2, fields[0].hasPrefix("HTTP/"), let status = Int(fields[1]) else {
            throw TestServerError.http("malformed status line: \(statusLine)")
        }
        return (status, Data(response[(headerEnd + separator.count)...]))
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if Array(haystack[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }
}
