"""The HTML report: self-contained, model output and agent transcripts escaped, a stable
anchor per problem, and rendered by real headless Chromium (screenshots, and the rendered DOM
of filtered views, an opened problem and an opened transcript)."""

from __future__ import annotations

import base64
import hashlib
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from proofeval.model import Attempt, Generation, Outcome, Problem, Stage, Verdict
from proofeval.report import filters, plots
from proofeval.report.filters import anchor, transcript_anchor
from proofeval.report.html import render, write_html
from proofeval.report.run_data import load_run
from proofeval.store import Round, RunStore
from tests.test_metrics import build_store

CHROMIUM = Path("/usr/bin/chromium")
HOSTILE = '<script>alert("pwned")</script><img src=x onerror="alert(1)">'


def hostile_store(run_dir: Path) -> Path:
    """A run whose model output, proof, message and ids all carry markup."""
    store = RunStore(run_dir)
    try:
        store.add_problems([Problem("p<b>1</b>", "`T` </pre><script>x()</script>", "hol-light")])
        attempt = Attempt("p<b>1</b>", 0, f"prose {HOSTILE}\n```\n{HOSTILE}\n```", HOSTILE)
        store.add_attempts([attempt])
        store.record(attempt, Outcome(Verdict.FAIL, Stage.CHECK, 0.1, f"Failure {HOSTILE}"))
    finally:
        store.close()
    return run_dir


# What a model can say to break out of the <pre> and <details> that hold it.
BREAKOUT = '</pre></details></div><script>alert("t")</script><details open><summary>x'


def agent_store(run_dir: Path) -> Path:
    """A run as `run --agent` leaves it (the store's agent_steps, written through the same
    RunStore.record_agent_step), whose model and tool results carry markup. Problem "p"
    (sample 0: FAIL, no submit) and "q" (OK) have transcripts."""
    store = RunStore(run_dir)
    try:
        store.add_problems([Problem("p", "`T`", "coq", category="alg"),
                            Problem("q", "`U`", "coq", category="geo")])  # fmt: skip
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": "check", "arguments": '{"proof": "' + "<b>x</b>" + '"}'},
        }
        model = {"role": "assistant", "content": f"thinking {BREAKOUT}", "tool_calls": [call],
                 "prompt_tokens": 10, "completion_tokens": 5}  # fmt: skip
        tool = {"id": "c1", "name": "check", "arguments": '{"proof": "<b>x</b>"}',
                "result": {"verdict": "FAIL", "message": BREAKOUT}}  # fmt: skip
        refused = {"id": "c2", "name": "rm</details>" + "z" * 5000, "arguments": "{not json",
                   "result": {"error": f"no tool {BREAKOUT}"}}  # fmt: skip
        store.record_agent_step("p", 0, "model", model, 0.25)
        store.record_agent_step("p", 0, "tool", tool, 0.5)
        store.record_agent_step("p", 0, "tool", refused, 0.0)
        store.record_agent_step("p", 0, "error", {"error": f"malformed reply: {BREAKOUT}"}, 0)
        store.record_agent_step("q", 0, "tool", {"id": "c3", "name": "submit",
                                                 "arguments": "{}", "result": {"verdict": "OK"}},
                                0.1)  # fmt: skip
        for pid, verdict, proof in (("p", Verdict.FAIL, ""), ("q", Verdict.OK, "auto.")):
            attempt = Attempt(pid, 0, f"done {BREAKOUT}", proof)
            store.add_attempts([attempt])
            store.record(attempt, Outcome(verdict, Stage.CHECK, 0.1, f"m {BREAKOUT}"))
    finally:
        store.close()
    return run_dir


