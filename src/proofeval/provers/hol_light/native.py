"""HOL Light as native code: its core compiled once, contexts compiled once each.

Debian's HOL Light ships sources and a bytecode toplevel, no native library. proofeval
inlines hol.ml's loads into one module (with the kernel log after fusion.ml and the
replay at the end, as the bytecode path loads them), parses it with HOL Light's own
camlp5 syntax (pa_j.cmo, which exists only as bytecode: ocaml/proofeval_parse.ml is a
small bytecode program around it) and compiles the parse tree with ocamlopt, then links
it with the checker into one executable that serves like the bytecode toplevel (see
ocaml/proofeval_native.ml), with a table of the core's values with which an answer
that applies only those is evaluated, uncompiled (values.py, ocaml/proofeval_eval.ml).
A context is inlined and parsed the same way, compiled into a plugin and cached by
content hash, so a second run compiles nothing.

Everything is built in the cache, by content hash; `NativeUnavailable` says why a HOL
Light cannot be built, and the bytecode path is used instead.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from proofeval.errors import CheckerError, InputError
from proofeval.provers.hol_light.build import (
    COMPAT,
    KERNEL,
    _source_dir,
    cache_root,
    copy_compat,
    hol_text,
    ocaml_variant,
    unlimited_stack,
)
from proofeval.provers.hol_light.protocol import decode_text
from proofeval.provers.hol_light.sources import FileId, file_id
from proofeval.provers.hol_light.values import values_module

CORE = "proofeval_hol_core"
CONTEXT_COMPILE_LIMIT = 3600.0  # seconds to parse, and to compile, one context
PARSER = "proofeval_parse"
EXECUTABLE = "proofeval-hol-native"
VALUES = "proofeval_values.ml"  # generated: values.py
SOURCES = (
    "proofeval_stubs.c",
    "proofeval_identity.ml",
    "proofeval_kernel_log.ml",
    "proofeval_replay.ml",
    "proofeval_goals.ml",
    "proofeval_quotes.ml",
    "proofeval_text.ml",
    "proofeval_hints.ml",
    "proofeval_deny.ml",
    "proofeval_phrases.ml",
    "proofeval_tool_confinement.ml",
    "proofeval_compiler.ml",
    "proofeval_tree.ml",
    "proofeval_warm_parser.ml",
    "proofeval_parse.ml",
    "proofeval_verdict.ml",
    "proofeval_server.ml",
    "proofeval_states.ml",
    "proofeval_native_slots.ml",
    "proofeval_eval.ml",
    "proofeval_native.ml",
    "proofeval_native_main.ml",
)
LOADS = re.compile(r'(?m)^(loads|needs) "([^"]+)";;')
DIRECTIVE = re.compile(r"(?m)^#[a-z_]+[^\n]*\n")
NOTHING = "let () = ();;"  # in place of a phrase (camlp5 refuses an empty one)


class NativeUnavailable(Exception):
    """Why this HOL Light cannot run natively here."""


@dataclass(frozen=True)
class NativeBuild:
    directory: Path
    core_ids: frozenset[FileId]  # the files the core inlined, as HOL Light's `needs` sees them

    @property
    def executable(self) -> Path:
        return self.directory / EXECUTABLE

    @property
    def parser(self) -> Path:
        return self.directory / "parse" / PARSER

    @property
    def contexts(self) -> Path:
        return self.directory / "contexts"

    @property
    def interfaces(self) -> str:
        """Where the core's and the contexts' compiled interfaces are, as a search path."""
        return f"{self.directory}:{self.contexts}"


# --- The core: hol.ml with its loads inlined -----------------------------------------


def core_text(hol_dir: Path, build_sources: Path) -> tuple[str, set[FileId]]:
    """hol.ml as one module's text: its prelude without the toplevel machinery, each
    `loads` replaced by the file (a file's `needs` of one already inlined dropped), the
    kernel log after the kernel and the replay at the end."""
    hol = hol_text(hol_dir)
    hol3 = is_hol_light_3(hol_dir)
    if hol3:
        hol = _hol3_native(hol_dir, hol)
    first = hol.find('loads "')
    if first < 0 or hol.count(KERNEL) != 1:
        raise NativeUnavailable(f"{hol_dir / 'hol.ml'} does not load its files as Debian's does")
    prelude = hol[:first] if hol3 else _native_prelude(hol[:first])
    ids: set[FileId] = set()

    def inline(match: re.Match[str]) -> str:
        function, name = match.groups()
        path = hol_dir / name
        if not path.is_file():
            raise NativeUnavailable(f'{function} "{name}": no such file in {hol_dir}')
        if function == "needs" and file_id(path) in ids:
            return NOTHING
        ids.add(file_id(path))
        text = LOADS.sub(inline, _phrases(path.read_text(errors="replace")))
        if name == "fusion.ml":
            text += _phrases((build_sources / "proofeval_kernel_log.ml").read_text())
        return f"(* {function} {name}: inlined *)\n{text}"

    body = LOADS.sub(inline, hol[first:])
    replay = _phrases((build_sources / "proofeval_replay.ml").read_text())
    goals = _phrases((build_sources / "proofeval_goals.ml").read_text())
    return prelude + body + replay + goals, ids


def is_hol_light_3(hol_dir: Path) -> bool:
    """HOL Light 3 (Debian 13's 3.0.0): hol.ml loads its loader as a compiled module
    (hol_loader.cmo) and its core from hol_lib.ml, and numbers are Zarith's."""
    return (hol_dir / "hol_loader.ml").is_file() and (hol_dir / "hol_lib.ml").is_file()


HOL3_DROPPED = (
    # camlp5 is loaded through findlib (the syntax is applied when compiling)
    r"if version_ge_4_14\s+then loads[^;]*;;\n",
    r"Topdirs\.dir_load[^;]*;;\n",
    r"open Hol_loader;;\n",  # its text is inlined at the top level
)


def _hol3_native(hol_dir: Path, hol: str) -> str:
    """HOL Light 3's hol.ml (hol_lib.ml inlined) as one module's text: hol_loader.ml
    inlined where hol.ml loads it compiled (Bignum is compiled on its own), camlp5's
    loading dropped, loading a file at run time a clear failure; directives do nothing."""
    loader = (hol_dir / "hol_loader.ml").read_text(errors="replace")
    hol = hol.replace("include Hol_loader;;", loader)
    failure = 'failwith ("natively compiled HOL Light cannot load files at run time: " ^ s)'
    use = "file_loader := fun s -> Toploop.use_file Format.std_formatter s;;"
    hol = hol.replace(use, f"file_loader := (fun s -> {failure});;")
    for pattern in HOL3_DROPPED:
        hol = re.sub(pattern, "", hol)
    hol = DIRECTIVE.sub(NOTHING + "\n", hol)
    if "Toploop" in hol or "Topdirs" in hol or use in hol:
        raise NativeUnavailable(
            "HOL Light 3's hol.ml is not the one proofeval knows how to compile"
        )
    return hol


def _native_prelude(prelude: str) -> str:
    """hol.ml before its first load: the toplevel directives and camlp5 loading go (the
    syntax is applied when compiling); loading a file at run time fails, clearly."""
    prelude = DIRECTIVE.sub("", prelude)
    prelude = re.sub(r"if let v = String.sub Sys.ocaml_version.*?;;\n", "", prelude, flags=re.S)
    prelude = re.sub(r"Topdirs\.dir_load[^\n]*;;\n", "", prelude)
    use = "if Toploop.use_file Format.std_formatter s then ()"
    if use not in prelude or "Toploop" in prelude.replace(use, ""):
        raise NativeUnavailable("hol.ml's prelude is not the one proofeval knows how to compile")
    failure = 'failwith ("natively compiled HOL Light cannot load files at run time: " ^ s)'
    return prelude.replace(use, f"if {failure} then ()")


def _phrases(text: str) -> str:
    """A file's text as whole phrases: directives (#install_printer...) become phrases
    that do nothing, the quotation expander is applied when compiling, and it ends with ';;'."""
    text = DIRECTIVE.sub(NOTHING + "\n", text)
    text = text.replace('Quotation.add "tot" (Quotation.ExStr (fun x -> quotexpander));;', "")
    text = text.rstrip()
    return text + ("\n" if text.endswith(";;") else "\n;;\n")


# --- Building ---------------------------------------------------------------------------


def _run(
    cmd: list[str],
    cwd: Path,
    what: str,
    error: type[Exception] = NativeUnavailable,
    timeout: float | None = None,
) -> str:
    """Run a build step (killed after `timeout` seconds): what it printed on its standard
    output; `error` says why it failed: the compiler's reason where it gives one
    ("Error: ..."), else the end of what it printed."""
    try:
        done = subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, preexec_fn=unlimited_stack,
            timeout=timeout,
        )  # fmt: skip
    except OSError as exc:
        raise error(f"{what}: cannot run {cmd[0]}: {exc.strerror}") from None
    except subprocess.TimeoutExpired:
        raise error(f"{what}: not done within {timeout:g}s") from None
    if done.returncode != 0:
        printed = " ".join((done.stdout + done.stderr).split())
        reason = printed.rsplit("Error: ", 1)[-1] if "Error: " in printed else printed[-600:]
        raise error(f"{what}: {reason}")
    return done.stdout


def _check_tools(hol_dir: Path) -> None:
    missing = [tool for tool in ("ocamlfind", "ocamlopt.opt") if shutil.which(tool) is None]
    if missing:
        raise NativeUnavailable(f"{', '.join(missing)} not found: run `make install`")
    if not (hol_dir / "pa_j.cmo").is_file():
        raise NativeUnavailable(f"{hol_dir} has no pa_j.cmo (HOL Light's syntax for camlp5)")


def _package_dir(package: str) -> str:
    done = subprocess.run(["ocamlfind", "query", package], capture_output=True, text=True)
    if done.returncode != 0:
        raise NativeUnavailable(f"the OCaml library {package} is missing: run `make install`")
    return done.stdout.strip()


def _fingerprint(text: str, hol_dir: Path, src: Path) -> str:
    h = hashlib.sha256(text.encode())
    h.update((hol_dir / "pa_j.cmo").read_bytes())
    for name in (*SOURCES, ocaml_variant()):
        h.update(name.encode() + b"\0" + (src / name).read_bytes())
    h.update(Path(__file__).with_name("values.py").read_bytes())  # writes a source
    version = subprocess.run(["ocamlopt", "-version"], capture_output=True, text=True)
    h.update(version.stdout.encode())
    return h.hexdigest()[:16]


def choose(hol_dir: Path, mode: str, on_event: Callable[[str], None]) -> NativeBuild | None:
    """The native build to run (`mode` on, or auto where it can be built), or None."""
    if mode == "off":
        return None
    try:
        return native_build(hol_dir, on_event)
    except NativeUnavailable as exc:
        if mode == "on":
            raise InputError(f"HOL Light cannot run natively (--native on): {exc}") from None
        on_event(f"HOL Light runs as bytecode, not natively: {exc}")
        return None


def native_build(hol_dir: Path, on_event: Callable[[str], None] = lambda _: None) -> NativeBuild:
    """The native checker for `hol_dir`, built once (about a minute) and cached."""
    src = _source_dir()
    _check_tools(hol_dir)
    text, ids = core_text(hol_dir, src)
    final = cache_root() / f"hol-native-{_fingerprint(text, hol_dir, src)}"
    build = NativeBuild(final, frozenset(ids))
    if build.executable.exists():
        return build
    on_event("compiling HOL Light natively (once; about a minute)")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="native-", dir=final.parent))
    try:
        _compile_all(tmp, src, text, hol_dir)
        try:
            tmp.rename(final)
        except OSError:
            if not build.executable.exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return build


