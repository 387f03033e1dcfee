"""The example notebooks (attnlab.tools.examples): stored at smoke scale like the papers', outside `make
reproduce`, never writing figures/."""

import json
import os
import shutil
from pathlib import Path

import pytest

from attnlab import paths
from attnlab.papers import PAPERS
from attnlab.runner import run
from attnlab.runner.params import SCALE_ENV
from attnlab.tools import examples

ROOT = Path(__file__).resolve().parents[1]


def test_examples_are_notebooks_but_not_papers():
    assert set(examples.EXAMPLES).isdisjoint(PAPERS)  # the runner (make reproduce) runs PAPERS only
    for name, module in examples.EXAMPLES.items():
        assert (ROOT / "notebooks" / f"{name}.ipynb").is_file()
        assert (ROOT / "lib" / Path(*module.split("."))).with_suffix(".py").is_file()
    makefile = (ROOT / "Makefile").read_text()
    store = makefile.split("\nstore-notebooks:", 1)[1].split("\n\n", 1)[0]
    assert "-m attnlab.tools.examples --store" in store


def test_unknown_names_are_refused(capsys):
    assert examples.main(["--store", "--notebooks", "xsa,nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_store_hands_papers_to_the_runner_and_runs_examples_itself(tmp_path, monkeypatch):
    calls, stored = [], []
    monkeypatch.setattr(run, "main", lambda argv: calls.append(argv) or 0)
    monkeypatch.setattr(examples, "store", lambda name, log_output=True: stored.append(name))
    monkeypatch.setattr(run, "stop_on_signals", lambda: None)
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))
    assert examples.main(["--store", "--notebooks", "xsa,reuse_any_model"]) == 0
    assert calls == [["--store", "--notebooks", "xsa"]] and stored == ["reuse_any_model"]
    calls.clear()
    stored.clear()
    assert examples.main(["--store", "--notebooks", "reuse_any_model"]) == 0
    assert calls == [] and stored == ["reuse_any_model"]
    stored.clear()
    assert examples.main(["--store"]) == 0  # everything: every paper, then every example
    assert calls == [["--store", "--notebooks", ",".join(PAPERS)]] and stored == list(examples.EXAMPLES)
    monkeypatch.setattr(run, "main", lambda argv: 1)  # a paper failed: the examples wait
    stored.clear()
    assert examples.main(["--store"]) == 1 and stored == []


def test_store_executes_at_smoke_without_touching_figures(tmp_path, monkeypatch):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    shutil.copy(ROOT / "notebooks" / "reuse_any_model.ipynb", notebooks / "reuse_any_model.ipynb")
    monkeypatch.setattr(run, "notebooks_dir", lambda: notebooks)
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))
    monkeypatch.setenv(paths.FIGURES_ENV, str(tmp_path / "figures"))
    monkeypatch.delenv(SCALE_ENV, raising=False)
    seen = {}

    def execute(source, target, parameters, log_output):
        seen.update(scale=os.environ[SCALE_ENV], figures=os.environ[paths.FIGURES_ENV], parameters=parameters)
        nb = json.loads(source.read_text())
        nb["metadata"]["papermill"] = {"duration": 1.0}  # stripped before it is stored
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(nb))

    monkeypatch.setattr(run, "execute", execute)
    examples.store("reuse_any_model", log_output=False)
    assert seen["scale"] == "smoke" and seen["parameters"] == {}
    assert not Path(seen["figures"]).exists() and seen["figures"] != str(tmp_path / "figures")
    assert os.environ[paths.FIGURES_ENV] == str(tmp_path / "figures") and SCALE_ENV not in os.environ
    stored = json.loads((notebooks / "reuse_any_model.ipynb").read_text())
    assert "papermill" not in stored["metadata"]
    assert not (tmp_path / "build" / "notebooks" / "store" / "reuse_any_model.ipynb").exists()


def test_a_failed_store_leaves_the_source_as_it_was(tmp_path, monkeypatch):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    source = notebooks / "reuse_any_model.ipynb"
    shutil.copy(ROOT / "notebooks" / "reuse_any_model.ipynb", source)
    before = source.read_text()
    monkeypatch.setattr(run, "notebooks_dir", lambda: notebooks)
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))

    def execute(source, target, parameters, log_output):
        raise RuntimeError("a cell failed")

    monkeypatch.setattr(run, "execute", execute)
    with pytest.raises(RuntimeError):
        examples.store("reuse_any_model", log_output=False)
    assert source.read_text() == before
