"""Execute the paper notebooks headlessly with papermill.

    .venv/bin/python -m attnlab.runner.run --scale cpu --notebooks xsa [-p "seeds=[0, 1, 2]" ...]
    .venv/bin/python -m attnlab.runner.run --scale cpu --notebooks xsa --params "seeds=[0, 1] steps=100"
    .venv/bin/python -m attnlab.runner.run --scale paper --nproc 8   # train with 8 processes under torchrun
    # re-execute at smoke scale into notebooks/ (outputs for nbval)
    .venv/bin/python -m attnlab.runner.run --store

Parameters are checked against each notebook's ``parameters`` cell and its paper module's ``configure`` before
any notebook starts. Executed copies land in ``build/notebooks/<scale>/``, never over the sources; figures and
claims in ``figures/<scale>/<run>/``, and at the cpu, gpu and paper scales the executed notebook beside them
in ``figures/<scale>/notebooks/<run>.ipynb``; every paper's claims are gathered into
``figures/<scale>/REPORT.md``. ``<run>`` is the paper's name for a run with its scale's defaults, else
``<paper>--<slug>-<hash8>``, named by the settings that differ (the experiment decides it, so a notebook run
by papermill or Jupyter writes the same folder: :attr:`attnlab.papers.experiment.PaperExperiment.run_name`).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime as dt
import importlib
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from attnlab import paths, realisation
from attnlab.errors import ParameterError
from attnlab.papers import PAPERS
from attnlab.runner import manifest, provenance
from attnlab.runner.leftovers import remove_stale
from attnlab.runner.params import SCALE_ENV, SCALES, parse_assignment, split_assignments
from attnlab.runner.report import write_report
from attnlab.training.launch import NPROC_ENV
from attnlab.training.workers import available_cores


def notebooks_dir() -> Path:
    root = paths.repo_root()
    if root is None:
        raise SystemExit("attnlab.runner.run needs a checkout of the repository (notebooks/ not found)")
    return root / "notebooks"


def default_scale() -> str:
    import torch

    return "gpu" if torch.cuda.is_available() else "cpu"


def choose_scale(flag: str | None, overrides: dict[str, object], store: bool) -> str:
    """The scale of a run: ``--scale``, or ``-p scale=``, which must agree when both are given (a value given
    twice that disagrees is an error, never silently overwritten), else the machine's default."""
    if store:
        return "smoke"
    if "scale" in overrides:
        given = overrides["scale"]
        if given not in SCALES:
            raise ParameterError(f"-p scale={given!r}: choose one of {list(SCALES)}")
        if flag is not None and flag != given:
            raise ParameterError(f"the scale is given twice, differently: --scale {flag}, -p scale={given}")
        return str(given)
    return flag or default_scale()


def read_overrides(assignments: list[str]) -> dict[str, object]:
    """The ``key=value`` assignments of ``-p`` and ``--params`` as a dict; a key given twice with different
    values is an error (never silently overwritten)."""
    overrides: dict[str, object] = {}
    for text in assignments:
        key, value = parse_assignment(text)
        if key in overrides and overrides[key] != value:
            raise ParameterError(f"{key} is given twice, differently: {overrides[key]!r} and {value!r}")
        overrides[key] = value
    return overrides


def resolve_parameters(name: str, overrides: dict[str, object]) -> dict[str, object]:
    """The notebook's declared parameters with ``overrides`` applied, validated by its paper module."""
    import papermill

    if name not in PAPERS:
        raise ParameterError(f"unknown notebook {name!r}; choose from {sorted(PAPERS)}")
    declared = papermill.inspect_notebook(str(notebooks_dir() / f"{name}.ipynb"))
    unknown = sorted(set(overrides) - set(declared))
    if unknown:
        known = ", ".join(f"{k} ({v['help']})" for k, v in declared.items())
        raise ParameterError(f"{name}: unknown parameter(s) {unknown}; this notebook takes: {known}")
    merged = {k: ast.literal_eval(v["default"]) for k, v in declared.items()} | overrides
    importlib.import_module(PAPERS[name]).configure(**merged).check_data()
    return merged


def run_name(name: str, parameters: dict[str, object]) -> str:
    """The name of the run notebook ``name`` makes with ``parameters`` (its figures folder and executed
    notebook are named by it): what its experiment decides,
    :attr:`attnlab.papers.experiment.PaperExperiment.run_name`, so the kernel writes to the same folder."""
    return str(importlib.import_module(PAPERS[name]).configure(**parameters).run_name)


def failure_summary(path: Path, lines: int = 40) -> str:
    """What the failing cell of the executed notebook at ``path`` printed and raised: its source's first
    line, its last ``lines`` lines of output and its error."""
    nb = json.loads(path.read_text())
    for index, cell in enumerate(nb["cells"]):
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if not errors:
            continue
        printed = "".join(
            "".join(o.get("text", "")) for o in cell["outputs"] if o.get("output_type") == "stream"
        ).splitlines()[-lines:]
        err = errors[0]
        source = "".join(cell["source"]).splitlines()
        head = f"cell {index} ({source[0] if source else 'empty'}) failed"
        return "\n".join([head, *printed, f"{err['ename']}: {err['evalue']}"])
    return f"no cell of {path} holds an error"


