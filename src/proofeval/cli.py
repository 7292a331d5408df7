"""The `proofeval` command line: one subcommand per module in proofeval.commands."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from proofeval.commands import (
    baseline,
    build,
    check,
    demo,
    generate,
    grade,
    mcp,
    obfuscate,
    problems,
    profile,
    prompts,
    report,
    run,
    select,
    serve,
    toolchain,
    validate,
)
from proofeval.errors import CheckerError, InputError
from proofeval.runs.manifest import version

COMMANDS = (
    run,
    generate,
    check,
    baseline,
    grade,
    report,
    prompts,
    demo,
    build,
    problems,
    validate,
    profile,
    obfuscate,
    serve,
    mcp,
    select,
    toolchain,
)


class _Version(argparse.Action):
    """--version: proofeval's version and source revision (found only when asked)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        help_text = "print proofeval's version and source revision, and exit"
        super().__init__(option_strings, argparse.SUPPRESS, nargs=0, help=help_text)

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        print(version())
        parser.exit()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="proofeval",
        description="Check machine-generated proofs in the real prover and report pass rates.",
    )
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.configure(sub)
    return p


def _terminated(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM ends a command as Ctrl-C does: its cleanup runs


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    own = getattr(args, "own_signals", False)  # the service drains on SIGTERM itself
    if not own and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what a run records it was
    try:
        return args.handler(args)
    except InputError as exc:
        print(f"proofeval: error: {exc}", file=sys.stderr)
        return 2
    except CheckerError as exc:
        print(f"proofeval: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "proofeval: interrupted; finished verdicts are kept, re-run to resume", file=sys.stderr
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
