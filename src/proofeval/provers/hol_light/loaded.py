"""Each header loaded once per HOL Light core: its template (a fork of the core with the
header loaded) is shared by whoever forks from it, the checker's workers and the proof
states' sessions, and closed when the last of them lets it go. So a service that warmed
a context for proof states checks in it at once, and holds it once in memory."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

from proofeval.provers.hol_light.server import Launcher, WarmProcess

Key = tuple[str, str, "int | None"]  # the header, its directory, the load's memory bound


@dataclass(eq=False)
class _Entry:
    template: WarmProcess | None = None  # None while it loads
    users: int = 0


class LoadedContexts:
    """The templates of one core, by header, directory and memory bound."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._entries: dict[Key, _Entry] = {}

    def acquire(
        self, core: WarmProcess, header: str, directory: str, memory_mb: int | None
    ) -> WarmProcess:
        """The template of `header`, loaded into a fork of `core` within `memory_mb`
        (WarmProcess.load) unless it is loaded already or loading (then this waits for
        it). Give it back with `release`. A failed load is not kept: it raises here, and
        the next caller tries again."""
        key = (header, directory, memory_mb)
        with self._cond:
            while (entry := self._entries.get(key)) is not None and entry.template is None:
                self._cond.wait()
            if entry is not None:
                entry.users += 1
                return entry.template  # type: ignore[return-value]
            entry = self._entries[key] = _Entry()
        try:
            template = _load(core, header, directory, memory_mb)
        except BaseException:
            with self._cond:
                del self._entries[key]
                self._cond.notify_all()
            raise
        with self._cond:
            entry.template, entry.users = template, 1
            self._cond.notify_all()
        return template

    def release(self, template: WarmProcess) -> None:
        """One user fewer; the last one's release closes the template."""
        with self._cond:
            for key, entry in self._entries.items():
                if entry.template is template:
                    entry.users -= 1
                    if entry.users == 0:
                        del self._entries[key]
                        template.close()
                    return

    def users(self, header: str, directory: str, memory_mb: int | None) -> int:
        """How many hold the template of `header` (0: not loaded)."""
        with self._cond:
            entry = self._entries.get((header, directory, memory_mb))
            return 0 if entry is None or entry.template is None else entry.users


_shared: weakref.WeakKeyDictionary[Launcher, LoadedContexts] = weakref.WeakKeyDictionary()
_shared_lock = threading.Lock()


def contexts_of(proc: WarmProcess) -> LoadedContexts:
    """The templates of the core `proc` was forked from (one per launcher: its sandbox)."""
    with _shared_lock:
        return _shared.setdefault(proc.launcher, LoadedContexts())


def _load(core: WarmProcess, header: str, directory: str, memory_mb: int | None) -> WarmProcess:
    template = core.clone()
    try:
        if header.strip():
            path = core.launcher.scratch_file("context", header)
            template.load(path, directory, memory_mb=memory_mb)
    except BaseException:
        template.close()
        raise
    return template
