#!/usr/bin/env python3
"""Writes a log of SIZE_MB where every line is an `NCCL INFO` line, as `NCCL_DEBUG=INFO` logs of
multi-GPU jobs are: the real NCCL INFO lines of the explain corpus (threads users pasted them
in), repeated with the host, pid, thread and rank of each line varied as a job's ranks vary
them.

usage: nccl_info_log.py OUT [SIZE_MB]
"""
import argparse
import random
import re
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "crates/cudoctor-explain/tests/corpus"
PREFIX = re.compile(r"^(?:\[\d+\] )?([\w.-]+):(\d+):(\d+) \[(\d+)\] (NCCL INFO .*)$")


def main() -> None:
    # argparse, so that "--help" prints this and is never taken for the file to write.
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", metavar="OUT", type=Path)
    parser.add_argument("size", metavar="SIZE_MB", type=int, nargs="?", default=200)
    args = parser.parse_args()
    out, size = args.out, args.size
    bodies = []
    for f in sorted(CORPUS.glob("*.toml")):
        for line in f.read_text().splitlines():
            m = PREFIX.match(line.strip())
            if m:
                bodies.append(m.group(5))
    if not bodies:
        sys.exit("no NCCL INFO lines in the corpus")
    rng = random.Random(42)
    target = size * 1024 * 1024
    written = 0
    with out.open("w") as f:
        while written < target:
            chunk = []
            for _ in range(10000):
                host = f"node{rng.randrange(64)}"
                pid = rng.randrange(1000, 99999)
                rank = rng.randrange(8)
                chunk.append(f"{host}:{pid}:{pid + rng.randrange(200)} [{rank}] {rng.choice(bodies)}\n")
            text = "".join(chunk)
            f.write(text)
            written += len(text)
    print(f"{out}: {written // 1048576} MB from {len(bodies)} real NCCL INFO lines", file=sys.stderr)


if __name__ == "__main__":
    main()
