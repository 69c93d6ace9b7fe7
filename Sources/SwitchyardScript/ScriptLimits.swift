/// The budgets of one script's Lua state: what keeps a hostile or mistaken script from
/// stalling its route or growing the router.
public struct ScriptLimits: Sendable, Hashable {
    /// Bytes the state may hold: its globals, `state`, the envelope being handled and garbage.
    public var memory: Int
    /// Lua VM instructions one call may run.
    public var instructions: Int
    /// The longest string a library function builds (`string.rep`, `table.concat`,
    /// `json.encode`, …) and the longest subject the pattern functions search.
    public var stringLength: Int
    /// The estimated steps one pattern match may take (see docs/scripting.md).
    public var patternSteps: Int
    /// Envelopes one call may produce.
    public var outputs: Int

    /// The defaults: 16 MiB, 1,000,000 instructions, 1 MiB strings, 100,000,000 pattern steps
    /// and 1,000 outputs per envelope.
    public static let standard = ScriptLimits(
        memory: 16 * 1024 * 1024, instructions: 1_000_000, stringLength: 1024 * 1024, patternSteps: 100_000_000, outputs: 1000)

    /// Creates limits.
    public init(memory: Int, instructions: Int, stringLength: Int, patternSteps: Int, outputs: Int) {
        self.memory = memory
        self.instructions = instructions
        self.stringLength = stringLength
        self.patternSteps = patternSteps
        self.outputs = outputs
    }
}
