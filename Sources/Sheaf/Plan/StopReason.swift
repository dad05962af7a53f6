/// Why a list ended without failing: each is a success (`SHEAF_OK` in C), the reason is data.
public enum StopReason: Sendable, Equatable {
    /// Every page arrived and the items agree with the server's total (when it gave one).
    case complete
    /// The caller's item limit was reached.
    case itemLimit
    /// The caller's page budget was reached; the resume token goes on from there.
    case pageBudget
    /// The caller's request budget was reached; the resume token goes on from there.
    case requestBudget
}
