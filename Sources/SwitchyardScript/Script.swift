internal import CSwitchyardScript
public import SwitchyardCore
import Synchronization

/// One compiled script with its own sandboxed Lua state: a route's `script:` or an iiidea's
/// `script` service piece.
///
/// The state (its `state` table and globals) lives as long as this object; calls are
/// serialized by a lock, so a script is never run by two threads at once.
public final class Script: Sendable {
    /// What was compiled.
    public let source: ScriptSource
    /// The budgets of its state.
    public let limits: ScriptLimits
    private let engine: Mutex<Engine>

    /// Compiles `source` in a new state; a syntax error is a diagnostic at the line of the
    /// file where it is written.
    public init(source: ScriptSource, limits: ScriptLimits = .standard) throws(Diagnostic) {
        self.source = source
        self.limits = limits
        let cLimits = sy_script_limits(
            memory_limit: limits.memory, instruction_limit: UInt64(clamping: limits.instructions),
            string_limit: limits.stringLength, pattern_limit: UInt64(clamping: limits.patternSteps),
            output_limit: UInt32(clamping: limits.outputs))
        guard let pointer = sy_script_open(cLimits) else {
            throw Diagnostic("cannot create a Lua state for the script (out of memory)", at: source.location(ofLine: 1))
        }
        var engine = Engine(pointer: pointer)
        var error = [CChar](repeating: 0, count: 1024)
        var text = source.text
        let status = text.withUTF8 { utf8 in
            utf8.withMemoryRebound(to: CChar.self) { chars in
                sy_script_load(pointer, sy_script_text(data: chars.baseAddress, length: chars.count), source.file, &error, error.count)
            }
        }
        guard status == 0 else {
            let message = String(decoding: error.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            engine.close()
            if let (line, text) = source.split(message) {
                throw Diagnostic("Lua syntax error in the script: \(text)", at: source.location(ofLine: line))
            }
            throw Diagnostic("the script does not compile: \(message)", at: source.location(ofLine: 1))
        }
        self.engine = Mutex(engine)
    }

    /// Runs the script on one envelope. Never throws and never traps: a failure is a value.
    public func run(_ envelope: Envelope, defaults: ScriptDefaults = ScriptDefaults()) -> ScriptRun {
        let start = ContinuousClock.now
        var run = engine.withLock { engine in engine.call(envelope, source: source, defaults: defaults) }
        run.duration = ContinuousClock.now - start
        return run
    }

    /// Fixes the clock the script reads (`os.time`, `os.date`, `time.now`) at `unixSeconds`;
    /// nil restores the real clock. Graph tests run on a fixed clock.
    public func setClock(_ unixSeconds: Double?) {
        engine.withLock { sy_script_set_clock($0.pointer, unixSeconds ?? .nan) }
    }

    /// The `state` table as JSON, for `state: persistent`; the reason when it cannot be
    /// encoded (a function in it, nested too deep, too large).
    public func stateJSON() -> Result<[UInt8], ScriptFailure> {
        engine.withLock { engine in
            var text = sy_script_text()
            let status = sy_script_state_json(engine.pointer, &text)
            let bytes = Engine.bytes(text)
            guard status == 0 else {
                return .failure(ScriptFailure(kind: .error, message: "the state cannot be kept: " + String(decoding: bytes, as: UTF8.self)))
            }
            return .success(bytes)
        }
    }

    /// Replaces the `state` table with the JSON object `json`; false when it is not one.
    @discardableResult
    public func restoreState(_ json: [UInt8]) -> Bool {
        engine.withLock { engine in
            json.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { chars in
                    sy_script_set_state_json(engine.pointer, sy_script_text(data: chars.baseAddress, length: chars.count)) == 0
                }
            }
        }
    }

    /// Bytes the script's Lua state holds now.
    public var memory: Int { engine.withLock { sy_script_memory($0.pointer) } }

    /// A JSON text decoded into Lua values and encoded again (the fuzz target's round trip).
    public func jsonRoundTrip(_ json: [UInt8]) -> Result<[UInt8], ScriptFailure> {
        engine.withLock { engine in
            var out = sy_script_text()
            let status = json.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { chars in
                    sy_script_json_roundtrip(engine.pointer, sy_script_text(data: chars.baseAddress, length: chars.count), &out)
                }
            }
            let bytes = Engine.bytes(out)
            return status == 0 ? .success(bytes) : .failure(ScriptFailure(kind: .error, message: String(decoding: bytes, as: UTF8.self)))
        }
    }
}

