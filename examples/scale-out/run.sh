#!/usr/bin/env bash
# Two routers acting as one, on this machine: a Mosquitto broker, a PostgreSQL 15 server and two
# routers started with the same routes.yaml. It publishes $MESSAGES jobs, shows how the broker
# split them, disables the heartbeat iiidea on one router and shows the other following, then
# kills the router holding the exclusive announcer and shows the other taking it over.
# Everything it starts is stopped when it ends (or is interrupted); its folder is removed, or
# kept with the logs when something failed (or with KEEP=1).
# Needs Debian's mosquitto, mosquitto-clients and postgresql (scripts/setup installs them) and a
# built router (swift build; scripts/install-plugins .build/debug).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
switchyard=${SWITCHYARD:-$root/.build/debug/switchyard}
plugins=${PLUGINS:-$root/Plugins}
messages=${MESSAGES:-20}

work=$(mktemp -d /tmp/switchyard-scale-out-XXXXXX)
chmod 755 "$work"  # the postgres user (as root) reaches its cluster in $work/pg
pids=()
pg_pid=""
cleanup() {
    local status=$?
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    # SIGINT: PostgreSQL's fast shutdown (SIGTERM would wait for its clients).
    [[ -z $pg_pid ]] || kill -INT "$pg_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [[ -n ${KEEP:-} || $status -ne 0 ]]; then echo "run.sh: logs kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# wait_for SECONDS DESCRIPTION COMMAND...: runs COMMAND every 100 ms until it succeeds (a
# function, when what it checks must be read again each time).
wait_for() {
    local seconds=$1 what=$2
    shift 2
    for ((i = 0; i < seconds * 10; i++)); do
        if "$@"; then return 0; fi
        sleep 0.1
    done
    echo "run.sh: timed out waiting for $what" >&2
    return 1
}

# shellcheck source=../../scripts/lib/private-postgres.sh
source "$root/scripts/lib/private-postgres.sh"
start_private_postgres "$work/pg"
export STORE_URL=$store_url
echo "PostgreSQL on 127.0.0.1:$pg_port"

mqtt_port=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\n' "$mqtt_port" > "$work/mosquitto.conf"
mosquitto -c "$work/mosquitto.conf" > "$work/mosquitto.log" 2>&1 &
pids+=($!)
export BROKER_URL="mqtt://127.0.0.1:$mqtt_port"
wait_for 10 "Mosquitto" python3 -c "import socket; socket.create_connection(('127.0.0.1', $mqtt_port), 1)"
echo "Mosquitto on 127.0.0.1:$mqtt_port"

# The store's schema once, before the routers (each would also apply it at start).
"$switchyard" store migrate "$root/examples/scale-out/routes.yaml" --spool "$work/router1/spool.db"

admins=()
for node in 1 2; do
    mkdir -p "$work/router$node"
    admin_port=$(free_port)
    (cd "$work/router$node" && OUTPUT=$work/router$node exec "$switchyard" run "$root/examples/scale-out/routes.yaml" --plugins "$plugins" \
        --spool "$work/router$node/spool.db" --admin "127.0.0.1:$admin_port" > log 2>&1) &
    pids+=($!)
    admins+=("127.0.0.1:$admin_port")
    wait_for 30 "router $node" curl -fs "http://127.0.0.1:$admin_port/readyz" -o /dev/null
    echo "router $node: admin on 127.0.0.1:$admin_port, folder $work/router$node"
done

for ((job = 1; job <= messages; job++)); do
    mosquitto_pub -h 127.0.0.1 -p "$mqtt_port" -q 1 -V mqttv5 -t "jobs/$job" -m "job $job"
done
all_handled() { test "$(cat "$work"/router*/handled.jsonl 2>/dev/null | wc -l)" -ge "$messages"; }
wait_for 30 "$messages jobs handled" all_handled
one=$(wc -l < "$work/router1/handled.jsonl" 2>/dev/null || echo 0)
two=$(wc -l < "$work/router2/handled.jsonl" 2>/dev/null || echo 0)
echo "jobs: router 1 handled $one, router 2 handled $two, together $((one + two)) of $messages"

"$switchyard" iiidea disable heartbeat --admin "${admins[0]}"
state_on_two() { "$switchyard" iiidea list --admin "${admins[1]}" | cut -f2; }
two_follows() { test "$(state_on_two)" = disabled; }
wait_for 5 "router 2 to follow" two_follows
echo "heartbeat disabled on router 1; router 2 says: $(state_on_two)"

# The exclusive announcer runs on one router; kill that one (kill -9) and the other takes over.
holder_of() {
    local index
    for index in 0 1; do
        if curl -fs "http://${admins[$index]}/v1/instances" | python3 -c '
import json, sys
held = any(i.get("name") == "announcer" and i.get("hold") == "held" for i in json.load(sys.stdin))
sys.exit(0 if held else 1)'; then
            echo $((index + 1))
            return 0
        fi
    done
    return 1
}
has_holder() { holder_of > /dev/null; }
wait_for 10 "a router to hold the announcer" has_holder
holder=$(holder_of)
other=$((3 - holder))
kill -KILL "${pids[$holder]}"  # pids: Mosquitto, router 1, router 2
wait "${pids[$holder]}" 2>/dev/null || true  # (bash would say "Killed")
other_holds() { test "$(holder_of 2>/dev/null)" = "$other"; }
wait_for 10 "router $other to take the announcer over" other_holds
echo "announcer: router $holder held it and was killed; router $other took it over"
