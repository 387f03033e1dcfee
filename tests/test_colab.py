"""Colab, simulated: the install cell's logic (Drive included), the scale `auto`, where an installed copy
writes, and the one repository URL that badges, install cells, the README's links and CITATION.cff are written
from."""

import json
import shutil
import sys
import types
from pathlib import Path

import pytest
import torch

from attnlab import paths
from attnlab.errors import ParameterError
from attnlab.papers import PAPERS
from attnlab.runner.params import SCALE_ENV, check_scale
from attnlab.tools import colab
from attnlab.tools.examples import EXAMPLES
from attnlab.training.trainer import resolve_device

ROOT = Path(__file__).resolve().parents[1]
URL = colab.repository_url(ROOT / "pyproject.toml")


@pytest.fixture
def on_colab(monkeypatch):
    """A Colab runtime: a ``google.colab`` module is loaded."""
    google = types.ModuleType("google")
    module = types.ModuleType("google.colab")
    google.colab = module
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.colab", module)
    return module


def _run_install_cell(source, monkeypatch):
    calls = []
    import subprocess

    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append((cmd, kw)))
    exec(compile(source, "<install cell>", "exec"), {})
    return calls


@pytest.mark.parametrize("name", colab.NOTEBOOKS)
def test_install_cell_on_colab_leaves_torch_and_jupyter_alone(name, on_colab, monkeypatch):
    [(cmd, kw)] = _run_install_cell(colab.install_cell(URL, name), monkeypatch)
    assert cmd[:4] == [sys.executable, "-m", "pip", "install"] and kw == {"check": True}
    assert cmd[4].endswith(f"@ git+{URL}") and cmd[4].startswith("attnlab")
    assert "-q" not in cmd  # pip's "restart the runtime" notice stays visible
    for pkg in ("torch", "jupyter", "ipykernel", "papermill", "notebooks"):
        assert pkg not in cmd[4]
    assert ("[hf]" in cmd[4]) == ("hf" in colab.EXTRAS[name])


def test_install_cell_does_nothing_off_colab(monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    assert _run_install_cell(colab.install_cell(URL, "xsa"), monkeypatch) == []


def test_notebooks_that_load_pretrained_models_install_the_hf_extra():
    assert set(colab.EXTRAS) == set(colab.NOTEBOOKS) == set(PAPERS) | set(EXAMPLES)
    for name, module in {**PAPERS, **EXAMPLES}.items():
        where = ROOT / "lib" / Path(*module.split("."))
        files = where.glob("*.py") if where.is_dir() else [where.with_suffix(".py")]
        source = "".join(p.read_text() for p in files)
        uses_hf = "from attnlab import hf" in source or "attnlab.hf" in source
        assert uses_hf == ("hf" in colab.EXTRAS[name]), name


def test_runtime_dependencies_leave_out_the_notebook_tools():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = " ".join(project["dependencies"])
    for pkg in ("jupyter", "ipykernel", "papermill"):
        assert pkg not in core
        assert any(r.startswith(pkg) for r in project["optional-dependencies"]["notebooks"])


@pytest.mark.parametrize("name", colab.NOTEBOOKS)
def test_stored_notebooks_carry_the_generated_badge_and_install_cell(name):
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    assert colab.badge(URL, name) in "".join(nb["cells"][0]["source"])
    cell = "".join(nb["cells"][1]["source"])
    assert cell == colab.install_cell(URL, name), "run python -m attnlab.tools.colab"


def test_everything_that_names_the_repository_agrees_with_pyproject():
    """Every notebook's badge and install cell, the README's Colab links and CITATION.cff, as
    `python -m attnlab.tools.colab --check` sees them (it writes nothing)."""
    assert colab.sync(ROOT, write=False) == [], "run python -m attnlab.tools.colab"
    readme = (ROOT / "README.md").read_text()
    for name in colab.NOTEBOOKS:  # once each: the notebooks table stands in the README once
        assert readme.count(f"({colab.colab_prefix(URL)}{name}.ipynb)") == 1, name


def _checkout_copy(tmp_path):
    for name in ("pyproject.toml", "CITATION.cff", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "notebooks").mkdir()
    for name in colab.NOTEBOOKS:
        shutil.copy(ROOT / "notebooks" / f"{name}.ipynb", tmp_path / "notebooks" / f"{name}.ipynb")
    return tmp_path


def _points_at(root, url):
    assert colab.sync(root, write=False) == []
    for name in colab.NOTEBOOKS:
        text = (root / "notebooks" / f"{name}.ipynb").read_text()
        assert f"{colab.colab_prefix(url)}{name}.ipynb" in text and f"git+{url}" in text
    readme, citation = (root / "README.md").read_text(), (root / "CITATION.cff").read_text()
    assert f"{colab.colab_prefix(url)}xsa.ipynb" in readme and f'repository-code: "{url}"' in citation
    for path in [root / "README.md", root / "CITATION.cff", *(root / "notebooks").glob("*.ipynb")]:
        assert URL not in path.read_text(), path


def test_a_fork_changes_one_line_and_runs_one_command(tmp_path):
    root = _checkout_copy(tmp_path)
    fork = "https://github.com/someone/attnlab-fork"
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(f'Repository = "{URL}"', f'Repository = "{fork}"'))
    stale = colab.sync(root, write=False)  # what --check reports (exit 1)
    assert set(stale) == {"README.md", "CITATION.cff", *(f"notebooks/{n}.ipynb" for n in colab.NOTEBOOKS)}
    assert colab.sync(root) == stale  # python -m attnlab.tools.colab
    _points_at(root, fork)
    assert colab.sync(root) == []  # idempotent
    # the notebooks' other cells and their outputs are left as they were
    for name in colab.NOTEBOOKS:
        new = json.loads((root / "notebooks" / f"{name}.ipynb").read_text())
        old = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
        assert new["cells"][2:] == old["cells"][2:] and new["metadata"] == old["metadata"]


