import CSheafHeader
import Sheaf
#if canImport(Glibc)
import Glibc
#endif

/// The one table from Swift error codes to C result codes.
extension SheafError.Code {
    var cResult: sheaf_result {
        switch self {
        case .invalidArgument: SHEAF_E_INVALID_ARGUMENT
        case .unsupported: SHEAF_E_UNSUPPORTED
        case .state: SHEAF_E_STATE
        case .reentrant: SHEAF_E_REENTRANT
        case .http: SHEAF_E_HTTP
        case .transport: SHEAF_E_TRANSPORT
        case .badPage, .decoding: SHEAF_E_BAD_PAGE
        case .incomplete: SHEAF_E_INCOMPLETE
        case .loop: SHEAF_E_LOOP
        case .pageLimit: SHEAF_E_PAGE_LIMIT
        case .bodyTooLarge: SHEAF_E_BODY_TOO_LARGE
        case .crossOrigin: SHEAF_E_CROSS_ORIGIN
        case .stopped: SHEAF_E_STOPPED
        case .cancelled: SHEAF_E_CANCELLED
        case .notFollowed: SHEAF_E_NOT_FOLLOWED
        case .undetected: SHEAF_E_UNDETECTED
        case .repeatedPage: SHEAF_E_REPEATED_PAGE
        case .io: SHEAF_E_IO
        case .deadline: SHEAF_E_DEADLINE
        case .credential: SHEAF_E_CREDENTIAL
        case .partial: SHEAF_E_PARTIAL
        case .rateLimited: SHEAF_E_RATE_LIMITED
        case .api: SHEAF_E_API
        default: SHEAF_E_INTERNAL
        }
    }
}

extension ListOutcome {
    /// SHEAF_OK for every stop the caller asked for (why is `cStopReason`); a failure's code.
    var cResult: sheaf_result {
        error?.code.cResult ?? SHEAF_OK
    }

    var cStopReason: sheaf_stop_reason {
        switch stopReason {
        case .complete: SHEAF_STOP_COMPLETE
        case .itemLimit: SHEAF_STOP_ITEM_LIMIT
        case .pageBudget: SHEAF_STOP_PAGE_BUDGET
        case .requestBudget: SHEAF_STOP_REQUEST_BUDGET
        case nil: SHEAF_STOP_FAILED
        }
    }
}

/// Static texts, allocated once for the life of the process.
private let resultTexts: [OwnedCString] = [
    "success",
    "the item limit was reached (retired: a list at its limit ends with success)",
    "invalid argument",
    "not supported by this version of the library",
    "the handle is not in a state for this call",
    "a blocking call was made from inside a Sheaf callback",
    "the server answered with a failing HTTP status",
    "the request failed below HTTP (timeout, connection, DNS, TLS)",
    "a page is not the JSON the list describes",
    "the items disagree with the server's total",
    "a next link or cursor repeats one already followed",
    "the list needs more pages than the page cap",
    "a response body exceeds the body cap",
    "a link or redirect leaves the base URL's origin",
    "stopped by the snapshot callback",
    "cancelled",
    "internal error",
    "no snapshot yet",
    "the last page signals more than the list's description follows",
    "the list's shape could not be detected",
    "two consecutive pages hold the same items",
    "a download's file could not be written",
    "the page budget was reached (retired: a list at its budget ends with success)",
    "the request budget was reached (retired: a list at its budget ends with success)",
    "the list's deadline passed",
    "the credential provider gave no credential",
    "some lists of the group failed",
    "the server's rate limit is spent until after the longest wait",
    "the API answered with errors in its body (a GraphQL answer's errors)",
].map(OwnedCString.init)
private let unknownResultText = OwnedCString("unknown result code")
private let versionText = OwnedCString(SheafVersion.string)

@c @implementation
public func sheaf_result_str(_ result: Int32) -> UnsafePointer<CChar>! {
    guard result >= 0, Int(result) < resultTexts.count else { return UnsafePointer(unknownResultText.pointer) }
    return UnsafePointer(resultTexts[Int(result)].pointer)
}

@c @implementation
public func sheaf_version_number() -> Int32 {
    Int32(SheafVersion.number)
}

@c @implementation
public func sheaf_version_string() -> UnsafePointer<CChar>! {
    UnsafePointer(versionText.pointer)
}

@c @implementation
public func sheaf_free(_ pointer: UnsafeMutableRawPointer?) {
    free(pointer)
}
