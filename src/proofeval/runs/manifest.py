"""What produced a run, kept in its store: the settings that decide what is generated and
checked (`identity`), and what else a reader needs to reproduce it (`provenance`:
proofeval's version and source revision, the provers' exact builds, the command line,
when it ran).

A run is resumed only with the identity it was started with: any difference (another
model, temperature, template, extraction, time limit, checker setting) is refused with
what differs, so that one run's pass@k never pools attempts made under two settings.
More samples are not a difference: they extend the same experiment.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import subprocess
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit

from proofeval.errors import InputError
from proofeval.generate.client import SamplingSettings
from proofeval.generate.prompts import default_template, template_text
from proofeval.model import Problem
from proofeval.provers import registry
from proofeval.provers.interface import CheckSettings
from proofeval.store import RunStore

SOURCES = Path(__file__).resolve().parents[2]  # the directory that holds the package


def version() -> str:
    """proofeval's version, and its source revision where it runs from a git checkout."""
    try:
        number = metadata.version("proofeval")
    except metadata.PackageNotFoundError:
        number = "unknown"
    revision = source_revision()
    return f"proofeval {number}" + (f" ({revision})" if revision else "")


def source_revision() -> str:
    """The git commit proofeval's sources are at, "+dirty" when they differ from it; "" when
    they are not in a git checkout (an installed wheel)."""
    git = ["git", "-C", str(SOURCES)]
    try:
        head = subprocess.run([*git, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10)  # fmt: skip
        if head.returncode != 0:
            return ""
        dirty = subprocess.run([*git, "status", "--porcelain", "--", "."], capture_output=True,
                               text=True, timeout=10)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def endpoint(base_url: str | None) -> str:
    """Where the model was asked: the scheme and host of its URL (never a key or a path's
    secrets), or "default" for the openai package's default."""
    if not base_url:
        return "default"
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path.rstrip('/')}"


def _without_secrets(argument: str) -> str:
    """A URL of the command line as `endpoint` keeps it (no user, password or query)."""
    return endpoint(argument) if re.match(r"[a-z][a-z0-9+.-]*://", argument, re.I) else argument


def _templates_sha(template: str | None, problems: Iterable[Problem]) -> str:
    """The SHA-256 of the text of every template the run's prompts come from."""
    specs = {template} if template else {default_template(p.prover) for p in problems}
    digest = hashlib.sha256()
    for spec in sorted(specs):
        digest.update(template_text(spec)[1].encode())
    return digest.hexdigest()


def _file_sha(path: Path | None) -> str | None:
    if path is None or not path.is_file():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


def identity(
    sampling: SamplingSettings,
    template: str | None,
    extraction: tuple[str, str | None],
    limits: tuple[float, Path | None, Path | None],
    settings: CheckSettings,
    problems: Iterable[Problem],
) -> dict[str, object]:
    """The settings that decide what a run generates and how it is checked."""
    problems = list(problems)
    default, timeout_map, timeouts = limits
    return {
        "model": sampling.model,
        "endpoint": endpoint(sampling.base_url),
        "style": sampling.style,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_tokens,
        "reasoning_effort": sampling.reasoning_effort,
        "template": template or "(each prover's built-in)",
        "template_sha256": _templates_sha(template, problems),
        "extract_block": extraction[0],
        "extract_marker": extraction[1],
        "timeout": default,
        "timeout_map_sha256": _file_sha(timeout_map),
        "timeouts_sha256": _file_sha(timeouts),
        "replay": settings.replay,
        "coqchk": settings.coqchk,
        "coq_toolchain": settings.coq_toolchain,
        "memory_mb": settings.memory_mb,
        "sandbox": settings.sandbox,
        "hol_light": str(settings.hol_dir or registry.backend("hol-light").home),
    }


def provenance(
    problems: Iterable[Problem], settings: CheckSettings, command: Sequence[str]
) -> dict[str, object]:
    """What else produced the run: versions, the command line, when it started."""
    return {
        "proofeval": version(),
        "provers": [s.description for s in registry.systems(problems, settings)],
        "command": shlex.join(["proofeval", *map(_without_secrets, command)]),
        "python": sys.version.split()[0],
        "started": _now(),
    }


def begin(store: RunStore, wanted: dict[str, object], about: dict[str, object]) -> None:
    """Record the run's identity and provenance on its first start; on a resume, refuse
    an identity that differs (InputError naming each difference) and add the resume to
    the provenance."""
    kept = store.info()
    had = kept.get("identity")
    if had is None:
        store.set_info("identity", wanted)
        store.set_info("provenance", about)
        return
    assert isinstance(had, dict)
    differs = [key for key in sorted(set(had) | set(wanted)) if had.get(key) != wanted.get(key)]
    if differs:
        shown = "; ".join(f"{k}: {had.get(k)!r} then, {wanted.get(k)!r} now" for k in differs)
        raise InputError(
            f"{store.path.parent} was run with other settings ({shown}): resuming would mix "
            "them in one pass@k; give another RUN_DIR, or the run's own settings"
        )
    resumes = kept.get("resumed")
    store.set_info("resumed", [*(resumes if isinstance(resumes, list) else []), about])


def end(store: RunStore) -> None:
    store.set_info("ended", _now())


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