def test_repo_sets_the_line_too(tmp_path):
    root = _checkout_copy(tmp_path)
    fork = "https://github.com/someone-else/attnlab"
    colab.set_repository(root, fork)
    assert colab.repository_url(root / "pyproject.toml") == fork
    _points_at(root, fork)
    with pytest.raises(SystemExit):
        colab.set_repository(root, "not a url")


def test_keep_on_drive_mounts_drive_and_points_the_outputs_there(on_colab, monkeypatch):
    mounted = []
    drive = types.ModuleType("google.colab.drive")
    drive.mount = mounted.append
    on_colab.drive = drive
    monkeypatch.setitem(sys.modules, "google.colab.drive", drive)
    for env in ("ATTNLAB_BUILD", "ATTNLAB_FIGURES"):
        monkeypatch.setenv(env, "restored after the test")
    source = colab.install_cell(URL, "xsa")
    assert "KEEP_ON_DRIVE = False" in source  # off unless asked
    _run_install_cell(source, monkeypatch)
    assert mounted == [] and paths.build_dir() == Path("restored after the test").absolute()
    [(cmd, _)] = _run_install_cell(
        source.replace("KEEP_ON_DRIVE = False", "KEEP_ON_DRIVE = True"), monkeypatch
    )
    assert mounted == [colab.DRIVE_MOUNT] and cmd[3] == "install"
    assert paths.build_dir() == Path(colab.DRIVE_FOLDER) / "build"
    assert paths.figures_dir() == Path(colab.DRIVE_FOLDER) / "figures"


def test_scale_auto_is_the_cpu_experiments_on_the_device_present(on_colab, monkeypatch):
    monkeypatch.delenv(SCALE_ENV, raising=False)
    assert check_scale("auto") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a Colab GPU runtime
    assert resolve_device("auto").type == "cuda"
    monkeypatch.setenv(SCALE_ENV, "smoke")
    assert check_scale("auto") == "smoke"
    monkeypatch.setenv(SCALE_ENV, "huge")
    with pytest.raises(ParameterError, match=SCALE_ENV):
        check_scale("auto")
    with pytest.raises(ParameterError, match="auto or one of"):
        check_scale("laptop")


def test_an_installed_copy_on_colab_writes_under_content(on_colab, monkeypatch):
    monkeypatch.setattr(paths, "repo_root", lambda: None)
    for env in ("ATTNLAB_DATA", "ATTNLAB_BUILD", "ATTNLAB_FIGURES"):
        monkeypatch.delenv(env, raising=False)
    assert paths.figures_dir() == Path("/content/attnlab/figures")
    assert paths.data_dir() == Path("/content/attnlab/data")
    monkeypatch.delitem(sys.modules, "google.colab")
    assert paths.build_dir() == Path.home() / ".cache" / "attnlab" / "build"