/// What an output envelope takes when the script does not say.
public struct ScriptDefaults: Sendable {
    /// The route's `type:` (or the one type its sinks accept), for outputs that set none.
    public var type: String?
    /// The type of an output that sets a JSON body and no type when ``type`` is nil: its body
    /// no longer fits the input's type.
    public var reshapedJSONType = "json"
    /// Likewise for a string body.
    public var reshapedTextType = "text"
    /// The route's `content_type:`, for outputs that set a body and no content type (nil: JSON
    /// bodies are `application/json`, string bodies `text/plain; charset=utf-8`).
    public var contentType: String?

    /// Creates defaults.
    public init(type: String? = nil, contentType: String? = nil) {
        self.type = type
        self.contentType = contentType
    }
}

/// Why a script call produced nothing.
public struct ScriptFailure: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Kind: String, Sendable {
        /// The script raised an error or produced a malformed envelope table.
        case error
        /// The call ran past its instruction budget.
        case instructionBudget = "instruction budget"
        /// The state reached its memory limit.
        case memoryBudget = "memory budget"
        /// An output did not fit its type.
        case refused
    }

    /// The kind.
    public var kind: Kind
    /// The message, with the file and line where Lua knew them.
    public var message: String

    /// Creates a failure.
    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    /// Whether a budget stopped the call.
    public var isBudgetStop: Bool { kind == .instructionBudget || kind == .memoryBudget }

    public var description: String { message }
}

/// What one call of a script did.
public struct ScriptRun: Sendable {
    /// The envelopes it produced (none: it dropped the envelope); empty on failure.
    public var outputs: [Envelope]
    /// Why it failed, if it did.
    public var failure: ScriptFailure?
    /// The lines it printed.
    public var printed: [String]
    /// How long the call took.
    public var duration: Duration = .zero
}

/// The Lua state behind a script; only reached under the script's lock.
private struct Engine: ~Copyable {
    var pointer: OpaquePointer
    /// Reused for the headers of each call: no allocation per envelope once warm.
    var headerBytes: [UInt8] = []
    var headerNames: [sy_script_text] = []
    var headerValues: [sy_script_text] = []
    private var closed = false

    init(pointer: OpaquePointer) { self.pointer = pointer }

    mutating func close() {
        guard !closed else { return }
        closed = true
        sy_script_close(pointer)
    }

    deinit { if !closed { sy_script_close(pointer) } }

