#!/usr/bin/env python3
"""Links the release build again with its third-party dependencies in ONE shared library.

Usage: shared-deps-prototype.py REPO OUT

An evaluation for issue 20, not a build step: today the router and each Swift plugin link their
own copy of SwiftNIO and the rest of their dependencies, so a process holds up to four copies
(and four NIO singleton event-loop groups). This takes the object files SwiftPM compiled into
REPO/.build-bench (release) and SwiftPM's own link commands, and links
  OUT/bin/libswitchyard-deps.so   every object of a third-party module (NIO, NIOSSL, BoringSSL,
                                  swift-crypto, Hummingbird, AsyncHTTPClient, ArgumentParser, ...)
  OUT/bin/switchyard              the router's own modules, against it
  OUT/plugins/lib<name>.so        each plugin's own modules, against it (exports: the entry only)
(unstripped, in OUT/build/), then installs them stripped with scripts/install-stripped as
OUT/bin/switchyard, OUT/bin/libswitchyard-deps.so and OUT/lib/switchyard/plugins/, the layout
`INSTALL=OUT Benchmarks/footprint/run.sh` measures: one copy of each dependency per process.
The plugins find the library because the router has it loaded already (same SONAME).
"""

import json
import os
import re
import subprocess
import sys

FIRST_PARTY = re.compile(
    r"^(Switchyard\w*|switchyard|MQTT\w+|SIP\w+|Push\w+|Qeo\w+|BLEPlugin|SDBus|CorePlugin|CRealmCrypto|CSQLite)$"
)
PRODUCTS = ["switchyard", "core", "mqtt", "sip", "push", "qeo", "ble"]


def link_command(yaml_lines: list[str], product: str) -> tuple[list[str], list[str]]:
    """SwiftPM's link arguments and object inputs of PRODUCT."""
    for index, line in enumerate(yaml_lines):
        if line.strip().startswith(f'"C.{product}-x86_64-unknown-linux-gnu-release.'):
            args = inputs = None
            for following in yaml_lines[index : index + 10]:
                text = following.strip()
                if text.startswith("inputs:"):
                    inputs = [i for i in json.loads(text[7:]) if i.endswith(".o") and "-tool.build/" not in i]
                if text.startswith("args:"):
                    return json.loads(text[5:]), inputs
    sys.exit(f"no link command for {product}")


def module(path: str) -> str:
    return re.search(r"/([^/]+)\.build/", path)[1]


def main() -> None:
    repo, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    build = f"{out}/build"
    os.makedirs(f"{build}/plugins", exist_ok=True)
    os.makedirs(f"{out}/bin", exist_ok=True)
    os.makedirs(f"{out}/lib/switchyard/plugins", exist_ok=True)
    lines = open(f"{repo}/.build-bench/release.yaml").read().splitlines()
    commands = {product: link_command(lines, product) for product in PRODUCTS}
    shared = sorted({o for _, inputs in commands.values() for o in inputs if not FIRST_PARTY.match(module(o))})
    print(f"shared library: {len(shared)} objects of "
          f"{len({module(o) for o in shared})} modules")

    def run(args: list[str], objects: list[str], name: str) -> None:
        listing = f"{build}/{name}.objects"
        with open(listing, "w") as file:
            file.write("\n".join(json.dumps(o) for o in objects) + "\n")
        args = [a for a in args if not a.startswith("@")] + [f"@{listing}"]
        subprocess.run(args, check=True)

    release = f"{repo}/.build-bench/x86_64-unknown-linux-gnu/release"
    deps = f"{build}/libswitchyard-deps.so"
    args = ["swiftc", "-lstdc++", "-lm", "-lz", "-L", release, "-o", deps, "-module-name", "switchyard_deps",
            "-emit-library", "-Xlinker", "--gc-sections", "-Xlinker", "-rpath=$ORIGIN",
            "-Xlinker", "-soname=libswitchyard-deps.so", "-target", "x86_64-unknown-linux-gnu", "-g"]
    run(args, shared, "deps")

    exports = f"{repo}/Sources/SwitchyardABI/plugin.exports"
    for product, (args, inputs) in commands.items():
        own = [o for o in inputs if FIRST_PARTY.match(module(o))]
        target = f"{build}/switchyard" if product == "switchyard" else f"{build}/plugins/lib{product}.so"
        args = list(args)
        args[args.index("-o") + 1] = target
        args += ["-L", build, "-lswitchyard-deps"]
        if product != "switchyard" and not any("--version-script" in a for a in args):
            args += ["-Xlinker", f"--version-script={exports}"]
        run(args, own, product)
        print(f"linked {target}")

    install = f"{repo}/scripts/install-stripped"
    for name in ("switchyard", "libswitchyard-deps.so"):
        subprocess.run([install, f"{build}/{name}", f"{out}/bin/{name}"], check=True)
    for product in PRODUCTS[1:]:
        subprocess.run([install, f"{build}/plugins/lib{product}.so", f"{out}/lib/switchyard/plugins/lib{product}.so"], check=True)
    os.chmod(f"{out}/lib/switchyard/plugins", 0o755)


if __name__ == "__main__":
    main()
