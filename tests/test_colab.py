"""Colab, simulated: the install cell's logic, the scale `auto`, where an installed copy writes, and the one
repository URL that badges and install cells are written from."""

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


@pytest.mark.parametrize("name", sorted(PAPERS))
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
    assert set(colab.EXTRAS) == set(PAPERS)
    for name, module in PAPERS.items():
        folder = ROOT / "lib" / Path(*module.split("."))
        source = "".join(p.read_text() for p in folder.glob("*.py"))
        uses_hf = "from attnlab import hf" in source or "attnlab.hf" in source
        assert uses_hf == ("hf" in colab.EXTRAS[name]), name


def test_runtime_dependencies_leave_out_the_notebook_tools():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = " ".join(project["dependencies"])
    for pkg in ("jupyter", "ipykernel", "papermill"):
        assert pkg not in core
        assert any(r.startswith(pkg) for r in project["optional-dependencies"]["notebooks"])


@pytest.mark.parametrize("name", sorted(PAPERS))
def test_stored_notebooks_carry_the_generated_badge_and_install_cell(name):
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    assert colab.badge(URL, name) in "".join(nb["cells"][0]["source"])
    cell = "".join(nb["cells"][1]["source"])
    assert cell == colab.install_cell(URL, name), "run python -m attnlab.tools.colab"


def test_a_fork_is_one_command(tmp_path):
    for name in ("pyproject.toml", "CITATION.cff", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / "xsa.ipynb", tmp_path / "notebooks" / "xsa.ipynb")
    fork = "https://github.com/someone/attnlab-fork"
    colab.set_repository(tmp_path, fork)
    assert colab.repository_url(tmp_path / "pyproject.toml") == fork
    for name in ("README.md", "CITATION.cff"):
        assert URL not in (tmp_path / name).read_text()
    assert colab.rewrite_notebook(tmp_path / "notebooks" / "xsa.ipynb", fork)
    text = (tmp_path / "notebooks" / "xsa.ipynb").read_text()
    assert "someone/attnlab-fork/blob/main/notebooks/xsa.ipynb" in text and f"git+{fork}" in text
    assert URL not in text
    assert not colab.rewrite_notebook(tmp_path / "notebooks" / "xsa.ipynb", fork)  # idempotent
    with pytest.raises(SystemExit):
        colab.set_repository(tmp_path, "not a url")


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
