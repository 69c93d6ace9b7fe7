import DequeModule
import Foundation
internal import Logging
internal import SwitchyardABI
import Synchronization

/// The `sy_host_context` handles plugins hold: a handle names a slot of one process-wide
/// table and the generation of the slot's owner, never an address. A host call looks the
/// instance up without a lock; once the instance's `stop()` has returned, its slot is retired
/// and every call with the handle is refused and counted (a late call can no longer reach an
/// instance that may have been freed).
///
/// Each slot has one atomic word: the calls in progress (low 32 bits), a retired bit and the
/// generation (high 31 bits). A call adds one to the word and reads the owner only when the
/// generation matches and the slot is not retired; it subtracts one when done. Retiring sets
/// the bit and waits for the calls in progress to end before the owner is released, so no
/// call holds an instance the table no longer keeps alive. Slots are used once each until
/// the table is full, then reused oldest retired first with the next generation.
final class HostContextTable: @unchecked Sendable {
    // `words` are atomic. `owners[i]` and `records[i]` are written only by the control thread
    // while no call can read them: a call reads `owners[i]` only while its increment shows the
    // slot live with its generation, and `records[i]` only with its generation; `register`
    // writes both while the generation is one no handle carries yet (between a compare-and-swap
    // that requires no call in progress and the releasing store that makes the slot live), and
    // `retire` clears `owners[i]` only after the calls that saw the slot live have ended.
    // `allocation` is guarded by `allocationLock` (an NSLock, which ThreadSanitizer sees; it
    // does not see Synchronization's Mutex on Linux, which waits on a futex directly).
    private let words: UnsafeMutablePointer<SlotWord>
    private let owners: UnsafeMutablePointer<Unmanaged<InstanceRuntime>?>
    private let records: UnsafeMutablePointer<Unmanaged<LateCallRecord>?>
    private let capacity: Int
    private let allocationLock = NSLock()
    private var allocation = Allocation()
    /// Signalled (broadcast) when the last call in progress on a retired slot ends.
    private let drained = NSCondition()
    /// Late calls whose slot was reused since (the instance can no longer be named).
    let unattributedLateCalls = Atomic<Int>(0)

    private struct Allocation {
        /// Slots below it have been used.
        var nextUnused = 0
        /// Retired slots whose owner was released, oldest first.
        var reusable: Deque<Int> = []
    }

    static let countMask: UInt64 = 0xFFFF_FFFF
    static let retiredBit: UInt64 = 1 << 32
    static let generationShift: UInt64 = 33
    static let generationLimit: UInt64 = 1 << 31
    /// A handle is `generation << slotBits | (slot + 1)`: never 0, never an address a plugin
    /// could read through by mistake.
    static let slotBits = 20

    /// The table every router's instances share.
    static let shared = HostContextTable(capacity: 1 << 14)

    init(capacity: Int) {
        precondition(capacity > 0 && capacity < 1 << Self.slotBits)
        precondition(MemoryLayout<SlotWord>.stride == SlotWord.size)
        self.capacity = capacity
        // One cache line per slot: a source's emits and a sink's acks run on different threads,
        // and slots sharing a line would make every host call bounce it between them.
        words = UnsafeMutableRawPointer.allocate(byteCount: capacity * SlotWord.size, alignment: SlotWord.size)
            .bindMemory(to: SlotWord.self, capacity: capacity)
        owners = .allocate(capacity: capacity)
        records = .allocate(capacity: capacity)
        for index in 0..<capacity {
            (words + index).initialize(to: SlotWord())
            (owners + index).initialize(to: nil)
            (records + index).initialize(to: nil)
        }
    }

    // The table lives as long as the process (`shared`); tests make small ones and leak them.

    /// A handle for `instance`, live until ``retire(_:)``; nil when every slot is taken by a
    /// live instance or a call in progress.
    func register(_ instance: InstanceRuntime, record: LateCallRecord) -> OpaquePointer? {
        allocationLock.withLock { () -> OpaquePointer? in
            var candidates = allocation.reusable.count
            while true {
                let slot: Int
                if allocation.nextUnused < capacity {
                    slot = allocation.nextUnused
                    allocation.nextUnused += 1
                } else if candidates > 0, let reused = allocation.reusable.popFirst() {
                    candidates -= 1
                    slot = reused
                } else {
                    return nil
                }
                let word = words[slot].word.load(ordering: .acquiring)
                var generation = (word >> Self.generationShift) + 1
                if generation >= Self.generationLimit { generation = 1 }
                // Only with no call in progress: a stale call of the old generation may still
                // be reading the old record.
                let claimed = words[slot].word.compareExchange(
                    expected: word & ~Self.countMask, desired: generation << Self.generationShift | Self.retiredBit,
                    ordering: .acquiringAndReleasing
                ).exchanged
                guard claimed else {
                    allocation.reusable.append(slot)
                    continue
                }
                records[slot]?.release()
                records[slot] = .passRetained(record)
                owners[slot] = .passRetained(instance)
                words[slot].word.bitwiseAnd(~Self.retiredBit, ordering: .releasing)
                return OpaquePointer(bitPattern: UInt(generation) << Self.slotBits | UInt(slot + 1))
            }
        }
    }

