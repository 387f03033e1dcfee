"""The wheel: built by ``python -m build`` from the files a commit holds, it carries the whole package (every
module and data file of lib/attnlab) and nothing else (no notebooks, no tests), asks for the core dependencies
only (the notebooks', dev, hf and corpora tools behind their extras), and, installed into a fresh virtual
environment, imports with nothing but the core dependencies present.

What the clean install proves, and what it does not: the wheel goes into a new venv without system
site-packages with ``pip install --no-deps``, and the child interpreter then sees the core dependencies'
import closure only, reused from this environment (torch alone would take minutes to install): every
distribution here that the core dependencies do not pull in, recursively (Jupyter, papermill, ipykernel,
transformers, pytest, ...), is hidden by an import hook, as if it were not installed. Every module of the
installed package must import there, except the ones that need the ``hf`` or ``corpora`` extra, which may
fail only on those extras' packages. It does not test that pip can resolve and download the core
dependencies from an index into an empty environment.
"""

import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

pytestmark = pytest.mark.slow


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", Requirement(requirement).name).lower()


def _closure(requirements: list[str]) -> set[str]:
    """The distributions (normalised names) that ``requirements`` pull in here, recursively, no extras."""
    seen: set[str] = set()
    todo = list(requirements)
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = _name(str(req))
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # a requirement this environment does not have (e.g. triton on a CPU machine)
        seen.add(name)
        todo.extend(dist.requires or [])
    return seen


def _top_levels(distributions: set[str]) -> set[str]:
    """The top-level import names that only distributions outside ``distributions`` provide (not attnlab)."""
    hidden = set()
    for module, dists in md.packages_distributions().items():
        names = {re.sub(r"[-_.]+", "-", d).lower() for d in dists}
        if module != "attnlab" and not module.startswith("__editable__") and not names & distributions:
            hidden.add(module)
    return hidden


def _sources(dest: Path) -> None:
    """Copy what a commit would hold (tracked and untracked-but-not-ignored files; not the figures) to
    ``dest``, so the build sees a clean tree and writes nothing into the checkout."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for rel in listed:
        src = ROOT / rel
        if rel and src.is_file() and not rel.startswith(("figures/", "data/")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


CHILD = textwrap.dedent(
    """
    import importlib, importlib.abc, json, pkgutil, sys, traceback
    from pathlib import Path

    dev_site, hidden = sys.argv[1], set(json.loads(sys.argv[2]))

    class Hide(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in hidden:
                raise ModuleNotFoundError(f"No module named {name!r} (hidden)", name=name)
            return None

    sys.meta_path.insert(0, Hide())
    sys.path.append(dev_site)  # after the clean venv's own site-packages, without its .pth files
    import attnlab

    result = {"file": attnlab.__file__, "modules": [], "failed": {}}
    for info in pkgutil.walk_packages(attnlab.__path__, "attnlab."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
            result["modules"].append(info.name)
        except ModuleNotFoundError as err:
            result["failed"][info.name] = (err.name or "").split(".")[0]
        except Exception:
            result["failed"][info.name] = "error: " + traceback.format_exc(limit=3)
    print(json.dumps(result))
    """
)


def test_the_wheel_installs_clean_and_imports_with_the_core_dependencies_only(tmp_path):
    src, dist = tmp_path / "src", tmp_path / "dist"
    _sources(src)
    # sdist first, then the wheel from the sdist, in an isolated build environment: as `python -m build` does
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(src)], check=True,
                   capture_output=True, timeout=300)  # fmt: skip
    [wheel] = dist.glob("attnlab-*.whl")
    [sdist] = dist.glob("attnlab-*.tar.gz")
    assert sdist.stat().st_size > 0

    names = zipfile.ZipFile(wheel).namelist()
    info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    assert {n.split("/")[0] for n in names} == {"attnlab", info}  # no notebooks/, tests/, docs/ ...
    shipped = sorted(n for n in names if n.startswith("attnlab/"))
    package = sorted(
        p.relative_to(src / "lib").as_posix() for p in (src / "lib" / "attnlab").rglob("*") if p.is_file()
    )
    assert shipped == package  # every module and data file a commit holds, nothing else

    metadata = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
    requires = [
        line.split(": ", 1)[1] for line in metadata.splitlines() if line.startswith("Requires-Dist: ")
    ]
    core = [r for r in requires if Requirement(r).marker is None]
    assert sorted(map(_name, core)) == sorted(map(_name, PYPROJECT["dependencies"]))
    extras = PYPROJECT["optional-dependencies"]
    for extra, wanted in extras.items():
        found = [
            r
            for r in requires
            if Requirement(r).marker and f'extra == "{extra}"' in str(Requirement(r).marker)
        ]
        assert sorted(map(_name, found)) == sorted(map(_name, wanted)), extra
    for req in map(Requirement, core):  # pip check's question, of this environment: is each one satisfied?
        assert req.specifier.contains(md.version(req.name), prereleases=True), req
    entry_points = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()
    assert "attnlab-run = attnlab.runner.run:main" in entry_points

    venv = tmp_path / "clean"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index"]
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True, timeout=120)

    core_dists = _closure(PYPROJECT["dependencies"])
    hidden = _top_levels(core_dists)
    for tool in ("jupyter", "ipykernel", "papermill", "pytest", "transformers", "nbformat"):
        assert tool not in core_dists
    assert {"papermill", "ipykernel", "transformers", "pytest", "nbval"} <= hidden
    dev_site = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "torch").is_dir())
    out = subprocess.run(
        [str(python), "-c", CHILD, dev_site, json.dumps(sorted(hidden))],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(result["file"]).is_relative_to(venv)  # the installed copy, not the checkout

    # the hf and corpora extras' modules, and the site's Griffe extension (attnlab.tools.docstrings)
    optional = (
        _top_levels_of(extras["hf"]) | _top_levels_of(extras["corpora"]) | _top_levels_of(extras["site"])
    )
    bad = {m: why for m, why in result["failed"].items() if why not in optional}
    assert not bad, f"modules that fail without the notebooks' and dev tools: {bad}"
    imported = set(result["modules"])
    for module in ("attnlab.attention", "attnlab.model", "attnlab.metrics", "attnlab.training.trainer",
                   "attnlab.data.corpora", "attnlab.runner.run", "attnlab.runner.report",
                   "attnlab.papers.xsa", "attnlab.papers.qk_speed"):  # fmt: skip
        assert module in imported, (module, result["failed"].get(module))
    assert "attnlab.hf" in result["failed"]  # and the hf extra's modules do need it


def _top_levels_of(requirements: list[str]) -> set[str]:
    """The top-level import names of the distributions ``requirements`` pull in beyond the core's."""
    extra = _closure(requirements) - _closure(PYPROJECT["dependencies"])
    provided = set()
    for module, dists in md.packages_distributions().items():
        if {re.sub(r"[-_.]+", "-", d).lower() for d in dists} & extra:
            provided.add(module)
    return provided
