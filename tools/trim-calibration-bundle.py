#!/usr/bin/env python3
"""Trim a calibration bundle (`schedsim machine --from-host --calibrate --save FILE`) into a
test fixture: each capture keeps its header comments and its first LINES trace lines (the
`trace` file is in time order, so that is the capture's first part; a pair cut at the end only
loses its sample), the idle capture its first IDLE_LINES. The metadata and the host's machine
file are kept as they are. Usage:

    tools/trim-calibration-bundle.py IN.txt.gz OUT.txt.gz [LINES [IDLE_LINES]]
"""
import gzip
import sys

MAGIC = "#schedsim-calibration v1"


def sections(data: bytes):
    first, _, rest = data.partition(b"\n")
    if first.decode() != MAGIC:
        sys.exit(f"{sys.argv[1]}: not a calibration bundle (first line {first[:40]!r})")
    pos = 0
    while pos < len(rest):
        end = rest.index(b"\n", pos)
        _, kind, name, length = rest[pos:end].decode().split(" ")
        start = end + 1
        stop = start + int(length)
        yield kind, name, rest[start:stop]
        pos = stop + 1


def trim(body: bytes, keep: int) -> bytes:
    out, n = [], 0
    for line in body.split(b"\n"):
        if line.startswith(b"#"):
            out.append(line)
        elif n < keep:
            out.append(line)
            n += 1
    return b"\n".join(out).rstrip(b"\n") + b"\n"


def main():
    src, dst = sys.argv[1], sys.argv[2]
    lines = int(sys.argv[3]) if len(sys.argv) > 3 else 2500
    idle_lines = int(sys.argv[4]) if len(sys.argv) > 4 else 4000
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rb") as f:
        data = f.read()
    out = [MAGIC.encode()]
    for kind, name, body in sections(data):
        if kind == "capture":
            body = trim(body, idle_lines if name == "idle" else lines)
        out.append(f"#section {kind} {name} {len(body)}".encode())
        out.append(body)
    # gzip with mtime 0: the same input gives the same bytes.
    with open(dst, "wb") as f:
        f.write(gzip.compress(b"\n".join(out) + b"\n", compresslevel=9, mtime=0))


if __name__ == "__main__":
    main()
