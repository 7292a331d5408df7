"""proofeval generate: ask a model for proofs; also the model options `run` shares."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from proofeval.commands.bench_options import BENCH_HELP, add_benchmark_options, selection
from proofeval.commands.options import positive
from proofeval.generate.client import SamplingSettings
from proofeval.generate.prompts import BUILTIN
from proofeval.runs.generate import Extraction, GenerateOptions, run_generate


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "generate",
        help="ask a model (any OpenAI-compatible endpoint) for proofs of a benchmark",
        description="Render a prompt per problem, ask the model for --samples completions "
        "each, and keep every completion in RUN_DIR as it arrives; re-running on the same "
        "--out asks only for what is missing. Writes the answers as JSONL for "
        "`proofeval check --answers`.",
    )
    p.add_argument("problems", type=Path, help=BENCH_HELP)
    add_benchmark_options(p)
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="RUN_DIR",
        help="run directory: the SQLite store (resumable) and answers.jsonl",
    )
    p.add_argument(
        "--answers-out",
        type=Path,
        metavar="FILE",
        help="where to write the answers JSONL (default: RUN_DIR/answers.jsonl)",
    )
    add_sampling_options(p)
    add_extraction_options(p)
    p.set_defaults(handler=run)


def add_sampling_options(p: argparse.ArgumentParser) -> None:
    """The options that say which model to ask, and how (`sampling_settings` reads them)."""
    g = p.add_argument_group("model")
    add_endpoint_options(g, model_required=True)
    g.add_argument(
        "--style",
        choices=("chat", "completion"),
        default="chat",
        help="chat: the prompt is one user message (/chat/completions); completion: raw text "
        "(/completions), for base models (default %(default)s)",
    )
    add_template_option(g)
    g.add_argument(
        "--samples",
        type=positive(int),
        default=1,
        metavar="N",
        help="completions per problem, for pass@k up to k=N (default %(default)s)",
    )
    g.add_argument(
        "--top-p", type=probability, metavar="P", help="nucleus sampling (default: the server's)"
    )
    g.add_argument(
        "--no-n",
        action="store_true",
        help="one request per sample, for servers without the `n` parameter (without this "
        "option a server that ignores or rejects n is detected and asked this way)",
    )


def add_endpoint_options(g: argparse._ArgumentGroup, *, model_required: bool) -> None:
    """The options of every command that calls a model (`endpoint_settings` reads them)."""
    g.add_argument(
        "--model",
        required=model_required,
        help="model name, as the endpoint knows it"
        + ("" if model_required else " (needed unless every call is stored)"),
    )
    g.add_argument(
        "--base-url",
        metavar="URL",
        help="an OpenAI-compatible API, e.g. http://localhost:8000/v1 for `vllm serve` "
        "(default: $OPENAI_BASE_URL, else OpenAI's)",
    )
    g.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="NAME",
        help="environment variable holding the API key (default %(default)s; "
        "when it is unset the key sent is 'EMPTY', which local servers accept)",
    )
    g.add_argument(
        "--temperature",
        type=non_negative,
        metavar="T",
        help="sampling temperature (default: the server's)",
    )
    g.add_argument(
        "--max-tokens",
        type=positive(int),
        metavar="N",
        help="most tokens per completion (default: the server's)",
    )
    g.add_argument(
        "--reasoning-effort",
        metavar="E",
        help="reasoning effort for reasoning models, e.g. low, medium, high (sent only if given)",
    )
    g.add_argument(
        "--concurrency",
        type=positive(int),
        default=8,
        metavar="N",
        help="requests in flight at once (default %(default)s)",
    )
    g.add_argument(
        "--max-retries",
        type=non_negative_int,
        default=6,
        metavar="N",
        help="retries of a request after a rate limit (429), server error (5xx), timeout or "
        "lost connection, waiting 1, 2, 4, ... s (at most 60 s) between (default %(default)s)",
    )
    g.add_argument(
        "--request-timeout",
        type=positive(float),
        default=600.0,
        metavar="S",
        help="seconds before a request is abandoned and retried (default %(default)s)",
    )


def add_template_option(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument(
        "--template",
        metavar="T",
        help=f"prompt template: a built-in ({', '.join(BUILTIN)}) or a file (Jinja2, or "
        "the s2n-bignum-bench format with {query.txt}); default: hol_light_tactic for "
        "HOL Light problems, formal_proof for others",
    )


def sampling_settings(args: argparse.Namespace) -> SamplingSettings:
    return endpoint_settings(
        args, style=args.style, samples=args.samples, top_p=args.top_p, use_n=not args.no_n
    )


def endpoint_settings(args: argparse.Namespace, **sampling: Any) -> SamplingSettings:
    """The settings `add_endpoint_options` gave, with a command's own `sampling` ones."""
    return SamplingSettings(
        model=args.model,
        base_url=args.base_url,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        reasoning_effort=args.reasoning_effort,
        concurrency=args.concurrency,
        max_retries=args.max_retries,
        request_timeout=args.request_timeout,
        api_key_env=args.api_key_env,
        **sampling,
    )


def add_extraction_options(p: argparse.ArgumentParser) -> None:
    """How the proof is taken from a completion (`extraction` reads them)."""
    g = p.add_argument_group("extraction")
    g.add_argument(
        "--block",
        choices=("last", "first"),
        default="last",
        help="which fenced code block of a completion is the proof (default %(default)s); "
        "without any block, the whole text",
    )
    g.add_argument(
        "--marker",
        metavar="TEXT",
        help="look only after the last occurrence of TEXT (e.g. 'Final Answer'), when present",
    )


def extraction(args: argparse.Namespace) -> Extraction:
    return Extraction(block=args.block, marker=args.marker)


def non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, not {text}")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, not {text}")
    return value


def probability(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], not {text}")
    return value


def run(args: argparse.Namespace) -> int:
    opts = GenerateOptions(
        problems=args.problems,
        out=args.out,
        sampling=sampling_settings(args),
        template=args.template,
        extraction=extraction(args),
        answers_out=args.answers_out,
        selection=selection(args),
    )
    summary = run_generate(opts)
    print(
        f"proofeval: {summary.generated} new completions; {summary.total} for "
        f"{summary.problems} problems in {args.out}; answers in {summary.answers}",
        file=sys.stderr,
    )
    return 0