class Tags(HTMLParser):
    """The elements a browser's parser sees in a page, and their nesting."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[tuple[str, dict]] = []
        self.ends: list[str] = []
        self.scripts: list[str] = []
        self.text = ""  # the page itself
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.starts.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self.ends.append(tag)
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)

    def count(self, tag: str) -> int:
        return sum(t == tag for t, _ in self.starts)


def parsed(page: str) -> Tags:
    tags = Tags()
    tags.text = page
    tags.feed(page)
    return tags


def test_model_output_is_escaped(tmp_path: Path):
    page = render([load_run(hostile_store(tmp_path / "run"))])
    tags = parsed(page)
    assert tags.count("script") == 1 and tags.scripts == [filters.SCRIPT]  # the filters' own
    assert tags.count("b") == 0
    assert all(a["src"].startswith("data:image/png;base64,") for t, a in tags.starts if t == "img")
    assert not any(name.startswith("on") for _, a in tags.starts for name in a)
    assert "<img src=x" not in page
    assert "<b>1</b>" not in page
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in page
    assert "p&lt;b&gt;1&lt;/b&gt;" in page


def test_agent_transcripts_are_shown_collapsed_and_escaped(tmp_path: Path):
    page = render([load_run(agent_store(tmp_path / "run"))])
    tags = parsed(page)
    assert tags.count("script") == 1 and tags.scripts == [filters.SCRIPT]
    # every <details> the page opens it closes: no text of the model closed one early
    assert tags.count("details") == tags.ends.count("details") > 0
    assert tags.count("pre") == tags.ends.count("pre")
    transcripts = [a for t, a in tags.starts if t == "details" and "transcript" in a["class"]]
    assert [a["id"] for a in transcripts] == ["transcript-p~A~0", "transcript-q~A~0"]
    assert all("open" not in a for t, a in tags.starts if t == "details")  # collapsed
    breakout = (
        "&lt;/pre&gt;&lt;/details&gt;&lt;/div&gt;&lt;script&gt;alert(&quot;t&quot;)"
        "&lt;/script&gt;&lt;details open&gt;&lt;summary&gt;x"
    )
    # the model's turn, the tool's result, the refused tool's error, the malformed reply
    assert page.count(breakout) >= 5
    p = page[page.index('id="transcript-p~A~0"') : page.index('id="transcript-q~A~0"')]
    assert "Transcript: 1 model turns, 2 tool calls, 1 answered with an error" in p
    assert "calls check (c1)" in p and "tool check · c1 · 0.50 s" in p
    assert "tool rm&lt;/details&gt;" + "z" * 188 + "... · c2" in p and "{not json" in p
    assert "5 completion tokens" in p
    assert "&quot;proof&quot;: &quot;&lt;b&gt;x&lt;/b&gt;&quot;" in p  # arguments, indented
    assert "Agent: 2 conversations, 3 tool calls" in page  # under the run's name


def test_a_transcript_too_long_is_cut_with_where_the_rest_is(tmp_path: Path):
    run = tmp_path / "run"
    agent_store(run)
    store = RunStore(run)
    try:
        long = "y" * 50_000
        store.record_agent_step("q", 0, "model", {"role": "assistant", "content": long}, 1.0)
    finally:
        store.close()
    page = render([load_run(run)])
    assert "y" * 20_000 in page and "y" * 20_001 not in page
    assert "(30000 more characters in agent-transcripts.jsonl)" in page


def repaired_store(run_dir: Path) -> Path:
    """A `run --rounds 2` run as the store keeps it: p's sample 0 fails, fails again in
    round 1, is OK in round 2; q is OK at once (no round)."""
    store = RunStore(run_dir)
    try:
        store.add_problems([Problem("p", "`P`", "coq"), Problem("q", "`Q`", "coq")])
        for pid, verdict in (("p", Verdict.FAIL), ("q", Verdict.OK)):
            attempt = Attempt(pid, 0, f"```\nfirst_{pid}\n```", f"first_{pid}")
            store.add_attempts([attempt])
            store.record(attempt, Outcome(verdict, Stage.CHECK, 0.5, f"round 0 of {pid}"))
        for n, verdict in ((1, Verdict.FAIL), (2, Verdict.OK)):
            gen = Generation(
                "p", 0, f"Repair {BREAKOUT} ({n})", f"out {BREAKOUT} {n}", "m", 1, 1, 1
            )
            r = Round("p", 0, n, gen, f"proof_{n}")
            store.record_round(r)
            store.record_round_outcome(r, Outcome(verdict, Stage.CHECK, 0.25, f"round {n}"))
    finally:
        store.close()
    return run_dir


def test_a_repaired_sample_shows_every_round(tmp_path: Path):
    page = render([load_run(repaired_store(tmp_path / "run"))])
    tags = parsed(page)
    assert tags.count("script") == 1 and tags.count("details") == tags.ends.count("details")
    assert page.count("Every round: ") == 1  # p's sample alone was repaired
    p = page[page.index('id="problem-p"') : page.index('id="problem-q"')]
    assert "Every round: 0 FAIL → 1 FAIL → 2 OK" in p
    rounds = p[p.index("Every round") :]
    for n, proof in enumerate(("first_p", "proof_1", "proof_2")):
        assert f"<span>round {n}</span>" in rounds and f"<pre>{proof}</pre>" in rounds
    assert "round 0 of p" in rounds and "Repair &lt;/pre&gt;" in rounds  # the repair prompts
    assert "out &lt;/pre&gt;&lt;/details&gt;" in rounds
    assert p.index("<pre>proof_2</pre>") < p.index("Every round")  # the final round first
    assert 'data-verdicts="OK" data-solved="A"' in p  # what the run ends with


IDS = ["a", "A", "a-b", "a_b", "a b", "a/b", "a.b", "", "~", "é", "a~0123", "a" * 300,
       "a" * 300 + "b", "<x>", '"', "problem-a", "x-A-0", "x\x00", "\ud800"]  # fmt: skip


def test_anchors_are_safe_stable_and_unique():
    anchors = [anchor(pid) for pid in IDS]
    assert len(set(anchors)) == len(IDS)
    assert all(re.fullmatch(r"problem-[A-Za-z0-9._~-]+", a) or a == "problem-~" + a[-12:]
               for a in anchors)  # fmt: skip
    assert all(re.fullmatch(r"[A-Za-z0-9._~-]+", a) for a in anchors)
    assert (
        anchor("a_b") == "problem-a_b" and anchor("mathd-algebra-10") == "problem-mathd-algebra-10"
    )
    assert anchor("a b") == anchor("a b") != anchor("a-b")  # from the id alone
    labels = ["A", "B", "a-b", "b", "x-A", "0"]  # A, B and arm names (which may hold "-")
    keys = [(pid, label, sample) for pid in IDS for label in labels for sample in (0, 1, 10)]
    assert len({transcript_anchor(*k) for k in keys}) == len(keys)
    assert not {transcript_anchor(*k) for k in keys} & set(anchors)


def test_every_problem_has_its_anchor_and_filter_data(tmp_path: Path):
    page = render([load_run(build_store(tmp_path / "run"))])
    problems = {a["id"]: a for t, a in parsed(page).starts if t == "details" and "id" in a}
    assert set(problems) == {f"problem-{p}" for p in "abcde"}
    assert problems["problem-a"]["data-verdicts"] == "FAIL OK TIMEOUT"
    assert (
        problems["problem-a"]["data-solved"] == "A" and problems["problem-b"]["data-solved"] == ""
    )
    assert problems["problem-d"]["data-verdicts"] == ""  # no attempt
    assert problems["problem-e"]["data-verdicts"] == "unchecked"
    assert problems["problem-c"]["data-category"] == "c:y"
    assert '<a class="anchor" href="#problem-a"' in page


# A named arm of the same problems (`run --arm weak`): it solves b alone.
WEAK = {"a": ("x", [Verdict.FAIL, Verdict.FAIL]), "b": ("x", [Verdict.OK]),
        "c": ("y", [Verdict.FAIL]), "d": ("y", []), "e": ("y", [None])}  # fmt: skip


def arms_run(run_dir: Path) -> Path:
    build_store(run_dir)
    build_store(run_dir / "arms" / "weak", WEAK)
    return run_dir


def test_arms_are_side_by_side_never_pooled(tmp_path: Path):
    run = load_run(arms_run(tmp_path / "run"))
    page = render([run])
    default, weak = run.every_arm()
    assert "2 arms side by side (each its own settings, not pooled)" in page
    tags = parsed(page)
    arms = page[page.index("<h2>Arms side by side</h2>") :].split("</table>")[0]
    assert "<td>default</td>" in arms and "<td>weak</td>" in arms and "total" not in arms
    # each arm's own figures on its cards, and no card of the two pooled
    for label, arm in (("arm default", default), ("arm weak", weak)):
        mean = arm.metrics.overall.pass_at_1.mean
        assert f'{label} · pass@1</div><div class="value">{100 * mean:.1f}%' in page
    assert 'class="label">pass@1</div>' not in page
    problems = {a["id"]: a for t, a in tags.starts if t == "details" and "id" in a}
    assert problems["problem-a"]["data-solved"] == "default"
    assert problems["problem-b"]["data-solved"] == "weak"
    assert problems["problem-d"]["data-solved"] == ""
    assert "arm default: 2/4 OK · arm weak: 0/2 OK" in page
    options = {a["value"] for t, a in tags.starts if t == "option"}
    assert {"only:default", "only:weak"} <= options
    assert "By category" not in page and "arm weak by category" in page


def test_the_policy_allows_the_filters_script_alone(tmp_path: Path):
    page = render([load_run(build_store(tmp_path / "run"))])
    (policy,) = [a["content"] for t, a in parsed(page).starts
                 if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]  # fmt: skip
    digest = base64.b64encode(hashlib.sha256(filters.SCRIPT.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy
    assert "default-src 'none'" in policy and "img-src data:;" in policy
    assert "unsafe-inline" not in policy.split("script-src")[1]


def test_page_is_self_contained(tmp_path: Path):
    page = render([load_run(build_store(tmp_path / "run"))])
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    images = re.findall(r'<img src="data:image/png;base64,', page)
    assert len(images) == 3  # pass@k curve, pass@1 by category, verdicts by category


def test_plots_are_png_or_nothing(tmp_path: Path):
    m = load_run(build_store(tmp_path / "run")).metrics
    for png in (
        plots.pass_at_k_curve([("A", m)]),
        plots.category_bars([("A", m), ("B", m)]),
        plots.verdict_bars(m),
    ):
        assert png is not None and png.startswith(b"\x89PNG\r\n\x1a\n")
    empty = load_run(build_store(tmp_path / "empty", {"p": ("x", [None])})).metrics
    assert plots.pass_at_k_curve([("A", empty)]) is None
    assert plots.category_bars([("A", empty)]) is None
    assert plots.verdict_bars(empty) is not None  # one attempt, unchecked


def test_runs_side_by_side_each_have_their_colour(tmp_path: Path):
    """Three or more runs (arms) in one plot are told apart: each run's bars are drawn
    in a colour of its own, found among the picture's pixels."""
    import io

    import matplotlib.image

    m = load_run(build_store(tmp_path / "run")).metrics
    png = plots.category_bars([(name, m) for name in "ABCD"])
    assert png is not None
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")[:, :, :3]
    seen = {tuple(round(255 * c) for c in px) for px in pixels.reshape(-1, 3)}
    colours = [tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in plots.RUN_COLOURS[:4]]
    assert len(set(colours)) == 4 and all(c in seen for c in colours)


