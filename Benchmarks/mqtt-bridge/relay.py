#!/usr/bin/env python3
"""The least an out-of-process bridge can do: a reference path for the QoS 0 benchmark.

Subscribes to `bench/#` at QoS 0 on broker A as an MQTT 3.1.1 client and writes every PUBLISH
it receives, byte for byte, to broker B as a publishing client (a QoS 0 PUBLISH has the same
wire form in both directions). It reads up to 256 KiB per recv and forwards each read's
publishes in one send: no decoding of topics or payloads, no envelopes, no routing. Whatever
throughput this reaches is the ceiling for any bridge that runs as a separate process on the
same machine, Switchyard included; Mosquitto's own bridge runs inside broker A instead.

Runs until SIGTERM; `ready` is printed once both connections are up and subscribed.
"""

import argparse
import signal
import sys

from load import RawConnection


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from-port", type=int, required=True, help="broker A port")
    parser.add_argument("--to-port", type=int, required=True, help="broker B port")
    parser.add_argument("--topic", default="bench/#")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    target = RawConnection("127.0.0.1", args.to_port, "bench-relay-out")
    source = RawConnection("127.0.0.1", args.from_port, "bench-relay-in")
    source.subscribe(args.topic, 0)
    source.sock.settimeout(None)
    print("ready", flush=True)

    pending = source.buffer
    while True:
        data = source.sock.recv(262144)
        if not data:
            raise SystemExit("broker A closed the connection")
        pending += data
        forward = bytearray()
        position = 0
        while (parsed := RawConnection.split(pending, position)) is not None:
            first, _, end = parsed
            if first >> 4 == 3:  # PUBLISH; anything else from broker A is dropped
                forward += pending[position:end]
            position = end
        del pending[:position]
        if forward:
            target.sock.sendall(forward)


if __name__ == "__main__":
    main()
