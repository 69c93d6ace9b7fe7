#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Marks the threads that are delivering on behalf of an emit (see
/// ``RouteRuntime/deliversInline``), so a sink that emits from inside its `deliver` hands that
/// second route to the pool instead of running it deeper on the same stack.
enum InlineDelivery {
    /// The thread's mark: set while it runs a route's slice inline. A key rather than a
    /// Swift value, because Swift has no thread-local storage of its own.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // Without a key (the process ran out of them) no thread may deliver inline: `enter`
        // then finds every thread marked.
        guard pthread_key_create(&key, nil) == 0 else { return pthread_key_t.max }
        return key
    }()

    /// Marks the calling thread; false (and nothing marked) when it already is, or when the
    /// key could not be created.
    static func enter() -> Bool {
        let key = Self.key
        guard key != pthread_key_t.max, pthread_getspecific(key) == nil else { return false }
        return pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1)) == 0
    }

    /// Clears the calling thread's mark (after a successful ``enter()``).
    static func leave() {
        pthread_setspecific(key, nil)
    }
}
