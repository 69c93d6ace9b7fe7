#!/usr/bin/env bash
# Runs the BlueZ double of the tests on a private D-Bus bus with one "Slate+" board on it, for
# trying the example without the board (or a Bluetooth radio). Prints the DBUS_SYSTEM_BUS_ADDRESS
# to give the router, then waits; Ctrl-C stops it. Needs dbus-daemon, python3-dbusmock and gdbus
# (scripts/setup installs them).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d /tmp/slate-double.XXXXXX)
cat >"$dir/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:path=$dir/bus</listen>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>
CONF
dbus-daemon --config-file="$dir/bus.conf" --nofork 2>/dev/null &
daemon=$!
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$dir/bus"
for _ in $(seq 100); do [[ -S $dir/bus ]] && break; sleep 0.05; done
/usr/bin/python3 -m dbusmock --system --template "$repo/Tests/IntegrationTests/Support/bluez_slate.py" >/dev/null &
mock=$!
trap 'kill -9 $mock $daemon 2>/dev/null; rm -rf "$dir"' EXIT
mock() { gdbus call --address "$DBUS_SYSTEM_BUS_ADDRESS" --dest org.bluez --object-path / --method "org.bluez.Mock.$1" "${@:2}" >/dev/null; }
for _ in $(seq 100); do mock AddAdapter hci0 slate-double 2>/dev/null && break; sleep 0.05; done
mock AddGattLayout /org/bluez/hci0/dev_AA_BB_CC_DD_EE_01 4e1c0001-5a1d-4f0e-9b7a-52695656e7a0 \
  "[('4e1c0002-5a1d-4f0e-9b7a-52695656e7a0', ['notify']), ('4e1c0003-5a1d-4f0e-9b7a-52695656e7a0', ['notify']), ('4e1c0004-5a1d-4f0e-9b7a-52695656e7a0', ['write'])]"
mock AddDevice hci0 AA:BB:CC:DD:EE:01 "Slate+"
echo "export DBUS_SYSTEM_BUS_ADDRESS=$DBUS_SYSTEM_BUS_ADDRESS"
wait $mock