def _compile_all(out: Path, src: Path, text: str, hol_dir: Path) -> None:
    for name in SOURCES:
        shutil.copy(src / name, out / name)
    copy_compat(src, out)
    (out / "contexts").mkdir()
    hol3 = is_hol_light_3(hol_dir)
    zarith = ",zarith" if hol3 else ""  # HOL Light 3's numbers
    opt = ["ocamlfind", "ocamlopt", "-package", f"num,unix,str,dynlink{zarith}"]
    _run([*opt, "-c", "proofeval_identity.ml", "proofeval_stubs.c"], out, "the kernel log")
    bignum = []  # HOL Light 3's Bignum: plain OCaml, compiled as its toplevel has it
    if hol3:
        shutil.copy(hol_dir / "bignum_zarith.ml", out / "bignum.ml")
        _run([*opt, "-w", "-a", "-c", "bignum.ml"], out, "compiling HOL Light's bignums")
        bignum = ["bignum.cmx"]
    build = NativeBuild(out, frozenset())
    _build_parser(out, hol_dir)
    _parse(build, text, f"{CORE}.ml", [], out, NativeUnavailable)
    _run([*opt, "-w", "-a", "-c", f"{CORE}.ml"], out, "compiling HOL Light natively")
    _write_values(build, opt, out)
    steps = [
        ([*opt, "-c", "proofeval_text.ml", "proofeval_verdict.ml", "proofeval_server.ml",
          "proofeval_states.ml", "proofeval_native_slots.ml", "proofeval_eval.ml",
          "proofeval_tool_confinement.ml", "proofeval_native.ml",
          "proofeval_native_main.ml"],
         "compiling the checker"),
        ([*opt, "-w", "-a", "-c", VALUES], "compiling the table of the core's values"),
        ([*opt, "-linkpkg", "-linkall", "-o", EXECUTABLE, "proofeval_stubs.o",
          "proofeval_identity.cmx", *bignum, f"{CORE}.cmx", "proofeval_text.cmx",
          "proofeval_verdict.cmx", "proofeval_server.cmx",
          "proofeval_states.cmx", "proofeval_native_slots.cmx", "proofeval_eval.cmx",
          VALUES.replace(".ml", ".cmx"), "proofeval_tool_confinement.cmx",
          "proofeval_native.cmx", "proofeval_native_main.cmx"],
         "linking the checker"),
    ]  # fmt: skip
    for cmd, what in steps:
        _run(cmd, out, what)
    (out / f"{CORE}.o").unlink()


