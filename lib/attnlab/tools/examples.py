"""The example notebooks: ``notebooks/<name>.ipynb`` beside the papers', showing how to reuse the library.

    python -m attnlab.tools.examples --store                      # store every notebook's smoke outputs
    python -m attnlab.tools.examples --store --notebooks reuse_any_model

An example judges no claim and writes no figures, so ``make reproduce`` (``attnlab.runner.run``, which runs
the papers of ``attnlab.papers.PAPERS``) leaves it out. It carries smoke-scale outputs like the papers'
notebooks, which ``make test`` checks with nbval; ``--store`` (``make store-notebooks``) executes the papers'
notebooks through ``attnlab.runner.run --store`` and each example the same way: papermill at smoke scale
(``$ATTNLAB_SCALE``, which the notebooks' ``scale="auto"`` reads), in ``notebooks/``, the progress widgets and
timings stripped (``attnlab.runner.run.strip_noise``), written over the source only when it succeeds.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from attnlab import paths
from attnlab.errors import ParameterError
from attnlab.papers import PAPERS
from attnlab.runner import run
from attnlab.runner.params import SCALE_ENV

#: Example notebook name -> the library module it demonstrates.
EXAMPLES: dict[str, str] = {
    "reuse_any_model": "attnlab.reuse",
}


def store(name: str, log_output: bool = True) -> None:
    """Execute ``notebooks/<name>.ipynb`` at smoke scale and store its outputs in place (see the module)."""
    source = run.notebooks_dir() / f"{name}.ipynb"
    target = paths.build_dir() / "notebooks" / "store" / f"{name}.ipynb"
    before = {env: os.environ.get(env) for env in (SCALE_ENV, paths.FIGURES_ENV)}
    with tempfile.TemporaryDirectory(prefix="attnlab-example-figures-") as figures:
        os.environ[SCALE_ENV] = "smoke"  # the kernel inherits both
        os.environ[paths.FIGURES_ENV] = figures  # anything an example saved would land here, not in figures/
        try:
            run.execute(source, target, {}, log_output)
        finally:
            for env, value in before.items():
                if value is None:
                    os.environ.pop(env, None)
                else:
                    os.environ[env] = value
    run.strip_noise(target)
    os.replace(target, source)


def main(argv: list[str] | None = None) -> int:
    prog, about = "python -m attnlab.tools.examples", __doc__.split("\n")[0]
    parser = argparse.ArgumentParser(prog=prog, description=about)
    parser.add_argument("--store", action="store_true", help="execute at smoke scale into notebooks/ (nbval)")
    parser.add_argument("--notebooks", default="", help="comma-separated names (default: every notebook)")
    parser.add_argument("--quiet", action="store_true", help="do not stream notebook output")
    args = parser.parse_args(argv)
    names = [n for n in args.notebooks.replace(",", " ").split() if n]
    unknown = sorted(set(names) - set(PAPERS) - set(EXAMPLES))
    if unknown:
        known = sorted({*PAPERS, *EXAMPLES})
        print(f"error: unknown notebook(s) {unknown}; choose from {known}", file=sys.stderr)
        return 2
    if not args.store:
        print("examples:", ", ".join(f"{n} ({m})" for n, m in EXAMPLES.items()))
        return 0
    papers = [n for n in names if n in PAPERS] if names else list(PAPERS)
    examples = [n for n in names if n in EXAMPLES] if names else list(EXAMPLES)
    if papers:
        status = run.main(["--store", "--notebooks", ",".join(papers), *(["--quiet"] if args.quiet else [])])
        if status:
            return status
    try:
        paths.pin_environment()  # absolute folders, inherited by the kernel (which runs in notebooks/)
    except ParameterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    run.stop_on_signals()  # Ctrl-C stops the kernel too, and the source keeps its stored outputs
    try:
        for i, name in enumerate(examples, 1):
            print(f"[{i}/{len(examples)}] example {name} (scale=smoke) ...", flush=True)
            store(name, log_output=not args.quiet)
            print(f"[{i}/{len(examples)}] example {name} stored -> notebooks/{name}.ipynb", flush=True)
    except KeyboardInterrupt:
        print("interrupted: the example's stored outputs are left as they were", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
