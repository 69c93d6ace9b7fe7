/// What a `sip.Control` envelope asks of the registration.
enum SIPControlAction: String, Sendable, CaseIterable {
    /// Register (again) now and keep the binding refreshed.
    case register
    /// Remove the binding and stop refreshing it.
    case unregister
    /// Send a refreshing REGISTER now.
    case refresh
    /// Remove the message history, or only the entries with `peer`.
    case clearHistory = "clear_history"
}
