"""Generated blocks inside hand-written Markdown pages: the README's overview, the calibration table and the
threshold registry in docs/verdicts.md, the coverage table in docs/coverage.md. Each lies between a start and
an end marker (HTML comments naming the command that writes it); the text around it is left as it is."""

from __future__ import annotations

import re
from pathlib import Path


def replaced(text: str, start: str, end: str, body: str) -> str:
    """``text`` with the block between ``start`` and ``end`` replaced by ``body`` (markers kept); SystemExit
    naming the markers when ``text`` has none."""
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"no block markers ({start} ... {end})")
    return pattern.sub(lambda _: f"{start}\n{body}{end}", text)


def write_block(path: Path, start: str, end: str, body: str) -> bool:
    """Replace the block of ``path`` between ``start`` and ``end`` with ``body``; True if the file changed.
    SystemExit naming the file and the markers when it has none."""
    text = path.read_text()
    try:
        new = replaced(text, start, end, body)
    except SystemExit as err:
        raise SystemExit(f"{path}: {err}") from None
    path.write_text(new)
    return new != text