def _write_values(build: NativeBuild, opt: list[str], out: Path) -> None:
    """The table of the core's values that answers may apply uncompiled (values.py),
    from the core's interface, parsed with HOL Light's syntax (its names in capitals
    are values) as the core was."""
    (out / "core_interface.ml").write_text(f"include {CORE.capitalize()}\n")
    signature = _run([*opt, "-i", "core_interface.ml"], out, "the core's interface")
    _parse(build, values_module(signature, CORE.capitalize()), VALUES, [], out, NativeUnavailable)


def _build_parser(out: Path, hol_dir: Path) -> None:
    """proofeval_parse, bytecode: HOL Light's pa_j exists only as bytecode. It holds the
    native compiler's passes too, and the stubs (-custom) that confine it."""
    parse = out / "parse"
    parse.mkdir()
    # HOL Light 3's pa_j installs HOL Light's quotation expander itself.
    quotes = [] if is_hol_light_3(hol_dir) else ["proofeval_quotes.ml"]
    names = [f"{COMPAT}.ml", "proofeval_hints.ml", *quotes, "proofeval_text.ml",
             "proofeval_deny.ml", "proofeval_phrases.ml", "proofeval_tool_confinement.ml",
             "proofeval_compiler.ml", "proofeval_tree.ml", "proofeval_warm_parser.ml",
             "proofeval_parse.ml"]  # fmt: skip
    for name in [*names, "proofeval_stubs.c"]:
        shutil.copy(out / name, parse / name)
    camlp5 = _package_dir("camlp5")
    streams = str(Path(_package_dir("camlp-streams")) / "camlp_streams.cma")
    packages = "compiler-libs.toplevel,compiler-libs.optcomp,unix"
    cmd = [
        "ocamlfind", "ocamlc", "-custom", "-package", packages, "-linkpkg", "-linkall",
        "-I", camlp5, streams, f"{camlp5}/camlp5o.cma", str(hol_dir / "pa_j.cmo"),
        "proofeval_stubs.c", *names, "-o", PARSER,
    ]  # fmt: skip
    _run(cmd, parse, "building the parser")


