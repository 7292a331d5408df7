"""The HTML report's anchors and filters: a stable anchor per problem, and a filter bar (verdict,
category, solved, text) run by one inline script, its state kept in the URL's fragment so a
filtered view can be linked to (`index.html#verdict=FAIL&solved=unsolved`).

The page stays one file: the script is inline, and the page's Content-Security-Policy allows
that script alone (by its hash), images only as data URIs and nothing from elsewhere, so even
markup that escaped `escape` could run nothing and load nothing.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Sequence

SAFE = re.compile(r"[A-Za-z0-9._-]+")
UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def anchor(problem_id: str) -> str:
    """The id of a problem's element: `problem-ID` when ID is made of letters, digits, `.`, `_`
    and `-`; otherwise those characters of ID (runs of others as `-`, at most 60) then `~` and
    12 hex digits of its SHA-256. `~` appears only in the second form, so two problems never
    share an anchor (barring a 48-bit hash collision), and an anchor depends on its id alone."""
    if SAFE.fullmatch(problem_id):
        return f"problem-{problem_id}"
    digest = hashlib.sha256(problem_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"problem-{UNSAFE.sub('-', problem_id)[:60]}~{digest}"


def transcript_anchor(problem_id: str, label: str, sample: int) -> str:
    """The id of an agent transcript: distinct from every problem's (its prefix) and from
    every other transcript's (the sample follows the last `~`, the label, which has none,
    the one before: A, B or an arm's name)."""
    return f"transcript-{anchor(problem_id).removeprefix('problem-')}~{label}~{sample}"


SCRIPT = """
(function () {
  "use strict";
  var bar = document.getElementById("filters");
  if (!bar) return;
  var problems = Array.prototype.slice.call(document.querySelectorAll("details.problem"));
  var groups = Array.prototype.slice.call(document.querySelectorAll("section.category"));
  var runs = bar.getAttribute("data-runs").split(" ");
  var names = ["verdict", "category", "solved", "text"];
  var fields = {};
  names.forEach(function (n) { fields[n] = document.getElementById("f-" + n); });
  var count = document.getElementById("f-count");
  bar.hidden = false;

  function words(el, name) {
    var v = el.getAttribute(name) || "";
    return v ? v.split(" ") : [];
  }
  function matches(el) {
    var verdict = fields.verdict.value, category = fields.category.value;
    var solvedBy = fields.solved.value, text = fields.text.value.toLowerCase();
    if (verdict && words(el, "data-verdicts").indexOf(verdict) < 0) return false;
    if (category && el.getAttribute("data-category") !== category) return false;
    var solved = words(el, "data-solved");
    if (solvedBy === "solved" && solved.length !== runs.length) return false;
    if (solvedBy === "unsolved" && solved.length > 0) return false;
    if (solvedBy.indexOf("only:") === 0 &&
        !(solved.length === 1 && solved[0] === solvedBy.slice(5))) return false;
    if (text && el.textContent.toLowerCase().indexOf(text) < 0) return false;
    return true;
  }
  function apply() {
    var shown = 0;
    problems.forEach(function (el) {
      el.hidden = !matches(el);
      if (!el.hidden) shown += 1;
    });
    groups.forEach(function (g) {
      g.hidden = !g.querySelector("details.problem:not([hidden])");
    });
    count.textContent = shown + " of " + problems.length + " problems shown";
  }
  function remember() {
    var params = new URLSearchParams();
    names.forEach(function (n) { if (fields[n].value) params.set(n, fields[n].value); });
    var hash = params.toString();
    try {
      history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
    } catch (e) { /* a page opened where history cannot change: the filter still applies */ }
  }
  function reveal(target) {
    if (target.closest("details.problem[hidden]")) {
      names.forEach(function (n) { fields[n].value = ""; });
      apply();
    }
    for (var el = target; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") el.open = true;
    }
    target.scrollIntoView();
  }
  function fromHash() {
    var hash;
    try { hash = decodeURIComponent(location.hash.slice(1)); } catch (e) { return; }
    if (!hash) return;
    var target = document.getElementById(hash);
    if (target) { reveal(target); return; }
    var params = new URLSearchParams(location.hash.slice(1));
    names.forEach(function (n) { fields[n].value = params.get(n) || ""; });
    apply();
  }
  names.forEach(function (n) {
    fields[n].addEventListener("input", function () { apply(); remember(); });
  });
  window.addEventListener("hashchange", fromHash);
  apply();
  fromHash();
})();
"""

CSS = """
.filters { display: flex; gap: 14px; flex-wrap: wrap; align-items: center; margin: 0 0 12px;
  font-size: 14px; }
.filters select, .filters input { font: inherit; padding: 3px 6px; border: 1px solid var(--line);
  border-radius: 6px; background: #fff; }
#f-count { color: var(--muted); font-size: 13px; }
details.problem:target { outline: 2px solid var(--ink); }
a.anchor { color: var(--muted); text-decoration: none; font-size: 13px; }
.turn { border-left: 3px solid var(--line); padding: 2px 0 2px 10px; margin: 8px 0; }
.turn.model { border-color: #5b8def; } .turn.tool { border-color: var(--ok); }
.turn.error { border-color: var(--fail); }
.turn .label { color: var(--muted); font-size: 12px; margin-top: 4px; }
"""


def content_policy() -> str:
    """The page's Content-Security-Policy: its own script and style, data: images, no more."""
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


def head() -> str:
    return f'<meta http-equiv="Content-Security-Policy" content="{content_policy()}">'


def script() -> str:
    return f"<script>{SCRIPT}</script>"


def filter_bar(
    verdicts: Sequence[str], categories: Sequence[str], labels: Sequence[tuple[str, str]],
    escape: Callable[[str], str],
) -> str:  # fmt: skip
    """The controls (hidden until the script shows them: without it they do nothing);
    `labels` are each run's (token in data-solved, name shown)."""
    verdict = _select("verdict", "Verdict", [(v, v) for v in verdicts], escape)
    category = _select(
        "category", "Category", [(f"c:{c}", c or "(none)") for c in categories], escape
    )
    solved = [("solved", "solved"), ("unsolved", "unsolved")]
    if len(labels) > 1:
        solved = [("solved", "solved in every run"), ("unsolved", "solved in no run")]
        solved += [(f"only:{token}", f"solved in {name} only") for token, name in labels]
    runs = " ".join(token for token, _ in labels)
    return (
        f'<div class="filters" id="filters" data-runs="{escape(runs)}" hidden>'
        f"{verdict}{category}{_select('solved', 'Solved', solved, escape)}"
        '<label>Text <input id="f-text" type="search" placeholder="id, statement, output">'
        '</label><span id="f-count"></span></div>'
    )


def _select(
    name: str, title: str, options: list[tuple[str, str]], escape: Callable[[str], str]
) -> str:
    shown = "".join(f'<option value="{escape(v)}">{escape(t)}</option>' for v, t in options)
    select = f'<select id="f-{name}"><option value="">any</option>{shown}</select>'
    return f"<label>{title} {select}</label>"
