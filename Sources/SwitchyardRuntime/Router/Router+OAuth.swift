import Foundation

extension Router {
    /// Gives the OAuth connections the plan's declarations and the store their tokens live in:
    /// the shared one when there is one (the sealing key must then be the same on every
    /// router), else the spool, with `oauth.key` beside it.
    func adoptOAuth(_ plan: GraphPlan) {
        let keyDirectory = spool.map { URL(fileURLWithPath: $0.path).deletingLastPathComponent().path }
        oauth.adopt(plan.oauth, store: sharedStore ?? spool, keyDirectory: keyDirectory, shared: sharedStore != nil)
    }

    /// Follows a connection another router connected, refreshed or removed in the shared store
    /// (`name`; nil: any may have changed). Safe to call from any thread: the store is read on
    /// the queue that follows switches.
    public func followOAuthChange(_ name: String?) {
        guard sharedStore != nil, !isDraining else { return }
        switchFollower.async { [self] in oauth.storedTokensChanged(name) }
    }
}