def chromium(url: str, profile: Path, *mode: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *mode,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def screenshot(url: str, tmp: Path, name: str) -> Image.Image:
    """The page at `url` as Chromium draws it, checked not to be blank."""
    shot = tmp / f"{name}.png"
    chromium(url, tmp / f"profile-{name}", f"--screenshot={shot}", "--window-size=1280,2000")
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 2000)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 100  # text, tables, pictures: not flat
    assert max(colours)[0] / (1280 * 2000) < 0.9  # the background is not all there is
    return image


def dom(url: str, tmp: Path, name: str) -> Tags:
    """The DOM after the page's script ran (Chromium's --dump-dom)."""
    return parsed(chromium(url, tmp / f"profile-{name}", "--dump-dom").stdout)


def shown(tags: Tags) -> list[str]:
    """The problems a view shows (not hidden by a filter), by anchor."""
    problems = [a for t, a in tags.starts if t == "details" and "problem" in a.get("class", "")]
    return [a["id"] for a in problems if "hidden" not in a]


def opened(tags: Tags) -> list[str]:
    return [a.get("id", "") for t, a in tags.starts if t == "details" and "open" in a]


chromium_needed = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium absent (Debian's chromium: `make install`)"
)


@chromium_needed
def test_page_renders_in_headless_chromium(tmp_path: Path):
    run = load_run(build_store(tmp_path / "a"))
    other = load_run(hostile_store(tmp_path / "b"))
    page = write_html([run, other], tmp_path / "html")
    screenshot(page.as_uri() + "#verdict=FAIL&solved=unsolved", tmp_path, "filtered")
    assert (tmp_path / "filtered.png").stat().st_size > 20_000

    tags = dom(page.as_uri(), tmp_path, "both")
    text = tags.text
    assert tags.count("table") == 3  # A and B side by side, then each run's paper table
    assert text.count('<img src="data:image/png;base64,') == 4  # curve, bars, verdicts of A, B
    for pid in ("a", "b", "c", "d", "e", "p&lt;b&gt;1&lt;/b&gt;"):
        assert f'<span class="pid">{pid}</span>' in text
    assert "pass@2" in text and "B-A" in text
    assert tags.count("script") == 1 and tags.count("b") == 0 and tags.count("img") == 4
    # the script ran: the filter bar is shown, with every problem
    assert not any("hidden" in a for t, a in tags.starts if a.get("id") == "filters")
    assert '<span id="f-count">6 of 6 problems shown</span>' in text
    solved = [a["value"] for t, a in tags.starts if t == "option" and "value" in a]
    assert {"only:A", "only:B"} <= set(solved)


