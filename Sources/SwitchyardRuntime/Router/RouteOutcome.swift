internal import SwitchyardCore
internal import SwitchyardScript

/// What a route makes of one envelope.
enum RouteOutcome {
    /// `when:` rejected it, or the script dropped it (counted as filtered).
    case filtered
    /// One envelope to send: the common case, with no array.
    case one(Envelope)
    /// Several (a script that emitted more than one), in order.
    case many([Envelope])
    /// The script failed: the envelope takes the route's failure path (dropped and counted on
    /// an at-most-once route, a dead letter on an at-least-once one).
    case failed(ScriptFailure)
}
