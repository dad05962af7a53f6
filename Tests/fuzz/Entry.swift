// The one entry point of the fuzz binary, which holds every target: run.sh compiles the core once
// for all of them, and SHEAF_FUZZ_TARGET (detection, parsers, differential) picks the one a run
// exercises, read once at start-up.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private let target: @Sendable (UnsafePointer<UInt8>, Int) -> CInt = {
    let name = getenv("SHEAF_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    switch name {
    case "detection": return sheafFuzzDetection
    case "parsers": return sheafFuzzParsers
    case "differential": return sheafFuzzDifferential
    default: fatalError("SHEAF_FUZZ_TARGET must be detection, parsers or differential, not '\(name)'")
    }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func sheafFuzzEntry(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    target(data, size)
}
