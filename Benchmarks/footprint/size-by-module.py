#!/usr/bin/env python3
"""Bytes each module puts into a linked image, from the linker's map file (-Xlinker -Map=FILE).

Usage: size-by-module.py MAP [TOP]

Sums the sizes of the input sections the linker kept in loaded (non-debug) output sections, by
module: the `NAME.build` directory SwiftPM compiled the object into, or the file name of a
system object or archive. A bloaty-like "which dependency costs what" for one plugin.
"""

import collections
import re
import sys

# An input section: ` .text.name 0xADDR 0xSIZE FILE`, or its name alone and the rest on the
# next line when the name is long.
ENTRY = re.compile(r"^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")
NAMED = re.compile(r"^ (\S+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")
NAME_ONLY = re.compile(r"^ (\S+)$")


def module_of(path: str) -> str:
    match = re.search(r"/([^/]+)\.build/", path)
    if match:
        return match[1]
    return re.sub(r"\(.*\)$", "", path.rsplit("/", 1)[-1])


def main() -> None:
    lines = open(sys.argv[1], encoding="utf-8", errors="replace").read().splitlines()
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    start = next(i for i, line in enumerate(lines) if line.startswith(("Linker script and memory map", "Memory map")))
    sizes: collections.Counter[str] = collections.Counter()
    pending = None
    for line in lines[start:]:
        named = NAMED.match(line)
        if named:
            section, address, size, path = named[1], int(named[2], 16), int(named[3], 16), named[4]
        elif pending and ENTRY.match(line):
            entry = ENTRY.match(line)
            section, address, size, path = pending, int(entry[1], 16), int(entry[2], 16), entry[3]
        else:
            only = NAME_ONLY.match(line)
            pending = only[1] if only else None
            continue
        pending = None
        if section.startswith((".debug", ".comment", ".note", ".swift1_autolink")) or address == 0:
            continue
        sizes[module_of(path)] += size
    total = sum(sizes.values())
    print(f"{total / 1e6:8.2f} MB  total (loaded sections)")
    for module, size in sizes.most_common(top):
        print(f"{size / 1e6:8.2f} MB  {100 * size / total:5.1f} %  {module}")


if __name__ == "__main__":
    main()
