"""NTP4VC's categories, as its paper's Table 6 names them, with the project as a
sub-category after a slash: `Real C Verification/contiki_list` (data/why3/frama_c/<project>),
`Pearls of Programming/algo64` (data/why3/pearl/<project>_vcg). The tree itself reads as a
Rocq tree with a manifest (rocq_cases: `test_set.rocq.lst`), its libraries as dune theories.
"""

from __future__ import annotations

from pathlib import PurePosixPath

MANIFEST = "test_set.rocq.lst"
CATEGORIES = {
    ("data", "why3", "frama_c"): "Real C Verification",
    ("data", "why3", "pearl"): "Pearls of Programming",
}


def category(relative: PurePosixPath) -> str | None:
    """The category/project of a case's path under the root; None outside NTP4VC's two."""
    parts = relative.parts
    name = CATEGORIES.get(tuple(parts[:3]))
    if name is None or len(parts) < 5:
        return None
    return f"{name}/{parts[3].removesuffix('_vcg')}"
