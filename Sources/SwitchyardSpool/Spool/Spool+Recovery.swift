extension Spool {
    /// What `PRAGMA quick_check` finds in the spool at `path`, opened read-only: nil when it is
    /// sound, else the problems (or why it cannot be read as a database at all).
    public static func damage(at path: String) -> String? { SpoolRecovery.damage(at: path) }

    /// Moves a damaged spool and its `-wal`/`-shm` files aside (to `PATH.damaged-TIME…`) so a
    /// router can start with an empty one; returns the new path of the database. Refuses
    /// while a router holds the spool.
    public static func moveAside(_ path: String) throws(SpoolOpenError) -> String { try SpoolRecovery.moveAside(path) }
}
