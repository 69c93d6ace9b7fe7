internal import SwitchyardABI

extension InstanceRuntime {
    // The host's state service (ABI version 2, section "state_*"). Until the router's store
    // serves it, every call fails: a plugin must treat SY_ERR_FAILED as "no durable state".

    func stateGet(key: sy_bytes, into value: sy_writer) -> Int32 { SY_ERR_FAILED }

    func statePut(key: sy_bytes, value: sy_bytes) -> Int32 { SY_ERR_FAILED }

    func stateDelete(key: sy_bytes) -> Int32 { SY_ERR_FAILED }

    func stateScan(prefix: sy_bytes, visit: sy_state_visitor, user: UnsafeMutableRawPointer?) -> Int32 { SY_ERR_FAILED }
}
