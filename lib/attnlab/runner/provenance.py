"""Where each published table comes from: the commit, the machine, the time and the load it ran under.

The runner writes one record per notebook run it publishes, ``figures/<scale>/provenance/<run>.json``
(:func:`write_record`, with the load average sampled while the notebook ran, :class:`LoadSampler`), and
``python -m attnlab.runner.provenance --write docs/provenance.md`` turns the records into the provenance page,
so that commits, minutes and machines live there and not in the README's prose. A time measured under load is
an upper bound; the page says which were.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import threading
from pathlib import Path
from types import TracebackType

from attnlab import paths, realisation, verified
from attnlab.runner import blocks

FOLDER = "provenance"
#: A run whose mean one-minute load average exceeded its cores by this much shared them with other work.
SHARED_LOAD = 0.5

START = "<!-- provenance:start (python -m attnlab.runner.provenance --write docs/provenance.md) -->"
END = "<!-- provenance:end -->"


class LoadSampler:
    """The one-minute load average every ``every`` seconds while the ``with`` block runs (``mean``, ``peak``;
    the one at entry too), from a daemon thread; where the platform has no load average, nothing."""

    def __init__(self, every: float = 30.0) -> None:
        self.every = every
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        if hasattr(os, "getloadavg"):
            self.samples.append(os.getloadavg()[0])

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def __enter__(self) -> LoadSampler:
        self._sample()
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    @property
    def mean(self) -> float | None:
        return sum(self.samples) / len(self.samples) if self.samples else None

    @property
    def peak(self) -> float | None:
        return max(self.samples) if self.samples else None


def commit() -> dict[str, object]:
    """The checkout's commit, and whether its library or notebooks had uncommitted changes (None: no git)."""
    root = paths.repo_root()
    if root is None:
        return {"commit": None, "dirty": None}

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    head = git("rev-parse", "--short=7", "HEAD")
    status = git("status", "--porcelain", "--", "lib", "notebooks")
    return {"commit": head, "dirty": None if status is None else bool(status)}


def machine() -> dict[str, object]:
    """The CPU model, the cores this process may use and the memory, as far as the platform tells."""
    from attnlab.training.workers import available_cores

    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [
            ln.split(":", 1)[1].strip()
            for ln in cpuinfo.read_text().splitlines()
            if ln.startswith("model name")
        ]
        model = names[0] if names else model
    memory = None
    if hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names:
        memory = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    return {"cpu": model, "cores": available_cores(), "memory_gib": memory}


def write_record(
    scale: str,
    run: str,
    started: dt.datetime,
    minutes: float,
    load: LoadSampler,
    computed: str,
    at: dict[str, object] | None = None,
) -> Path:
    """Write the record of one published notebook run (see the module's docstring); returns its path. ``at``:
    the commit it ran at (default: this checkout's, :func:`commit`)."""
    import torch

    record = {
        "run": run,
        "scale": scale,
        **(at or commit()),
        "started": started.strftime("%Y-%m-%d %H:%M UTC"),
        "minutes": round(minutes, 1),
        "computed": computed,
        "load_mean": None if load.mean is None else round(load.mean, 2),
        "load_peak": None if load.peak is None else round(load.peak, 2),
        **machine(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "realisation": realisation.name() or "default",
    }
    path = paths.figures_dir() / scale / FOLDER / f"{run}.json"
    verified.atomic(path, lambda f: f.write((json.dumps(record, indent=1) + "\n").encode()))
    return path


def records(scale: str) -> list[dict]:
    """Every record of ``scale``, by run name; a record that does not parse is reported, not dropped."""
    found = []
    root = paths.figures_dir()
    files = [*(root / scale / FOLDER).glob("*.json"), *root.glob(f"realisations/*/{scale}/{FOLDER}/*.json")]
    for path in sorted(files):
        try:
            found.append(json.loads(path.read_text()))
        except (OSError, ValueError) as err:
            found.append({"run": path.stem, "scale": scale, "error": f"unreadable ({err})"})
    return found


def load_note(record: dict) -> str:
    """Free cores, or shared ones (then the minutes are an upper bound)."""
    mean, cores = record.get("load_mean"), record.get("cores")
    if mean is None or not cores:
        return "load not recorded"
    shared = mean > cores + SHARED_LOAD
    what = "shared with other work: an upper bound" if shared else "free cores"
    return f"load {mean:.1f} on {cores} cores (peak {record.get('load_peak', mean):.1f}; {what})"


def page(scales: tuple[str, ...] = ("cpu", "gpu", "paper")) -> str:
    """The provenance block: per scale, one line per published run."""
    lines = []
    for scale in scales:
        found = records(scale)
        if not found:
            continue
        lines += [f"### `{scale}`", "", "| run | commit | started | minutes | machine | load | computed |",
                  "|---|---|---|---:|---|---|---|"]  # fmt: skip
        for r in found:
            if "error" in r:
                lines.append(f"| {r['run']} | {r['error']} | | | | | |")
                continue
            head = f"`{r['commit']}`" + (" (uncommitted changes)" if r.get("dirty") else "")
            where = f"{r['cpu']}, {r['cores']} cores, torch {r['torch']}"
            if r.get("realisation", "default") != "default":
                where += f", realisation {r['realisation']}"
            row = [r["run"], head, r["started"], f"{r['minutes']:.1f}", where, load_note(r), r["computed"]]
            lines.append("| " + " | ".join(str(c) for c in row) + " |")
        lines.append("")
    return "\n".join(lines) + "\n" if lines else "No published run has a provenance record yet.\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", type=Path, help="the page whose provenance block to rewrite")
    record = parser.add_argument_group(
        "a run made by a runner that wrote no record (before records existed), from its log, on this machine"
    )
    record.add_argument("--record", metavar="RUN", help="the run folder's name, e.g. sd_routing")
    record.add_argument("--scale", default="cpu")
    record.add_argument("--commit", help="the commit it ran at")
    record.add_argument("--started", help="YYYY-MM-DDTHH:MM (UTC)")
    record.add_argument("--minutes", type=float)
    record.add_argument(
        "--load", type=float, nargs="+", help="the one-minute load averages sampled while it ran"
    )
    record.add_argument("--computed", default="")
    args = parser.parse_args(argv)
    if args.record:
        if not (args.commit and args.started and args.minutes and args.load):
            parser.error("--record needs --commit, --started, --minutes and --load")
        load = LoadSampler()
        load.samples = list(args.load)
        started = dt.datetime.fromisoformat(args.started).replace(tzinfo=dt.UTC)
        at = {"commit": args.commit, "dirty": False}
        print(write_record(args.scale, args.record, started, args.minutes, load, args.computed, at))
    return blocks.show(page(), args.write, START, END)


if __name__ == "__main__":
    raise SystemExit(main())