    /// Refuses every later call with `handle` and waits for the calls in progress to end;
    /// then the table lets go of the instance.
    func retire(_ handle: OpaquePointer) {
        guard let (slot, generation) = decode(handle) else { return }
        let word = words[slot].word.load(ordering: .acquiring)
        guard word >> Self.generationShift == generation, word & Self.retiredBit == 0 else { return }
        words[slot].word.bitwiseOr(Self.retiredBit, ordering: .acquiringAndReleasing)
        drained.lock()
        while words[slot].word.load(ordering: .acquiring) & Self.countMask != 0 { drained.wait() }
        drained.unlock()
        owners[slot]?.release()
        owners[slot] = nil
        allocationLock.withLock { allocation.reusable.append(slot) }
    }

    /// Runs `body` with the instance `handle` names while it is live; a retired handle gives
    /// `stopped` (and is counted), a malformed one `invalid`.
    @inline(__always)
    func withInstance<Result>(_ handle: OpaquePointer?, stopped: Result, invalid: Result, _ body: (InstanceRuntime) -> Result) -> Result {
        guard let handle, let (slot, generation) = decode(handle) else { return invalid }
        let entered = words[slot].word.add(1, ordering: .acquiringAndReleasing).newValue
        defer { leave(slot) }
        guard entered >> Self.generationShift == generation else {
            unattributedLateCalls.add(1, ordering: .relaxed)
            return stopped
        }
        guard entered & Self.retiredBit == 0, let owner = owners[slot] else {
            records[slot]?.takeUnretainedValue().count()
            return stopped
        }
        return body(owner.takeUnretainedValue())
    }

    @inline(__always)
    private func leave(_ slot: Int) {
        let left = words[slot].word.subtract(1, ordering: .acquiringAndReleasing).newValue
        guard left & Self.retiredBit != 0, left & Self.countMask == 0 else { return }
        // A retire may be waiting for this, the last call in progress.
        drained.lock()
        drained.broadcast()
        drained.unlock()
    }

    @inline(__always)
    private func decode(_ handle: OpaquePointer) -> (slot: Int, generation: UInt64)? {
        let bits = UInt(bitPattern: handle)
        let slot = Int(bits & (1 << Self.slotBits - 1)) - 1
        let generation = UInt64(bits >> Self.slotBits)
        guard slot >= 0, slot < capacity, generation != 0, generation < Self.generationLimit else { return nil }
        return (slot, generation)
    }
}

/// What a retired handle still knows of its instance: where to count the calls made after
/// its `stop()` returned (`plugin_calls_after_stop_total`), and to say so once in the log.
/// A slot's atomic word alone on its cache line (64 bytes).
struct SlotWord: ~Copyable {
    static let size = 64
    let word = Atomic<UInt64>(0)
    private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)
}

final class LateCallRecord: Sendable {
    // The record holds the
    // router's metrics registry and logger, not the router: a weak reference to the router
    // would give it a side table, and every retain and release of the router on the envelope
    // path (through the instances' and routes' `unowned` references) would take the slow path.
    let name: String
    private let metrics: MetricsRegistry
    private let logger: Logger
    let calls = Atomic<Int>(0)

    init(name: String, router: Router) {
        self.name = name
        self.metrics = router.metrics
        self.logger = router.logger
    }

    /// Counts one late call; the first is logged.
    func count() {
        let calls = calls.add(1, ordering: .relaxed).newValue
        metrics.record(metric: "plugin_calls_after_stop_total", instance: name, kind: SY_METRIC_COUNTER, value: 1)
        if calls == 1 {
            logger.warning(
                "the plugin called the host after its stop() returned; such calls are refused (SY_ERR_STOPPED) and counted",
                metadata: ["instance": .string(name)])
        }
    }
}
