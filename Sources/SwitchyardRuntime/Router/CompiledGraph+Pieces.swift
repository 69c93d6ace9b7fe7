internal import SwitchyardABI
package import SwitchyardConfig
package import SwitchyardCore

/// The plugin side of iiideas' pieces (ABI `piece_enable`, `piece_disable`, `piece_execute`),
/// for the iiideas' engine: it decides when to ask, the running graph's instances are asked.
extension CompiledGraph {
    /// How an instance answered `piece_enable`.
    package enum PieceEnabling: Equatable {
        /// It accepted, or has no such entry (it serves pieces without being told).
        case accepted
        /// Its instance stands by (an exclusive instance another router holds): not asked.
        case standingBy
        /// It refused, with its message (or the status when it gave none).
        case refused(String)
    }

    /// Asks the instance of `piece` to enable it for iiidea `id` with `preferences`.
    package func enablePiece(_ piece: PortReference, iiidea id: String, preferences: JSONValue) -> PieceEnabling {
        let instance = instance(named: piece.instance)
        if let instance, instance.standingBy.load(ordering: .relaxed) { return .standingBy }
        guard let instance, let handle = instance.handle, let enable = instance.plugin.table.api.piece_enable else { return .accepted }
        var port = piece.port
        var id = id
        let preferences = preferences.serializedBytes()
        var errorBytes = [UInt8](repeating: 0, count: 1024)
        var errorLength = 0
        let status = port.withUTF8 { portBytes in
            id.withUTF8 { idBytes in
                preferences.withUnsafeBufferPointer { preferenceBytes in
                    errorBytes.withUnsafeMutableBufferPointer { errorBuffer in
                        withUnsafeMutablePointer(to: &errorLength) { lengthPointer in
                            enable(
                                handle, sy_bytes(portBytes), sy_bytes(idBytes), sy_bytes(preferenceBytes),
                                sy_error_buffer(data: errorBuffer.baseAddress, capacity: errorBuffer.count, length: lengthPointer))
                        }
                    }
                }
            }
        }
        guard status == SY_OK else {
            let message = String(decoding: errorBytes.prefix(min(errorLength, errorBytes.count)), as: UTF8.self)
            return .refused(message.isEmpty ? "status \(status)" : message)
        }
        return .accepted
    }

    /// Tells the instance of `piece` iiidea `id` no longer uses it.
    package func disablePiece(_ piece: PortReference, iiidea id: String) {
        guard let instance = instance(named: piece.instance), let handle = instance.handle,
            let disable = instance.plugin.table.api.piece_disable
        else { return }
        var port = piece.port
        var id = id
        port.withUTF8 { portBytes in id.withUTF8 { idBytes in disable(handle, sy_bytes(portBytes), sy_bytes(idBytes)) } }
    }

    /// Asks the instance of service piece `piece` to run it for iiidea `id`; its answer comes
    /// through the host's `piece_done` with `token`. Returns why it was not asked or did not
    /// take the run, nil when it did.
    package func executePiece(_ piece: PortReference, iiidea id: String, input: JSONValue, preferences: JSONValue, token: UInt64)
        -> String?
    {
        guard let instance = instance(named: piece.instance), let handle = instance.handle,
            let execute = instance.plugin.table.api.piece_execute
        else { return "\(piece) cannot run service pieces (its plugin has no piece_execute)" }
        guard !instance.standingBy.load(ordering: .relaxed) else { return "\(piece.instance) stands by: another router holds it" }
        var port = piece.port
        var id = id
        let inputBytes = input.serializedBytes()
        let preferenceBytes = preferences.serializedBytes()
        let status = port.withUTF8 { portBytes in
            id.withUTF8 { idBytes in
                inputBytes.withUnsafeBufferPointer { inputBuffer in
                    preferenceBytes.withUnsafeBufferPointer { preferenceBuffer in
                        execute(handle, sy_bytes(portBytes), sy_bytes(idBytes), sy_bytes(inputBuffer), sy_bytes(preferenceBuffer), token)
                    }
                }
            }
        }
        return status == SY_OK ? nil : "\(piece) did not take the run (status \(status))"
    }
}
