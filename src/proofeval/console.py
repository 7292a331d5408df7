"""Messages to the user on standard error, written above any progress bar."""

from __future__ import annotations

import sys

from tqdm import tqdm


def say(message: str) -> None:
    tqdm.write(f"proofeval: {message}", file=sys.stderr)
