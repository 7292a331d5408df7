"""Size of a run store against the contexts it refers to.

Usage: python benchmarks/store_size.py BENCH

Registers every problem of BENCH in a fresh run store and prints the total size of the
problems' contexts next to the size of the store file, which keeps only their hashes.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from proofeval.loaders import load_benchmark
from proofeval.store import FILE_NAME, RunStore


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    bench = load_benchmark(Path(sys.argv[1]))
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp))
        store.add_problems(bench.problems)
        store.close()
        store_mb = (Path(tmp) / FILE_NAME).stat().st_size / 1e6
    contexts_mb = sum(len(p.header.encode()) for p in bench.problems) / 1e6
    print(f"{len(bench.problems)} problems: contexts {contexts_mb:.2f} MB, store {store_mb:.2f} MB")


if __name__ == "__main__":
    main()
