"""Project-level checks: the conda environment mirrors pyproject, every notebook has its own Colab badge, an
install cell for Colab and a documented parameters cell."""

import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from attnlab.papers import PAPERS

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
REPO_URL = PYPROJECT["project"]["urls"]["Repository"]  # the one place the repository URL is set
NOTEBOOK_PATHS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _names(requirements):
    return {
        Requirement(r).name.lower().replace("_", "-"): str(Requirement(r).specifier) for r in requirements
    }


def test_environment_yml_mirrors_pyproject():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["name"] == "attnlab"
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    assert "python=3.11" in conda and "pip" in conda
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip
    env_reqs = _names(r for r in pip if r != "-e .")
    project = PYPROJECT["project"]
    extras = project["optional-dependencies"]
    wanted = _names(
        project["dependencies"]
        + extras["dev"]
        + extras["hf"]
        + extras["notebooks"]
        + extras["corpora"]
        + extras["site"]
    )
    assert env_reqs.keys() == wanted.keys()
    for name, spec in wanted.items():
        if name != "torch":  # pinned to the CPU build there, a loose range in pyproject
            assert env_reqs[name] == spec, name
    assert env_reqs["torch"] == "==2.13.0"


def test_every_paper_notebook_exists():
    """One notebook per paper, and the examples (attnlab.tools.examples), nothing else."""
    from attnlab.tools.examples import EXAMPLES

    assert {p.stem for p in NOTEBOOK_PATHS} == set(PAPERS) | set(EXAMPLES)


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=lambda p: p.stem)
def test_colab_badge_points_at_its_own_notebook(path):
    nb = json.loads(path.read_text())
    first = "".join(nb["cells"][0]["source"])
    links = re.findall(r"\(https://colab\.research\.google\.com/github/([^)]+)\)", first)
    repo = REPO_URL.removeprefix("https://github.com/")
    assert links == [f"{repo}/blob/main/notebooks/{path.name}"]
    install = "".join(nb["cells"][1]["source"])
    assert "google.colab" in install and f"git+{REPO_URL}" in install


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=lambda p: p.stem)
def test_parameters_cell_is_typed_and_documented(path):
    import papermill

    declared = papermill.inspect_notebook(str(path))
    assert {"scale", "device"} <= declared.keys()
    assert "seeds" in declared or "seed" in declared
    for name, p in declared.items():
        assert p["inferred_type_name"] != "None", f"{name} has no type annotation"
        assert p["help"], f"{name} has no help comment"
    assert declared["scale"]["default"] == '"auto"'  # $ATTNLAB_SCALE (smoke for the stored outputs), else cpu


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=lambda p: p.stem)
def test_stored_notebook_carries_executed_outputs(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(c["execution_count"] for c in code[1:]), "run `make store-notebooks`"
    assert not any(o.get("output_type") == "error" for c in code for o in c["outputs"])


def test_no_core_module_imports_a_paper():
    """The core (attention, model, metrics, hf, errors, paths) and the training and data packages know no
    paper: they never import ``attnlab.papers`` (the runner and the tools find papers through its
    registry)."""
    import ast

    package = ROOT / "lib" / "attnlab"
    core = [package / f"{m}.py" for m in ("attention", "model", "metrics", "hf", "errors", "paths")]
    core += sorted((package / "training").glob("*.py")) + sorted((package / "data").glob("*.py"))
    offenders = []
    for path in core:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            offenders += [f"{path.name}: {n}" for n in names if n.startswith("attnlab.papers")]
    assert len(core) > 10 and not offenders, offenders


def test_readme_overview_matches_the_committed_cpu_claims(monkeypatch):
    """The README's verdict counts are regenerated from figures/cpu/*/claims.csv, never edited by hand: a
    stale block (claims re-run, README not) fails here."""
    from attnlab.runner import report

    monkeypatch.setenv("ATTNLAB_FIGURES", str(ROOT / "figures"))
    readme = (ROOT / "README.md").read_text()
    assert report.readme_block("cpu") in readme, "run: .venv/bin/python -m attnlab.runner.report --readme"
    for image in re.findall(r"\]\((figures/[^)]+\.png)\)", readme):
        assert (ROOT / image).is_file(), image


def test_lint_type_checks_the_whole_library():
    """`make lint` (part of `make test`) runs mypy, and mypy's configuration covers the package and checks the
    bodies of unannotated functions too: an annotation error anywhere in lib/attnlab fails the tests."""
    makefile = (ROOT / "Makefile").read_text()
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"^\t\$\(VENV\)/bin/mypy\b", lint, re.M)
    mypy = PYPROJECT["tool"]["mypy"]
    assert mypy["packages"] == ["attnlab"] and mypy["mypy_path"] == "lib"
    assert mypy["check_untyped_defs"] is True
    assert "test: $(STAMP) lint" in makefile
