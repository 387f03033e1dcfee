"""What publish wrote into a run folder, and whether it is still there unaltered.

``publish`` (:mod:`attnlab.runner.run`) writes ``MANIFEST.sha256`` into every run folder before moving it
into ``figures/<scale>/``: one line ``<sha256>  <file>`` per file the notebook wrote. REPORT.md and the site
read a folder only when :func:`problems` finds nothing wrong with it; a folder with a missing, altered or
unlisted file is shown as incomplete, with what is wrong, never dropped and never read as if it were whole.
"""

from __future__ import annotations

import re
from pathlib import Path

from attnlab.data.artifacts import sha256_file

MANIFEST = "MANIFEST.sha256"


def _files(folder: Path) -> list[str]:
    return sorted(
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST
    )


def write(folder: Path) -> None:
    """Record the SHA-256 of every file of ``folder`` in its manifest (written atomically)."""
    lines = [f"{sha256_file(folder / name)}  {name}\n" for name in _files(folder)]
    tmp = folder / f".{MANIFEST}.tmp"
    tmp.write_text("".join(lines))
    tmp.replace(folder / MANIFEST)


def problems(folder: Path) -> list[str]:
    """What is wrong with ``folder`` against its manifest: no manifest, a damaged one, a listed file missing
    or altered, a file publish did not write. Empty: the folder is as publish left it."""
    record = folder / MANIFEST
    if not record.is_file():
        return [f"no {MANIFEST}: not written by publish"]
    try:
        text = record.read_text()
    except UnicodeDecodeError:
        return [f"{MANIFEST} is not text: damaged"]
    listed: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        digest, _, name = line.partition("  ")
        if not (re.fullmatch(r"[0-9a-f]{64}", digest) and name):
            return [f"{MANIFEST} line {number} is not '<sha256>  <file>': damaged"]
        listed[name] = digest
    found = []
    for name, digest in listed.items():
        if not (folder / name).is_file():
            found.append(f"{name} is missing")
        elif sha256_file(folder / name) != digest:
            found.append(f"{name} was changed after publishing")
    found += [f"{name} was added after publishing" for name in _files(folder) if name not in listed]
    return found
