// The library has no code of its own: SwiftPM links every module its dependencies list names
// into the shared object, and the targets that depend on it import those modules directly.
