import Foundation
import Hummingbird

extension BasicRequestContext {
    /// A path parameter percent-decoded (the router matches the raw path): an id with a
    /// non-ASCII letter arrives as `caf%C3%A9`.
    func decodedParameter(_ name: String) throws -> String {
        let raw = try parameters.require(name)
        return raw.removingPercentEncoding ?? raw
    }
}
