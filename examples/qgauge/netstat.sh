#!/usr/bin/env bash
# Prints one JSON line per network interface of this machine every INTERVAL seconds (default 5):
# the counters of /proc/net/dev, shaped as Qeo's org.qeo.sample.gauge.NetStatMessage. The device
# id is QGAUGE_DEVICE_ID (32 hex digits) or this machine's /etc/machine-id.
set -euo pipefail
interval=${1:-5}
id=${QGAUGE_DEVICE_ID:-$(cat /etc/machine-id 2>/dev/null || hostname | md5sum)}
id=${id//-/}
if [[ ! $id =~ ^[0-9a-fA-F]{32} ]]; then
    echo "netstat.sh: device id '$id' is not 32 hex digits" >&2
    exit 1
fi
# DeviceId's two halves as signed 64-bit numbers (bash arithmetic wraps like int64).
upper=$((16#${id:0:16}))
lower=$((16#${id:16:16}))
while true; do
    now=$(date +%s%3N)
    # After "iface:" come 8 receive counters, then 8 transmit counters. Fields stay text, so
    # counters above 2^53 are not rounded.
    awk -v upper="$upper" -v lower="$lower" -v now="$now" 'NR > 2 {
        sub(/:/, " ")
        printf "{\"deviceId\":{\"upper\":%s,\"lower\":%s},\"ifName\":\"%s\",\"bytesIn\":%s,\"packetsIn\":%s,\"bytesOut\":%s,\"packetsOut\":%s,\"timestamp\":%s}\n",
            upper, lower, $1, $2, $3, $10, $11, now
    }' /proc/net/dev
    sleep "$interval"
done