def stop_on_signals() -> None:
    """On Ctrl-C (SIGINT) or SIGTERM, kill every process this runner started, at once (the notebook kernel
    runs in its own session, so Ctrl-C never reaches it, nor the workers it started), then raise
    ``KeyboardInterrupt``: the staged outputs are removed, the previous figures stay whole, and the executed
    notebook is kept as ``<name>.failed.ipynb``."""

    def stop(signum: int, _frame: object) -> None:
        import psutil  # with the notebooks extra (ipykernel needs it)

        children = psutil.Process().children(recursive=True)
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.kill()
        psutil.wait_procs(children, timeout=5)
        print(
            f"\n{signal.Signals(signum).name}: stopped {len(children)} process(es)",
            file=sys.stderr,
            flush=True,
        )
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def execute(source: Path, target: Path, parameters: dict[str, object], log_output: bool) -> None:
    """Run ``source`` into ``target`` atomically, with a progress bar over its cells; a failed run is kept as
    ``<name>.failed.ipynb`` and the failing cell's output and error are printed."""
    import papermill

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".partial-{os.getpid()}.ipynb")  # removed by the next run if left
    failed = target.with_suffix(".failed.ipynb")
    try:
        papermill.execute_notebook(
            str(source), str(partial), parameters=parameters, kernel_name="python3",
            cwd=str(source.parent), log_output=log_output, progress_bar=True, shutdown_kernel="immediate",
        )  # fmt: skip
    except BaseException as err:
        if partial.exists():
            os.replace(partial, failed)
            if isinstance(err, papermill.PapermillExecutionError) and not log_output:
                print(failure_summary(failed), file=sys.stderr)
        raise
    os.replace(partial, target)


def run_staged(source: Path, target: Path, parameters: dict[str, object], log_output: bool) -> None:
    """:func:`execute`, with the notebook's figures and claims written to a staging folder
    (``figures/.staging-<name>-<pid>/``) whose run folders replace those of ``figures/<scale>/`` only when the
    notebook succeeds. A failed or interrupted run leaves the previous complete outputs in place (and its
    notebook as ``<name>.failed.ipynb``); a success removes a stale failed notebook of the same name."""
    final_root = paths.figures_dir()
    staging = final_root / f".staging-{target.stem}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    before = os.environ.get(paths.FIGURES_ENV)
    # the kernel inherits it: attnlab.paths.figures_dir() reads it
    os.environ[paths.FIGURES_ENV] = str(staging)
    try:
        execute(source, target, parameters, log_output)
        publish(staging, final_root)
    finally:
        if before is None:
            os.environ.pop(paths.FIGURES_ENV, None)
        else:
            os.environ[paths.FIGURES_ENV] = before
        shutil.rmtree(staging, ignore_errors=True)
    target.with_suffix(".failed.ipynb").unlink(missing_ok=True)


def publish(staging: Path, final_root: Path) -> None:
    """Move every ``<scale>/<run>/`` folder of ``staging`` into ``final_root``, each replacing the old one
    whole (renamed aside, the new one renamed in, the old one deleted): no folder ever mixes two runs. Each
    folder gets its manifest first (:mod:`attnlab.runner.manifest`), which REPORT.md and the site check."""
    for folder in sorted(staging.glob("*/*")):
        if not folder.is_dir():
            continue
        manifest.write(folder)
        final = final_root / folder.parent.name / folder.name
        final.parent.mkdir(parents=True, exist_ok=True)
        old = final.with_name(f".old-{final.name}-{os.getpid()}")
        if final.exists():
            os.replace(final, old)
        os.replace(folder, final)
        shutil.rmtree(old, ignore_errors=True)


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def strip_noise(path: Path) -> None:
    """Drop papermill's per-cell timing metadata, and the progress-bar widgets (their state, with random ids,
    and their views, whose stored text is the bar at 0 %), so a stored notebook changes only when its outputs
    do."""
    nb = json.loads(path.read_text())
    nb["metadata"].pop("papermill", None)
    nb["metadata"].pop("widgets", None)
    for cell in nb["cells"]:
        cell["metadata"].pop("papermill", None)
        cell["metadata"].pop("execution", None)
        if "outputs" in cell:
            cell["outputs"] = [out for out in cell["outputs"] if WIDGET_VIEW not in out.get("data", {})]
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def cache_state() -> dict[Path, int]:
    """Every finished entry of the results cache (trained runs' ``result.pt``, ``cached_result`` files)
    with its modification time: compared before and after a notebook to tell what it computed."""
    build = paths.build_dir()
    files = [*build.glob("runs/*/result.pt"), *build.glob("results/*/*.pt")]
    return {f: f.stat().st_mtime_ns for f in files if f.is_file()}


