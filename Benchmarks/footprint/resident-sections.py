#!/usr/bin/env python3
"""Which part of a mapped file a running process keeps resident, by ELF section.

Usage: resident-sections.py PID FILE-SUBSTRING

Reads the process's mappings of the first file whose path contains FILE-SUBSTRING
(/proc/PID/maps), asks /proc/PID/pagemap which of their pages are present, and attributes each
page to the section at its address (readelf -S, relative to where the file is loaded). Prints
resident / mapped MB per section, largest first; a page two sections share counts for the first.
Pages of a writable mapping are marked "(rw)": after relocation they are the process's own copies. Needs root (pagemap's present bit is readable by the owner; root for
another user's process).
"""

import collections
import re
import struct
import subprocess
import sys

PAGE = 4096


def main() -> None:
    pid, needle = int(sys.argv[1]), sys.argv[2]
    mappings, path = [], None
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and needle in fields[5] and (path is None or fields[5] == path):
                low, high = (int(x, 16) for x in fields[0].split("-"))
                mappings.append((low, high, int(fields[2], 16), fields[1]))
                path = fields[5]
    if path is None:
        sys.exit(f"no mapping of a file matching '{needle}' in process {pid}")
    sections = []
    headers = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, check=True).stdout
    for line in headers.splitlines():
        # [Nr] Name Type Address Off Size ...
        match = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if match and int(match.group(3), 16) > 0:
            sections.append((match.group(1), int(match.group(2), 16), int(match.group(3), 16)))
    # Where the file is loaded: its first mapping maps file offset 0 at the file's address 0.
    base = min(low - offset for low, _, offset, _ in mappings)
    resident: collections.Counter[str] = collections.Counter()
    mapped: collections.Counter[str] = collections.Counter()
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for low, high, offset, permissions in mappings:
            for address in range(low, high, PAGE):
                page = address - base
                name = next((s[0] for s in sections if s[1] < page + PAGE and page < s[1] + s[2]), "(no section)")
                if permissions.startswith("rw"):
                    name += " (rw)"
                pagemap.seek(address // PAGE * 8)
                mapped[name] += PAGE
                if struct.unpack("Q", pagemap.read(8))[0] >> 63:
                    resident[name] += PAGE
    print(path)
    for name in sorted(mapped, key=lambda n: -resident[n]):
        if resident[name] or mapped[name] > 512 * 1024:
            print(f"{resident[name] / 2**20:7.2f} / {mapped[name] / 2**20:7.2f} MB  {name}")
    print(f"{sum(resident.values()) / 2**20:7.2f} / {sum(mapped.values()) / 2**20:7.2f} MB  total")


if __name__ == "__main__":
    main()