def _parse(
    build: NativeBuild,
    text: str,
    out: str,
    opened: list[str],
    cwd: Path,
    error: type[Exception],
    timeout: float | None = None,
) -> None:
    """`text` (HOL Light syntax, whole phrases) as the parse tree of a module `out` that
    opens `opened`, written in `cwd` for ocamlopt (killed after `timeout` seconds)."""
    (cwd / "source.txt").write_text(text)
    reply = cwd / "reply"
    cmd = [str(build.parser), str(reply), "context", "source.txt", out, *opened]
    try:
        done = subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, env=parser_environment(build),
            timeout=timeout,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise error(f"it was not parsed within {timeout:g}s") from None
    fields = _fields(reply) if done.returncode == 0 else ["error", done.stderr[-600:]]
    if fields != ["ok"]:
        raise error(f"it cannot be parsed: {fields[-1]}")


# --- Contexts ---------------------------------------------------------------------------


def compile_context(build: NativeBuild, text: str, opened: list[str]) -> Path:
    """A context's text (its loads inlined) as a plugin that opens `opened`, compiled
    once: named by the hash of what it is compiled from."""
    key = hashlib.sha256("\0".join([build.directory.name, *opened, text]).encode()).hexdigest()
    name = f"proofeval_ctx_{key[:20]}"
    plugin = build.contexts / f"{name}.cmxs"
    if plugin.exists():
        return plugin
    with tempfile.TemporaryDirectory(dir=build.contexts) as tmp_dir:
        tmp = Path(tmp_dir)
        # a client's header is code: its parse and compile are bounded as its load is
        _parse(build, text, f"{name}.ml", opened, tmp, CheckerError, CONTEXT_COMPILE_LIMIT)
        compile_ = ["ocamlopt.opt", "-shared", "-w", "-a", "-I", str(build.directory), "-I",
                    str(build.contexts), "-o", f"{name}.cmxs", f"{name}.ml"]  # fmt: skip
        what = "it does not compile natively"
        _run(compile_, tmp, what, CheckerError, CONTEXT_COMPILE_LIMIT)
        for ext in (".cmi", ".cmx", ".cmxs"):  # the plugin last: its presence means done
            (tmp / f"{name}{ext}").replace(build.contexts / f"{name}{ext}")
    return plugin


def _fields(reply: Path) -> list[str]:
    """The framed reply proofeval_parse wrote (see Proofeval_text.encode)."""
    try:
        count, _, rest = reply.read_bytes().partition(b"\n")
        fields = []
        for _ in range(int(count)):
            length, _, rest = rest.partition(b"\n")
            fields.append(decode_text(rest[: int(length)]))
            rest = rest[int(length) :]
        return fields
    except (OSError, ValueError):
        return ["error", "no valid reply from the parser"]


def native_environment(build: NativeBuild) -> dict[str, str]:
    """What the native checker reads besides the launcher's environment."""
    return {
        "PROOFEVAL_PARSE": str(build.parser),
        "PROOFEVAL_OCAMLOPT": shutil.which("ocamlopt.opt") or "/usr/bin/ocamlopt.opt",
        "PROOFEVAL_LOAD_PATH": build.interfaces,
    }


def parser_environment(build: NativeBuild) -> dict[str, str]:
    """What proofeval_parse reads: where the modules the deny-list knows of are."""
    return {
        "PATH": "/usr/bin:/bin",
        "PROOFEVAL_LOAD_PATH": build.interfaces,
        "OCAMLRUNPARAM": "l=1000000000",
    }
