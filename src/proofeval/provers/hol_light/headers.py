"""What a client of the service may send as a HOL Light header: loads of HOL Light's own
files, nothing else.

A header is OCaml code that runs in the context's process as it loads, beside other
clients' attempts in the same sandbox (issue 45: it could take over what they share).
A client's header is therefore admitted only as `needs "FILE";;` lines (or `loadt`,
`loads`) naming files of the HOL Light directory, and rewritten with their absolute
paths, so that HOL Light's load path cannot find a file of the same name elsewhere (its
first entry is the working directory, where proofeval writes other contexts' files).
The files are the installation's, trusted as the core is. Anything else in the text,
comments included, refuses the header: a grammar this small leaves nothing to parse."""

from __future__ import annotations

import re
from pathlib import Path

from proofeval.errors import InputError

_LOAD = re.compile(r'\s*(needs|loadt|loads)\s+"([A-Za-z0-9_][A-Za-z0-9_./-]*)"\s*;;')
_LIMIT = 100  # loads in one header


def admitted(header: str, home: Path) -> str:
    """`header` as the context will load it (every file by its absolute path under
    `home`, HOL Light's directory); InputError saying why when it is not only loads of
    HOL Light's own files."""
    loads, position = [], 0
    while (found := _LOAD.match(header, position)) is not None:
        loads.append((found.group(1), found.group(2)))
        position = found.end()
    rest = header[position:]
    if rest.strip():
        raise InputError(
            "a client's HOL Light header may only load HOL Light's own files, one "
            '`needs "Library/FILE.ml";;` a line; this one goes on with '
            f"{rest.strip()[:60]!r} (a server started with --client-header-code runs "
            "clients' headers as code)"
        )
    if len(loads) > _LIMIT:
        raise InputError(f"a client's header may load at most {_LIMIT} files")
    return "".join(f'{verb} "{_file(name, home)}";;\n' for verb, name in loads)


def _file(name: str, home: Path) -> Path:
    root = home.resolve()
    path = (root / name).resolve()
    if ".." in Path(name).parts or not path.is_relative_to(root) or not path.is_file():
        raise InputError(f"a client's header loads {name!r}, which is not a file of {root}")
    return path
