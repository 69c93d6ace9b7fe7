# Helpers the benchmark scripts source (after setting `release_dir` and defining `log`).

# bench_tmp NAME PLUGIN...: a temporary directory `tmp` with plugins/ (lib<PLUGIN>.so from
# $PLUGINS_FROM when set, for an A/B of two installs, else from $release_dir) and routes/; on exit every pid in `pids` is killed, `bench_on_exit` runs when
# the script defines it, and the directory is removed (KEEP_TMP=1 keeps it).
bench_tmp() {
    local name=$1
    shift
    tmp=$(mktemp -d "/tmp/$name-bench.XXXXXX")
    chmod 755 "$tmp"
    mkdir -m 755 "$tmp/plugins" "$tmp/routes"
    for plugin in "$@"; do install -m 0755 "${PLUGINS_FROM:-$release_dir}/lib$plugin.so" "$tmp/plugins/"; done
    pids=()
    trap bench_cleanup EXIT
}

bench_cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    if declare -F bench_on_exit >/dev/null; then bench_on_exit; fi
    wait 2>/dev/null || true
    if [[ ${KEEP_TMP:-0} == 1 ]]; then log "kept $tmp"; else rm -rf "$tmp"; fi
}

# A TCP port free on 127.0.0.1 right now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# wait_for FILE PATTERN [SECONDS]: until FILE contains PATTERN (default at most 20 s), else exit.
wait_for() {
    local tenths=$((${3:-20} * 10))
    for _ in $(seq "$tenths"); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    echo "timed out waiting for '$2' in $1" >&2
    tail -20 "$1" >&2
    exit 1
}

# wait_until SECONDS WHAT COMMAND...: runs COMMAND every 100 ms until it succeeds; after
# SECONDS, logs that WHAT did not happen and returns 1 (the caller decides whether that ends it).
wait_until() {
    local seconds=$1 what=$2 i
    shift 2
    for ((i = 0; i < seconds * 10; i++)); do "$@" && return 0; sleep 0.1; done
    log "timed out waiting for $what"
    return 1
}

# bench_release_build PRODUCT...: builds each product in release mode into $repo/.build-bench
# (skipped with SKIP_BUILD=1), sets `release_dir` and records what was built (bench_build_stamp);
# needs `repo`. One `swift build` per product (it takes one --product), so only what the
# benchmark runs is compiled.
bench_release_build() {
    local product stamp
    # BUILD_DIR=.build/debug: run on an existing build (a check of behaviour, not of speed).
    if [[ -n ${BUILD_DIR:-} ]]; then
        release_dir=$(cd "$repo" && cd "$BUILD_DIR" && pwd)
        return
    fi
    release_dir=$(cd "$repo" && swift build -c release --scratch-path .build-bench --show-bin-path)
    if [[ ${SKIP_BUILD:-0} != 1 ]]; then
        # What was built, for the results: the commit, and whether the sources differed from it.
        stamp="$(cd "$repo" && git rev-parse --short HEAD)$(cd "$repo" && git diff --quiet HEAD -- Sources Plugins Package.swift || echo '+uncommitted') $(date -u +%FT%TZ)"
        for product in "$@"; do
            log "building $product (release, --scratch-path .build-bench)"
            (cd "$repo" && swift build -c release --scratch-path .build-bench --product "$product" >&2)
        done
        mkdir -p "$release_dir" && echo "$stamp" >"$release_dir/bench-build-stamp"
    fi
}

# bench_build_stamp: "COMMIT[+uncommitted] TIME" of the last bench_release_build, or "unknown".
bench_build_stamp() { cat "$release_dir/bench-build-stamp" 2>/dev/null || echo unknown; }
