# Allocation counting for the benchmark scripts and scripts/allocations (source it after
# defining `log`). The router process is run with malloc-counter.so preloaded (see
# malloc-counter.c): the router binary is unchanged, and pays nothing when the counter is off.
#
# In a benchmark's run.sh, with ALLOCATIONS=1 in the environment (every function below is a
# no-op otherwise):
#   source "$here/../lib/allocations.sh"
#   alloc_wrap "$router_bin" run "$routes" … &      # instead of "$router_bin" run "$routes" … &
#   alloc_mark "$router_pid"                        # before the measured load
#   alloc_report "$router_pid" "$COUNT" "qos $qos"  # after it: logs allocations per envelope
# The figure is then over a run under load (batching varies with timing); scripts/allocations
# sends one envelope at a time for the deterministic figures CI holds.

alloc_dir=${ALLOC_DIR:-${TMPDIR:-/tmp}/switchyard-malloc-counter.$UID}

# alloc_counter_build: compiles malloc-counter.so into $alloc_dir (again only when the source
# is newer) and sets `alloc_so`.
alloc_counter_build() {
    local source
    source="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/malloc-counter.c"
    alloc_so="$alloc_dir/malloc-counter.so"
    mkdir -p "$alloc_dir"
    if [[ ! -f $alloc_so || $source -nt $alloc_so ]]; then
        cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$alloc_so.tmp" "$source" && mv "$alloc_so.tmp" "$alloc_so"
    fi
}

# alloc_wrap COMMAND…: runs COMMAND (exec: the pid stays the caller's `$!`) with the counter
# preloaded and its snapshot file at $alloc_dir/counts.<pid>, when ALLOCATIONS=1.
# SWIFT_DETERMINISTIC_HASHING=1: Swift seeds hashing per process, so the order in which a
# dictionary's entries come out (headers, JSON objects) differs from run to run, and with it how
# often the buffers built from them grow; that moved the push paths' figures by up to 5 % between
# runs of one binary, and by about 1 % with a fixed seed.
alloc_wrap() {
    if [[ ${ALLOCATIONS:-0} != 1 ]]; then exec "$@"; fi
    [[ -n ${alloc_so:-} ]] || alloc_counter_build
    # $BASHPID: this subshell's pid, which exec keeps.
    exec env LD_PRELOAD="$alloc_so" MALLOC_COUNTER_FILE="$alloc_dir/counts.$BASHPID" SWIFT_DETERMINISTIC_HASHING=1 "$@"
}

# alloc_snapshot PID: prints "ALLOCATIONS BYTES" of PID now (SIGUSR2, then waits at most 10 s
# for the line its counter appends).
alloc_snapshot() {
    local pid=$1 file="$alloc_dir/counts.$1" before after _
    before=$( (wc -l <"$file") 2>/dev/null || echo 0)
    kill -USR2 "$pid"
    for _ in $(seq 1000); do
        after=$( (wc -l <"$file") 2>/dev/null || echo 0)
        if ((after > before)); then
            tail -1 "$file" | awk '{print $2, $4}'
            return 0
        fi
        sleep 0.01
    done
    echo "no allocation snapshot from process $pid in $file (started with alloc_wrap?)" >&2
    return 1
}

# alloc_mark PID: the snapshot alloc_report subtracts.
alloc_mark() {
    [[ ${ALLOCATIONS:-0} == 1 ]] || return 0
    alloc_marked=$(alloc_snapshot "$1")
}

# alloc_report PID ENVELOPES LABEL: logs the allocations (and bytes) per envelope since
# alloc_mark, and sets `alloc_per_envelope`.
alloc_report() {
    [[ ${ALLOCATIONS:-0} == 1 ]] || return 0
    local now
    now=$(alloc_snapshot "$1") || return 1
    read -r alloc_per_envelope alloc_bytes_per_envelope < <(
        awk -v a="$alloc_marked" -v b="$now" -v n="$2" \
            'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.1f %.0f\n", (y[1] - x[1]) / n, (y[2] - x[2]) / n }')
    log "$3: $alloc_per_envelope allocations ($alloc_bytes_per_envelope bytes) per envelope in the router over $2 envelopes"
}