    static func bytes(_ text: sy_script_text) -> [UInt8] {
        guard let data = text.data, text.length > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: data, count: text.length))
    }

    static func string(_ text: sy_script_text) -> String {
        guard let data = text.data, text.length > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: text.length), as: UTF8.self)
    }

    mutating func call(_ envelope: Envelope, source: ScriptSource, defaults: ScriptDefaults) -> ScriptRun {
        // Header names and values, back to back in one buffer, then their views.
        headerBytes.removeAll(keepingCapacity: true)
        for (name, value) in envelope.headers.fields {
            headerBytes.append(contentsOf: name.utf8)
            headerBytes.append(contentsOf: value.utf8)
        }
        let result: sy_script_result = headerBytes.withUnsafeBufferPointer { headerBuffer in
            headerNames.removeAll(keepingCapacity: true)
            headerValues.removeAll(keepingCapacity: true)
            let base = UnsafeRawPointer(headerBuffer.baseAddress)?.assumingMemoryBound(to: CChar.self)
            var offset = 0
            for (name, value) in envelope.headers.fields {
                let nameCount = name.utf8.count
                let valueCount = value.utf8.count
                headerNames.append(sy_script_text(data: base.map { $0 + offset }, length: nameCount))
                headerValues.append(sy_script_text(data: base.map { $0 + offset + nameCount }, length: valueCount))
                offset += nameCount + valueCount
            }
            return Self.withInput(envelope, names: headerNames, values: headerValues) { input in sy_script_call(pointer, &input) }
        }
        return Self.run(from: result, input: envelope, source: source, defaults: defaults)
    }

    private static func withInput(
        _ envelope: Envelope, names: [sy_script_text], values: [sy_script_text], _ call: (inout sy_script_input) -> sy_script_result
    ) -> sy_script_result {
        var subject = envelope.subject
        var type = envelope.type
        var id = envelope.id
        var source = envelope.source
        var contentType = envelope.contentType
        let isJSON = !envelope.contentType.hasPrefix("text/") && !envelope.body.isEmpty
        return envelope.body.withUnsafeBytes { body in
            envelope.session.withUnsafeBytes { session in
                subject.withUTF8 { subject in
                    type.withUTF8 { type in
                        id.withUTF8 { id in
                            source.withUTF8 { source in
                                contentType.withUTF8 { contentType in
                                    names.withUnsafeBufferPointer { names in
                                        values.withUnsafeBufferPointer { values in
                                            var input = sy_script_input(
                                                body: text(body), body_is_json: isJSON ? 1 : 0, subject: text(subject), type: text(type),
                                                id: text(id), source: text(source), content_type: text(contentType), session: text(session),
                                                time: envelope.time, header_count: names.count, header_names: names.baseAddress,
                                                header_values: values.baseAddress)
                                            return call(&input)
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    private static func text(_ bytes: UnsafeRawBufferPointer) -> sy_script_text {
        sy_script_text(data: bytes.baseAddress?.assumingMemoryBound(to: CChar.self), length: bytes.count)
    }

    private static func text(_ bytes: UnsafeBufferPointer<UInt8>) -> sy_script_text {
        text(UnsafeRawBufferPointer(bytes))
    }

    private static func run(from result: sy_script_result, input: Envelope, source: ScriptSource, defaults: ScriptDefaults) -> ScriptRun {
        var printed: [String] = []
        if result.printed_count > 0, let lines = result.printed {
            for index in 0..<result.printed_count { printed.append(string(lines[index])) }
        }
        guard result.status == SY_SCRIPT_OK else {
            let message = source.mapped(result.message.map { String(cString: $0) } ?? "the script failed")
            let kind: ScriptFailure.Kind =
                switch result.status {
                case SY_SCRIPT_INSTRUCTION_BUDGET: .instructionBudget
                case SY_SCRIPT_MEMORY_BUDGET: .memoryBudget
                default: .error
                }
            return ScriptRun(outputs: [], failure: ScriptFailure(kind: kind, message: message), printed: printed)
        }
        var outputs: [Envelope] = []
        outputs.reserveCapacity(result.output_count)
        for index in 0..<result.output_count {
            guard let output = result.outputs?[index] else { break }
            var envelope = input
            // One output keeps the input's id; several get ids derived from it, the same each
            // time the input comes again (so a spool's dedupe and a redelivery agree).
            if result.output_count > 1, index > 0 { envelope.id = input.id + "." + String(index) }
            if output.sets & UInt32(SY_SCRIPT_SETS_BODY) != 0 {
                envelope.body = bytes(output.body)
                envelope.contentType = defaults.contentType ?? (output.body_is_json != 0 ? "application/json" : "text/plain; charset=utf-8")
            }
            if output.sets & UInt32(SY_SCRIPT_SETS_CONTENT_TYPE) != 0 { envelope.contentType = string(output.content_type) }
            if output.sets & UInt32(SY_SCRIPT_SETS_SUBJECT) != 0 { envelope.subject = string(output.subject) }
            if output.sets & UInt32(SY_SCRIPT_SETS_TYPE) != 0 {
                envelope.type = string(output.type)
            } else if let type = defaults.type {
                envelope.type = type
            } else if output.sets & UInt32(SY_SCRIPT_SETS_BODY) != 0 {
                // A new body with no type named: the open type of what it is, as for a map.
                envelope.type = output.body_is_json != 0 ? defaults.reshapedJSONType : defaults.reshapedTextType
            }
            if output.sets & UInt32(SY_SCRIPT_SETS_HEADERS) != 0 {
                var headers = Headers()
                for header in 0..<output.header_count {
                    guard let names = output.header_names, let values = output.header_values else { break }
                    headers.append(name: string(names[header]), value: string(values[header]))
                }
                envelope.headers = headers
            }
            outputs.append(envelope)
        }
        return ScriptRun(outputs: outputs, failure: nil, printed: printed)
    }
}
