"""What produced a run, kept in its store: the settings that decide what is generated and
checked (`identity`), and what else a reader needs to reproduce it (`provenance`:
proofeval's version and source revision, the provers' exact builds, the command line,
when it ran).

A run is resumed only with the identity it was started with: any difference (another
model, temperature, template, extraction, time limit, checker setting, repair template,
agent budget) is refused with what differs, so that one run's pass@k never pools attempts
made under two settings. More samples are not a difference, nor more repair rounds: they
extend the same experiment (rounds 0..R are the same whatever R comes later).
"""

from __future__ import annotations

import hashlib
import re
import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit

from proofeval.errors import InputError
from proofeval.generate.client import SamplingSettings
from proofeval.generate.prompts import TEMPLATES, default_template, template_text
from proofeval.generate.repair import BUILTIN_REPAIR
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


# The settings of repair rounds and agents, as a run without them records them; a store
# made before they were recorded is read as having these.
NO_PROCEDURE: Mapping[str, object] = {
    "agent": False,
    "agent_tool_calls": None,
    "agent_tokens": None,
    "agent_seconds": None,
    "agent_instructions_sha256": None,
    "rounds": 0,
    "repair_template": None,
    "repair_template_sha256": None,
}
_REPAIR_KEYS = ("repair_template", "repair_template_sha256")


def identity(
    sampling: SamplingSettings,
    template: str | None,
    extraction: tuple[str, str | None],
    limits: tuple[float, Path | None, Path | None],
    settings: CheckSettings,
    problems: Iterable[Problem],
    procedure: Mapping[str, object] = NO_PROCEDURE,
) -> dict[str, object]:
    """The settings that decide what a run generates and how it is checked; `procedure`:
    how answers are asked for beyond one prompt (`repair` or `agent`)."""
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
        **(procedure or NO_PROCEDURE),
    }


def repair(rounds: int, template: str | None) -> dict[str, object]:
    """The identity of `run --rounds R`: R (a larger one later extends the run) and the
    repair template's name and SHA-256 (None: no round asked for yet)."""
    if not rounds:
        return dict(NO_PROCEDURE)
    path = TEMPLATES / f"{BUILTIN_REPAIR}.j2" if template is None else Path(template)
    return {
        **NO_PROCEDURE,
        "rounds": rounds,
        "repair_template": template or f"(built-in {BUILTIN_REPAIR})",
        "repair_template_sha256": _file_sha(path),
    }


def agent(tool_calls: int, tokens: int, seconds: float, instructions: str) -> dict[str, object]:
    """The identity of `run --agent`: its budgets and the instructions added to the prompt."""
    return {
        **NO_PROCEDURE,
        "agent": True,
        "agent_tool_calls": tool_calls,
        "agent_tokens": tokens,
        "agent_seconds": seconds,
        "agent_instructions_sha256": hashlib.sha256(instructions.encode()).hexdigest(),
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
    had = {**NO_PROCEDURE, **had}
    differs = differences(had, wanted)
    if differs:
        shown = "; ".join(f"{k}: {had.get(k)!r} then, {wanted.get(k)!r} now" for k in differs)
        raise InputError(
            f"{store.path.parent} was run with other settings ({shown}): resuming would mix "
            "them in one pass@k; give another RUN_DIR, the run's own settings, or --arm NAME "
            "for a new arm of the same run"
        )
    if _rounds(wanted) > _rounds(had):  # more rounds extend the run: recorded from now on
        store.set_info("identity", wanted)
    resumes = kept.get("resumed")
    store.set_info("resumed", [*(resumes if isinstance(resumes, list) else []), about])


def differences(had: Mapping[str, object], wanted: Mapping[str, object]) -> list[str]:
    """The keys whose values differ, but for what extends a run: a larger R of repair
    rounds (then the repair template may be set, if no round was asked for before)."""
    keys = set(had) | set(wanted)
    if _rounds(wanted) > _rounds(had):
        keys -= {"rounds"}
        if _rounds(had) == 0:
            keys -= set(_REPAIR_KEYS)
    return [key for key in sorted(keys) if had.get(key) != wanted.get(key)]


def _rounds(ident: Mapping[str, object]) -> int:
    rounds = ident.get("rounds")
    return rounds if isinstance(rounds, int) else 0


def end(store: RunStore) -> None:
    store.set_info("ended", _now())


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
