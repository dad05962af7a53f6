/// The window of each origin (`OriginPace`) that one or more clients send through: a client's
/// own, or, for the clients a C client handle makes (its shared client, and a list's own for its
/// headers or transport), one set for all of them, so that everything the handle runs shares one
/// budget per origin. A window is made with `configuration` when the first request goes to its
/// origin, and kept with what it learns.
package final class OriginWindows: Sendable {
    private let configuration: ClientConfiguration
    private let hooks: Hooks?
    private let paces = Locked<[Origin: OriginPace]>([:])

    package init(configuration: ClientConfiguration, hooks: Hooks?) {
        self.configuration = configuration
        self.hooks = hooks
    }

    /// The window of `url`'s origin (a URL with no origin gets a window of its own).
    func pace(for url: String) -> OriginPace {
        guard let origin = Origin(url) else { return OriginPace(configuration, hooks: hooks) }
        return paces.withLock { paces in
            if let pace = paces[origin] { return pace }
            let pace = OriginPace(configuration, hooks: hooks)
            paces[origin] = pace
            return pace
        }
    }

    /// Whether `origin` has answered a list's page one with success here.
    func hasAnsweredPageOne(_ origin: Origin) -> Bool {
        paces.withLock { $0[origin] }?.hasAnsweredPageOne == true
    }
}
