import AsyncHTTPClient
import Foundation

/// The project's test API server (Tests/server/api_server.py) on a free loopback port, for the
/// duration of a test; as the root package's Tests/SheafTests/Support/TestServer.swift, shorter.
/// Its stdin is a pipe held open here, so the server also exits if the test process dies.
final class TestServer {
    static let scriptPath: String = {
        var url = URL(fileURLWithPath: #filePath)
        // TestServer.swift, SheafServerTests, Tests, swift-server, bindings
        for _ in 0..<5 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("Tests/server/api_server.py").path
    }()

    let port: Int
    var baseURL: String { "http://127.0.0.1:\(port)" }
    private let process: Process
    private let stdin: Pipe

    init() throws {
        let python = ProcessInfo.processInfo.environment["SHEAF_TEST_PYTHON"] ?? "python3"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [python, Self.scriptPath, "--port", "0", "--exit-on-stdin-eof", "--quiet"]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        // The one line "PORT <n>".
        var line: [UInt8] = []
        let handle = stdout.fileHandleForReading
        while line.last != UInt8(ascii: "\n") {
            let byte = handle.readData(ofLength: 1)
            guard let first = byte.first else { break }
            line.append(first)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else {
            process.terminate()
            throw NSError(domain: "TestServer", code: 1, userInfo: [NSLocalizedDescriptionKey: "no PORT line: \(text)"])
        }
        self.port = port
        self.process = process
        self.stdin = stdin
    }

    func stop() {
        try? stdin.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    deinit { stop() }

    /// GET /_stats's list request count.
    func requests() async throws -> Int {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: baseURL + "/_stats"), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 64 << 20)
        let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        return object?["requests"] as? Int ?? -1
    }
}