@chromium_needed
def test_filters_and_anchors_in_headless_chromium(tmp_path: Path):
    """Each view is the page opened at a fragment, as a link to a filtered view would be."""
    page = write_html([load_run(build_store(tmp_path / "run"))], tmp_path / "html").as_uri()
    every = [f"problem-{p}" for p in "abcde"]
    views = {
        "#verdict=TIMEOUT": ["problem-a"],
        "#category=c%3Ax&verdict=FAIL": ["problem-a", "problem-b"],
        "#verdict=FAIL&solved=solved": ["problem-a"],  # filters are and-ed
        "#text=statement+of+c": ["problem-c"],
    }
    for n, (fragment, expected) in enumerate(views.items()):
        tags = dom(page + fragment, tmp_path, f"view{n}")
        assert shown(tags) == expected, fragment
        text = tags.text
        assert f'<span id="f-count">{len(expected)} of 5 problems shown</span>' in text
        hidden = [a for t, a in tags.starts if t == "section" and "hidden" in a]
        empty = [c for c in ("ab", "cde") if not {f"problem-{p}" for p in c} & set(expected)]
        assert len(hidden) == len(empty)  # a category with nothing to show is hidden whole
    tags = dom(page + "#problem-b", tmp_path, "anchor")
    assert shown(tags) == every and opened(tags) == ["problem-b"]


