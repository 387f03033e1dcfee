"""Generated blocks inside hand-written Markdown pages: the README's overview, the calibration table and the
threshold registry in docs/verdicts.md, the coverage table in docs/coverage.md. Each lies between a start and
an end marker (HTML comments naming the command that writes it); the text around it is left as it is."""

from __future__ import annotations

import re
from pathlib import Path

from attnlab import verified


def replaced(text: str, start: str, end: str, body: str) -> str:
    """``text`` with the block between ``start`` and ``end`` replaced by ``body`` (markers kept); SystemExit
    naming the markers when ``text`` has none, when a marker is empty or the two are the same, when the body
    is not text or holds a marker (the next write would cut the block short), or when ``text`` holds the
    block more than once (which copy is meant?)."""
    if not (isinstance(start, str) and isinstance(end, str)) or not start.strip() or not end.strip():
        raise SystemExit(f"block markers must be non-empty text; got {start!r} ... {end!r}")
    if start == end:
        raise SystemExit(f"the start and end markers are the same ({start})")
    if not isinstance(body, str):
        raise SystemExit(f"a block's body must be text; got {type(body).__name__}")
    if start in body or end in body:
        raise SystemExit(f"the block's body holds a marker ({start} ... {end})")
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    found = len(pattern.findall(text))
    if not found:
        raise SystemExit(f"no block markers ({start} ... {end})")
    if found > 1:
        raise SystemExit(f"{found} blocks between the markers ({start} ... {end}); keep one")
    return pattern.sub(lambda _: f"{start}\n{body}{end}", text)


def write_block(path: Path, start: str, end: str, body: str) -> bool:
    """Replace the block of ``path`` between ``start`` and ``end`` with ``body``; True if the file changed.
    SystemExit naming the file and the markers when it has none (see :func:`replaced`). The page is written
    atomically: an interrupted write leaves it as it was."""
    path = Path(path)
    text = path.read_text()
    try:
        new = replaced(text, start, end, body)
    except SystemExit as err:
        raise SystemExit(f"{path}: {err}") from None
    if new != text:
        verified.atomic(path, lambda f: f.write(new.encode("utf-8")))
    return new != text


def show(text: str, page: Path | None, start: str, end: str) -> int:
    """The end of a command that generates a block: print ``text``, and with ``page`` (its ``--write``) also
    put it between ``start`` and ``end`` of that page (:func:`write_block`). Returns the exit status, 0."""
    if page is not None:
        write_block(page, start, end, text)
    print(text)
    return 0
