"""What an interrupted run leaves behind, and its removal at the next run.

A run killed mid-way can leave: a staging folder of figures (``figures/.staging-<notebook>-<pid>/``), an old
output folder renamed aside while publishing (``figures/<scale>/.old-<paper>-<pid>/``), a half-executed
notebook (``build/notebooks/<scale>/<name>.partial-<pid>.ipynb``), a training run's folder holding only its
``config.json`` (the run failed before its first checkpoint) and a killed download's or extraction's
temporary folder (``data/downloads/.tmp-<what>-<pid>-<random>``, ``data/.tmp-...``; the data code removes
them only when it fetches that artifact again). `remove_stale` deletes each of them whose process is no
longer alive (and, for a run folder, whose lock nobody holds); nothing is ever listed as a result. The
previous complete outputs stay as they were: an old output folder whose replacement never arrived (the run
was killed between publish's two renames) is renamed back into place, never deleted.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from attnlab import paths
from attnlab.data.artifacts import remove_dead_temporaries
from attnlab.locks import alive, is_locked


def _owner(name: str) -> int | None:
    """The process id a leftover's name ends with (``.staging-xsa-123``, ``x.partial-123``), if any."""
    found = re.search(r"-(\d+)$", name.removesuffix(".ipynb"))
    return int(found.group(1)) if found else None


def stale_leftovers() -> list[Path]:
    """Every leftover of a run whose process is gone (see the module docstring)."""
    figures, build = paths.figures_dir(), paths.build_dir()
    found = [
        *figures.glob(".staging-*"),
        *figures.glob("*/.old-*"),
        *build.glob("notebooks/*/*.partial*.ipynb"),
    ]
    stale = []
    for path in found:
        pid = _owner(path.name)
        if pid is None or not alive(pid):  # a name without a pid comes from an older version: stale
            stale.append(path)
    for run in build.glob("runs/*"):
        if run.is_dir() and {p.name for p in run.iterdir()} <= {"config.json"} and not is_locked(run):
            stale.append(run)
    return sorted(stale)


def _restore(old: Path) -> Path | None:
    """Rename an old output folder (``<scale>/.old-<paper>-<pid>``) back to ``<scale>/<paper>`` when that
    folder is missing: publish was killed after moving the old outputs aside and before moving the new ones
    in. Returns the folder restored, or None."""
    found = re.fullmatch(r"\.old-(.+)-\d+", old.name)
    final = old.with_name(found.group(1)) if found else None
    if final is None or final.exists():
        return None
    os.replace(old, final)
    return final


def remove_stale() -> list[Path]:
    """Delete `stale_leftovers` (restoring, not deleting, an old output folder that nothing replaced:
    `_restore`) and the data folder's dead temporaries
    (`attnlab.data.artifacts.remove_dead_temporaries`); return what was removed."""
    data = paths.data_dir()
    removed = [*remove_dead_temporaries(data / "downloads"), *remove_dead_temporaries(data)]
    for path in stale_leftovers():
        restored = _restore(path) if path.name.startswith(".old-") else None
        if restored is not None:
            print(f"{restored}: restored (the run that was replacing it was killed while publishing)")
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    return sorted(removed)