# Plays a user: chooses a verdict and types a text, as the controls' input events report it.
USER = """
function use(name, value) {
  var field = document.getElementById("f-" + name);
  field.value = value;
  field.dispatchEvent(new Event("input"));
}
use("verdict", "FAIL");
use("text", "STATEMENT OF B");
document.body.setAttribute("data-hash", location.hash);
"""


def sha256(script: str) -> str:
    return base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()


@chromium_needed
def test_the_controls_filter_and_keep_the_view_in_the_url(tmp_path: Path):
    """The page with a second script that uses the controls: refused by the page's policy,
    then run in a copy whose policy allows it too."""
    page = write_html([load_run(build_store(tmp_path / "run"))], tmp_path / "html")
    own = f"'sha256-{sha256(filters.SCRIPT)}'"
    injected = page.read_text().replace("</body>", f"<script>{USER}</script></body>")
    assert own in injected
    for name, text in (
        ("injected", injected),
        ("allowed", injected.replace(own, f"{own} 'sha256-{sha256(USER)}'")),
    ):
        (tmp_path / f"{name}.html").write_text(text)
    # as markup that escaped escaping would be: the policy does not let it run (the page's
    # own script does run)
    tags = dom((tmp_path / "injected.html").as_uri(), tmp_path, "injected")
    assert len(shown(tags)) == 5 and "data-hash" not in str(tags.starts)
    assert '<span id="f-count">5 of 5 problems shown</span>' in tags.text
    tags = dom((tmp_path / "allowed.html").as_uri(), tmp_path, "allowed")
    assert shown(tags) == ["problem-b"]  # FAIL, and its statement holds the text
    (body,) = [a for t, a in tags.starts if t == "body"]
    assert body["data-hash"] == "#verdict=FAIL&text=STATEMENT+OF+B"


@chromium_needed
def test_arms_filter_in_headless_chromium(tmp_path: Path):
    page = write_html([load_run(arms_run(tmp_path / "run"))], tmp_path / "html").as_uri()
    for n, (fragment, expected) in enumerate(
        (("#solved=only%3Aweak", ["b"]), ("#solved=unsolved&category=c%3Ay", ["d", "e"]))
    ):  # fmt: skip
        assert shown(dom(page + fragment, tmp_path, f"arms{n}")) == [
            f"problem-{p}" for p in expected
        ]


@chromium_needed
def test_an_agent_transcript_opens_in_headless_chromium(tmp_path: Path):
    page = write_html([load_run(agent_store(tmp_path / "run"))], tmp_path / "html").as_uri()
    tags = dom(page + "#transcript-p~A~0", tmp_path, "open")
    assert opened(tags) == ["problem-p", "transcript-p~A~0"]
    # the model's and the tools' markup stayed text: one script, no element it tried to make
    assert tags.count("script") == 1 and tags.count("b") == 0
    assert tags.count("details") == 6  # per problem: itself, its model output, its transcript
    text = tags.text
    assert '&lt;script&gt;alert("t")&lt;/script&gt;' in text
    screenshot(page + "#transcript-p~A~0", tmp_path, "open")  # drawn, not blank
