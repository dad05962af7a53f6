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
    default:
        // A usage error, not a finding: no trap, so libFuzzer neither reports a crash nor saves an input.
        let message = "SHEAF_FUZZ_TARGET must be detection, parsers or differential, not '\(name)'\n"
        _ = message.withCString { write(2, $0, strlen($0)) }
        exit(2)
    }
}()

// libFuzzer calls this once before the first input: the target is chosen here, so an unknown name
// stops the run at start-up rather than at the first input of the corpus. The arguments are unused.
@_cdecl("LLVMFuzzerInitialize")
public func sheafFuzzInitialize(_ argc: UnsafeMutableRawPointer?, _ argv: UnsafeMutableRawPointer?) -> CInt {
    _ = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func sheafFuzzEntry(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    target(data, size)
}
