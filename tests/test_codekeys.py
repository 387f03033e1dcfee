"""Cache keys derived from the code (attnlab.codekeys): the import closure of a computation's module, the
check that a computation runs nothing outside it, and the key stored inside each result."""

import textwrap

import pytest
import torch

from attnlab import codekeys, verified
from attnlab.training import cache


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """A package ``attnlab`` in tmp_path: ``main`` imports ``used`` at module level and ``lazy`` inside a
    function; ``typed`` only for annotations, ``after`` on a line marked as judged after computing."""
    pkg = tmp_path / "attnlab"
    pkg.mkdir()
    files = {
        "__init__.py": "",
        "main.py": f"""
            from typing import TYPE_CHECKING
            from attnlab import used
            if TYPE_CHECKING:
                from attnlab import typed
            def compute():
                from attnlab import lazy
                return {{"x": used.value() + lazy.value()}}
            def judge():
                from attnlab import after  {codekeys.AFTER_COMPUTING}
                return after.value()
            def compute_and_judge():
                return {{"x": judge()}}
        """,
        "used.py": "def value():\n    return 1\n",
        "lazy.py": "def value():\n    return 2\n",
        "typed.py": "X = 1\n",
        "after.py": "def value():\n    return 3\n",
        "unrelated.py": "X = 1\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(textwrap.dedent(text))
    monkeypatch.setattr(codekeys, "PACKAGE", pkg)
    monkeypatch.setattr(codekeys, "_PREFIX", str(pkg) + "/")
    monkeypatch.syspath_prepend(str(tmp_path))
    import sys

    for name in [m for m in sys.modules if m == "attnlab" or m.startswith("attnlab.")]:
        monkeypatch.delitem(sys.modules, name)
    return pkg


def test_the_closure_follows_every_import_but_annotations_and_marked_ones(fake_package):
    assert codekeys.closure(["attnlab.main"]) == {"attnlab.main", "attnlab.used", "attnlab.lazy"}


def test_editing_a_module_in_the_closure_changes_the_key_and_only_then(fake_package):
    before = codekeys.code_digest(["attnlab.main"])
    (fake_package / "unrelated.py").write_text("X = 2\n")
    (fake_package / "typed.py").write_text("X = 2\n")
    assert codekeys.code_digest(["attnlab.main"]) == before
    (fake_package / "lazy.py").write_text("def value():\n    return 20\n")  # a function-level import
    assert codekeys.code_digest(["attnlab.main"]) != before


def test_a_computation_that_runs_code_outside_its_key_is_refused(fake_package, monkeypatch):
    monkeypatch.setenv(codekeys.CHECK_ENV, "1")
    import attnlab.main as main

    assert codekeys.run_checked(main.compute, ["attnlab.main"], "demo") == {"x": 3}
    # the marked import is outside the key: running it inside a computation is an incomplete fingerprint
    with pytest.raises(codekeys.CodeKeyIncomplete, match=r"attnlab\.after"):
        codekeys.run_checked(main.compute_and_judge, ["attnlab.main"], "demo")
    # a hand-written list that misses a module fails the same way
    with pytest.raises(codekeys.CodeKeyIncomplete, match=r"attnlab\.(used|lazy)"):
        codekeys.run_checked(main.compute, ["attnlab.unrelated", "attnlab.typed"], "demo")


def test_the_real_keys_cover_the_computations_and_leave_the_verdicts_out():
    def names(module):
        return codekeys.closure([module])

    training = names("attnlab.training.trainer")
    assert {"attnlab.model", "attnlab.attention", "attnlab.training.optim"} <= training
    for paper in ("xsa", "qk_speed", "sd_routing", "synthesis", "contribution_weights"):
        keyed = names(f"attnlab.papers.{paper}.experiment")
        assert training <= keyed
        assert not {m for m in keyed if m.endswith((".claims", ".verdicts", ".plots", ".report"))}, paper
    assert {"attnlab.papers.qk_speed.sva", "attnlab.papers.qk_speed.text_tasks"} <= names(
        "attnlab.papers.qk_speed.experiment"
    )  # SVA's and SQuAD's models, missing from the hand-written lists before
    assert "attnlab.hf" in names("attnlab.papers.sd_routing.experiment")  # pretrained heads load through hf
    assert "attnlab.data.tokenizer" in names("attnlab.papers.xsa.experiment")  # zero-shot scoring's tokenizer


def test_a_result_carries_its_key_and_another_results_file_is_not_taken(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path))
    code = ("attnlab.errors",)
    first, _ = cache.cached_result("k", {"a": 1}, lambda: {"v": torch.tensor(1.0)}, code=code)
    source = cache.result_path("k", {"a": 1}, code=code)
    target = cache.result_path("k", {"a": 2}, code=code)
    target.parent.mkdir(parents=True, exist_ok=True)
    verified.write_bytes(target, source.read_bytes())  # copied in, with a valid checksum
    second, loaded = cache.cached_result("k", {"a": 2}, lambda: {"v": torch.tensor(2.0)}, code=code)
    assert not loaded and second["v"].item() == 2.0
    assert "its key differs" in capsys.readouterr().out


def test_a_computation_outside_attnlab_must_name_its_modules():
    with pytest.raises(ValueError, match="code="):
        cache.cached_result("k", {}, lambda: {})