def cache_summary(before: dict[Path, int], after: dict[Path, int]) -> str:
    """What a notebook computed, from the cache's state before and after it: "every expensive result
    loaded from the cache" on a cached re-run, else how many training runs and other results it stored."""
    fresh = [f for f, mtime in after.items() if before.get(f) != mtime]
    if not fresh:
        return "every expensive result loaded from the cache"
    runs = sum(f.name == "result.pt" for f in fresh)
    return f"computed {runs} training runs and {len(fresh) - runs} other results (now cached)"


def check_nproc(nproc: int) -> None:
    """``--nproc``: at least 1, and no more training processes than this node has GPUs (with CUDA) or CPU
    cores (without): torchrun starts one process per GPU, or per core with the gloo backend."""
    if nproc < 1:
        raise ParameterError(f"--nproc must be at least 1; got {nproc}")
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    cores = available_cores()
    limit, what = (gpus, f"{gpus} GPU(s)") if gpus else (cores, f"{cores} CPU core(s)")
    if nproc > limit:
        raise ParameterError(f"--nproc {nproc}: this node has {what}; give at most {limit}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnlab.runner.run", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=SCALES, help="default: gpu where CUDA is available, else cpu")
    parser.add_argument("--notebooks", default="", help="comma-separated names (default: all)")
    parser.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--params",
        default="",
        metavar="'KEY=VALUE ...'",
        help="several parameters in one string (make's PARAMS)",
    )
    parser.add_argument("--quiet", action="store_true", help="do not stream notebook output")
    parser.add_argument(
        "--nproc", type=int, help=f"training processes on this node, under torchrun (sets {NPROC_ENV})"
    )
    parser.add_argument(
        "--store", action="store_true", help="execute at smoke scale into notebooks/ (for nbval)"
    )
    args = parser.parse_args(argv)

    names = [n for n in args.notebooks.replace(",", " ").split() if n] or list(PAPERS)
    try:
        realisation.name()  # a bogus ATTNLAB_REALISATION is refused before any folder is touched
        paths.pin_environment()  # absolute folders, inherited by the kernels (which run in notebooks/)
    except ParameterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for path in remove_stale():
        print(f"removed what an interrupted run left: {path}")
    stop_on_signals()
    if args.store:
        os.environ[SCALE_ENV] = "smoke"  # the kernels inherit it: the notebooks' scale "auto" is smoke here
    try:
        overrides = read_overrides([*args.param, *split_assignments(args.params)])
        scale = choose_scale(args.scale, overrides, args.store)
        if args.store and (overrides or args.scale not in (None, "smoke")):
            raise ParameterError("--store runs the notebooks with their stored (smoke) parameters only")
        if args.nproc is not None:
            check_nproc(args.nproc)
        plan = {n: resolve_parameters(n, overrides | ({} if args.store else {"scale": scale})) for n in names}
    except ParameterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    if args.nproc is not None:
        # the notebook kernels inherit it; attnlab.training.launch reads it
        os.environ[NPROC_ENV] = str(args.nproc)
    walls: dict[str, float] = {}
    try:
        for i, (name, params) in enumerate(plan.items(), 1):
            run = run_name(name, params)
            which = "" if run == name else f", run {run}: not the scale's defaults"
            print(f"[{i}/{len(plan)}] {name} (scale={scale}{which}) ...", flush=True)
            source = notebooks_dir() / f"{name}.ipynb"
            start, started = time.perf_counter(), dt.datetime.now(dt.UTC)
            cached_before = cache_state()
            with provenance.LoadSampler() as load:  # the load it ran under, for its provenance record
                if args.store:
                    target = paths.build_dir() / "notebooks" / "store" / f"{name}.ipynb"
                    run_staged(source, target, {}, log_output=not args.quiet)
                    strip_noise(target)
                    os.replace(target, source)
                    target = source
                else:
                    target = paths.build_dir() / "notebooks" / scale / f"{run}.ipynb"
                    run_staged(source, target, params, log_output=not args.quiet)
                    if scale != "smoke":  # kept beside the figures, so a reader sees the executed notebook
                        kept = paths.figures_dir() / scale / "notebooks" / f"{run}.ipynb"
                        kept.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copyfile(target, kept)
                        strip_noise(kept)
            walls[name] = time.perf_counter() - start
            computed = cache_summary(cached_before, cache_state())
            if not args.store:
                provenance.write_record(scale, run, started, walls[name] / 60, load, computed)
            done = f"{walls[name] / 60:.1f} min, {computed}"
            print(f"[{i}/{len(plan)}] {name} done in {done} -> {target}", flush=True)
    except KeyboardInterrupt:
        write_report(scale)  # the notebooks that finished are published and reported
        print(
            "interrupted: the running notebook's figures were not published (its executed copy is kept as "
            "<name>.failed.ipynb); the notebooks that finished keep theirs",
            file=sys.stderr,
        )
        return 130

    report = write_report(scale)
    print(f"\nclaims: {report}")
    for name, wall in walls.items():
        print(f"  {name:<24} {wall / 60:6.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
