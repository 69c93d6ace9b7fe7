#!/usr/bin/env bash
# What a Qeo QGauge writer on this machine published, as JSON lines for the publisher's routes:
#   1. once, this device's org.qeo.system.DeviceInfo (the Qeo library published it when it
#      started; realmInfo is left to the route, which knows the realm ids);
#   2. then every INTERVAL seconds (default 0.25: the seed's writers published every 250 ms) one
#      org.qeo.sample.gauge.NetStatMessage per interface of /proc/net/dev: the counters as they
#      are and the time of the reading in nanoseconds.
# No rate is computed here: as in the seed, a reader computes bytes/s and packets/s from two
# successive samples of an interface and their timestamps.
# The device id is QGAUGE_DEVICE_ID (32 hex digits, dashes ignored) or /etc/machine-id; the
# device's name (userFriendlyName) is QGAUGE_NAME or the host name. QGAUGE_NETDEV replaces
# /proc/net/dev (for tests).
set -euo pipefail
export LC_ALL=C
interval=${1:-0.25}
# Seconds with up to 3 decimals, from 0.1 to 99999.
whole=${interval%%.*}
fraction=${interval#"$whole"}
fraction=${fraction#.}000
if [[ ! $interval =~ ^[0-9]{1,5}(\.[0-9]{1,3})?$ ]] || (( 10#$whole * 1000 + 10#${fraction:0:3} < 100 )); then
    echo "netstat.sh: interval '${interval:0:40}' is not a number of seconds from 0.1 to 99999 (e.g. 0.25 or 5)" >&2
    exit 1
fi
netdev=${QGAUGE_NETDEV:-/proc/net/dev}
id=${QGAUGE_DEVICE_ID:-$(cat /etc/machine-id 2>/dev/null || hostname | md5sum)}
id=${id:0:100}
id=${id//-/}
if [[ ! $id =~ ^[0-9a-fA-F]{32} ]]; then
    echo "netstat.sh: device id '${id:0:40}' is not 32 hex digits" >&2
    exit 1
fi
# DeviceId's two halves as signed 64-bit numbers (bash arithmetic wraps like int64), as Qeo
# read its UUID file: the first 16 hex digits are upper, the next 16 lower.
if [[ -z ${EPOCHREALTIME:-} ]]; then
    echo "netstat.sh: needs bash 5 (EPOCHREALTIME)" >&2
    exit 1
fi
upper=$((16#${id:0:16}))
lower=$((16#${id:16:16}))

# A JSON string of $1: backslash and quote escaped, control characters dropped.
json_string() {
    local text
    text=$(printf '%s' "$1" | tr -d '\000-\037\177')
    text=${text//\\/\\\\}
    text=${text//\"/\\\"}
    printf '"%s"' "$text"
}

name=${QGAUGE_NAME:-$(uname -n)}
if (( ${#name} > 64 )); then
    echo "netstat.sh: QGAUGE_NAME is longer than 64 characters" >&2
    exit 1
fi
# The values the seed's Linux platform layer gave (qeo-c-util linux_default_device.c): uname's
# machine, system, node name and release; DUMMY where it had nothing.
printf '{"deviceId":{"upper":%s,"lower":%s},"manufacturer":"DUMMY","modelName":%s,"productClass":%s,"serialNumber":"DUMMY","hardwareVersion":%s,"softwareVersion":%s,"userFriendlyName":%s,"configURL":"DUMMY"}\n' \
    "$upper" "$lower" "$(json_string "$(uname -m)")" "$(json_string "$(uname -s)")" \
    "$(json_string "$(uname -n)")" "$(json_string "$(uname -r)")" "$(json_string "$name")"

while true; do
    # Nanoseconds (microsecond resolution) of the wall clock; the seed used a monotonic clock,
    # but readers only use the difference between two samples of an interface.
    now=${EPOCHREALTIME//[!0-9]/}000
    # After "iface:" come 8 receive counters, then 8 transmit counters (17 fields, as the seed's
    # NetStatHostPublisher required). Counters stay text, so those above 2^53 are not rounded;
    # a line with a counter that is not an int64 (digits, at most 2^63 - 1) is skipped. Interface names cannot hold white space,
    # ":" or "/", but may hold quotes, backslashes and control characters.
    awk -v upper="$upper" -v lower="$lower" -v now="$now" 'NR > 2 {
        sub(/:/, " ")
        if (NF != 17) next
        for (i = 2; i <= 17; i++)
            if ($i !~ /^(0|[1-9][0-9]*)$/ || length($i) > 19 || (length($i) == 19 && $i > "9223372036854775807")) next
        name = ""
        for (k = 1; k <= length($1) && k <= 15; k++) {
            c = substr($1, k, 1)
            if (c == "\\" || c == "\"") name = name "\\" c
            else if (c !~ /[\001-\037\177]/) name = name c
        }
        printf "{\"deviceId\":{\"upper\":%s,\"lower\":%s},\"ifName\":\"%s\",\"bytesIn\":%s,\"packetsIn\":%s,\"bytesOut\":%s,\"packetsOut\":%s,\"timestamp\":%s}\n",
            upper, lower, name, $2, $3, $10, $11, now
    }' "$netdev"
    sleep "$interval"
done
