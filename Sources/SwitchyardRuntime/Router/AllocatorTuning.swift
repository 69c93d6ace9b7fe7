#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Tunes glibc's allocator for envelopes that one thread allocates and another frees.
///
/// A source's thread allocates an envelope's box (a 144-byte chunk) and a route worker
/// frees it. glibc frees a chunk of another thread's arena under that arena's lock,
/// unless the chunk is small enough for a *fast bin*, whose frees are lock-free; the default
/// limit is 128 bytes. Past it, the worker's frees and the source's allocations took turns at
/// the lock, each contended turn a futex sleep and a wake-up: the plain route's slow mode
/// (Benchmarks/RESULTS.md, "the route path's slow mode"). The limit is raised to glibc's
/// maximum (`M_MXFAST`, 160 bytes on 64-bit). The cost: freed chunks of 129 to 160 bytes wait
/// in fast bins, unmerged with their neighbours, until a larger allocation consolidates them
/// (the idle router's RSS measured the same, 58.4 MB, with and without it).
enum AllocatorTuning {
    /// Applies the tuning once per process; nothing where the allocator is not glibc's (another
    /// `malloc` preloaded, or musl).
    static let applied: Void = {
        #if canImport(Glibc)
            // mallopt is not in the Glibc module (malloc.h): looked up, as another allocator
            // preloaded may not have it.
            guard let symbol = dlsym(nil, "mallopt") else { return }
            let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
            let fastBinLimitOption: Int32 = 1  // M_MXFAST
            _ = mallopt(fastBinLimitOption, Int32(20 * MemoryLayout<Int>.size))
        #endif
    }()
}
