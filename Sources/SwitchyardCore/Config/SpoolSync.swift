/// How hard the spool pushes each commit to the disk (`spool.sync`).
public enum SpoolSync: String, Sendable {
    /// Every commit is on the disk before a source is confirmed: nothing is lost on power loss.
    case full
    /// Commits reach the operating system, which writes them out at checkpoints: a crash of
    /// the router loses nothing, a power loss can lose the last commits.
    case normal
}
