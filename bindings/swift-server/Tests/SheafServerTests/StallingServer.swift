import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback server that answers one connection with a head announcing 1000 bytes, sends 10 of
/// them and then nothing, holding the connection open until stopped: a stalled body.
final class StallingServer: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let thread: Thread

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(fd, pointer, length) == 0, listen(fd, 4) == 0 else { return -1 }
                return getsockname(fd, pointer, &length)
            }
        }
        guard bound == 0 else { close(fd); throw NSError(domain: "StallingServer", code: Int(errno)) }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = fd
        thread = Thread {
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else { return }
            var request = [UInt8](repeating: 0, count: 4096)
            _ = recv(connection, &request, request.count, 0)
            let answer = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nContent-Type: application/octet-stream\r\n\r\n0123456789"
            _ = answer.withCString { send(connection, $0, strlen($0), 0) }
            // Hold the connection until the listener closes (stop()).
            var byte: UInt8 = 0
            _ = recv(connection, &byte, 1, 0)
            close(connection)
        }
        thread.start()
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
