"""Build once: a tree's library files compile once per Coq and per content, across runs.

A compiled file (`.vo`) is kept in the cache directory under a key made of the Coq that
compiled it (binary and version), the file's logical place, its text as compiled (after
the compatibility layer) and the keys of the library files it needs; a file whose key is
there is copied, not compiled. Files compile in parallel, each once its needs are done.
What coqdep said (of a header, of library files) is kept there too (`*.json`), under a
key of everything coqdep read (project.py).
The cache is `$PROOFEVAL_COQ_CACHE`, else `$XDG_CACHE_HOME/proofeval/coq-libraries`
(`~/.cache/...`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from pathlib import Path


def cache_directory() -> Path:
    given = os.environ.get("PROOFEVAL_COQ_CACHE")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "proofeval" / "coq-libraries"


def key(coq: str, logical: str, text: str, needs: list[str]) -> str:
    """The cache key of a file: `coq` names the compiler (binary and version)."""
    digest = hashlib.sha256()
    for part in (coq, logical, text, *sorted(needs)):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


class Cache:
    """The compiled files of one cache directory."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or cache_directory()
        self.hits = 0
        self.compiled = 0
        self.seconds = 0.0  # wall-clock seconds spent compiling (summed over files)
        self._lock = threading.Lock()
        self._keys: dict[str, threading.Lock] = {}

    def lock(self, file_key: str) -> threading.Lock:
        """Held while `file_key` is fetched or built: two trees of one run that need the
        same file (NTP4VC's Why3 library) compile it once."""
        with self._lock:
            return self._keys.setdefault(file_key, threading.Lock())

    def fetch(self, file_key: str, vo: Path) -> bool:
        """Copy the cached file of `file_key` to `vo`; False when there is none."""
        cached = self.directory / f"{file_key}.vo"
        if not cached.is_file():
            return False
        shutil.copyfile(cached, vo)
        with self._lock:
            self.hits += 1
        return True

    def store(self, file_key: str, vo: Path, seconds: float = 0.0) -> None:
        """Keep `vo` under `file_key` (atomically: other runs may read the cache), which
        took `seconds` to compile."""
        self.directory.mkdir(parents=True, exist_ok=True)
        partial = self.directory / f".{file_key}.{os.getpid()}.{threading.get_ident()}"
        shutil.copyfile(vo, partial)
        os.replace(partial, self.directory / f"{file_key}.vo")
        with self._lock:
            self.compiled += 1
            self.seconds += seconds

    def fetch_data(self, data_key: str) -> object:
        """What store_data kept under `data_key` (JSON), or None."""
        try:
            return json.loads((self.directory / f"{data_key}.json").read_text())
        except (OSError, ValueError):
            return None

    def store_data(self, data_key: str, data: object) -> None:
        """Keep `data` (what coqdep said, as JSON) under `data_key`, atomically as `store`."""
        self.directory.mkdir(parents=True, exist_ok=True)
        partial = self.directory / f".{data_key}.{os.getpid()}.{threading.get_ident()}"
        partial.write_text(json.dumps(data))
        os.replace(partial, self.directory / f"{data_key}.json")


def build_in_order(
    files: list[str], needs: dict[str, list[str]], build: Callable[[str], None], workers: int
) -> None:
    """Run `build` on each of `files` (given dependencies first) after those of its
    `needs` that are among them, up to `workers` at a time; the first exception stops
    the build and is raised."""
    wanted = set(files)
    futures: dict[str, Future[None]] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:

        def run(file: str, before: list[Future[None]]) -> None:
            for future in before:
                future.result()  # a failed dependency fails this file too
            build(file)

        for file in files:
            before = [futures[n] for n in needs.get(file, []) if n in wanted and n in futures]
            # a file waits in its thread: its needs were submitted before it, so the pool
            # never waits on work it has not been given (sizes stay small: a tree's files)
            futures[file] = pool.submit(run, file, before)
        done, _ = wait(futures.values(), return_when=FIRST_EXCEPTION)
        for future in done:
            if future.exception() is not None:
                for other in futures.values():
                    other.cancel()
                raise future.exception()  # type: ignore[misc]
