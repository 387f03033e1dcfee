"""Where a run writes, and which parameters reach a notebook (issue "Changing a parameter can overwrite the
committed results"): a changed parameter never writes the scale's folder, the defaults given explicitly never
write a second one, every documented parameter can be set, a list parameter refuses an int, and make's PARAMS
reach the notebook."""

import ast
import importlib
import inspect
import json
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from attnlab import paths
from attnlab.errors import ParameterError
from attnlab.papers import PAPERS
from attnlab.papers.experiment import PARAMS_FILE, RUN_SEPARATOR, slug
from attnlab.runner import manifest, report, run
from attnlab.runner.params import split_assignments
from attnlab.training.trainer import resolve_device

ROOT = Path(__file__).resolve().parents[1]

#: One value other than the smoke scale's default for every research parameter of every notebook (``scale``,
#: ``device`` and ``workers`` aside: ``test_every_parameter_has_a_changed_value`` keeps this complete).
CHANGES: dict[str, dict[str, object]] = {
    "xsa": {"seeds": [7], "sizes": ["2L-32d"], "corpus": "kjv", "lr_grid": {"2L-32d": [1e-3]}, "steps": 7},
    "qk_speed": {"seeds": [7], "ratios": [1, 3], "fast_ratio": 3.0, "epochs": 2, "sva_epochs": 3},
    "contribution_weights": {
        "model": "minilm",
        "text_sets": ["gsm8k"],
        "tasks": ["mmlu"],
        "seed": 1,
        "fractions": [0.15, 0.25],
        "layers": 1,
        "windows": 3,
        "dtype": "bfloat16",
        "scale_models": ["gemma3-270m"],
    },  # fmt: skip
    "sd_routing": {
        "seeds": [7],
        "sizes": ["2L-32d"],
        "models": ["smollm2"],
        "corpus": "kjv",
        "steps": 7,
        "retrain_linear": [2],
    },  # fmt: skip
    "synthesis": {"seeds": [7], "kinds": ["sa"], "corpus": "kjv", "qk_ratios": [1, 3], "steps": 7},
}
CHANGED = [(name, key) for name, values in CHANGES.items() for key in values]


def configure(name: str, **parameters):
    return importlib.import_module(PAPERS[name]).configure(**parameters)


def declared(name: str) -> dict:
    import papermill

    return papermill.inspect_notebook(str(ROOT / "notebooks" / f"{name}.ipynb"))


def parameters_cell(name: str) -> str:
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    return "".join(cell["source"])


def explicit_defaults(name: str, scale: str) -> dict[str, object]:
    """Every parameter of notebook ``name`` given as the value the ``scale`` preset resolves it to."""
    module = importlib.import_module(PAPERS[name])
    preset = module.PRESETS[scale]
    given: dict[str, object] = {"scale": scale, "device": resolve_device("auto").type}
    if name in ("xsa", "sd_routing"):
        given |= {"seeds": list(preset.seeds), "sizes": list(preset.sizes), "corpus": preset.corpus}
        steps = {s.train.steps for s in preset.sizes.values()}
        given |= {"steps": steps.pop()} if len(steps) == 1 else {}
    if name == "xsa":
        given["lr_grid"] = {size: list(s.lrs) for size, s in preset.sizes.items()}
    if name == "sd_routing":
        given |= {"models": list(preset.models), "retrain_linear": list(preset.retrain_linear)}
    if name == "qk_speed":
        c = preset.circuits
        given |= {"seeds": list(preset.seeds), "ratios": list(c.ratios), "fast_ratio": c.fast_fafo}
        given |= {"epochs": c.max_epochs, "sva_epochs": preset.sva.epochs, "workers": 1}
    if name == "contribution_weights":
        given |= {"model": preset.model, "text_sets": list(preset.text_sets), "tasks": list(preset.tasks)}
        given |= {"seed": 0, "fractions": list(preset.fractions[1:]), "layers": preset.layers}
        given |= {
            "windows": preset.windows,
            "dtype": preset.dtype,
            "scale_models": list(module.SCALE_MODELS[scale]),
        }
    if name == "synthesis":
        given |= {"seeds": list(preset.seeds), "kinds": list(module.KINDS), "corpus": preset.corpus}
        given |= {"qk_ratios": list(preset.qk_ratios), "steps": preset.train.steps}
    return given


@pytest.mark.parametrize("name", sorted(PAPERS))
def test_every_parameter_has_a_changed_value(name):
    assert set(CHANGES[name]) == set(declared(name)) - {"scale", "device", "workers"}


@pytest.mark.parametrize("name", sorted(PAPERS))
def test_every_documented_parameter_is_settable(name):
    """Each assignment of the parameters cell is a parameter papermill infers (so the runner accepts it), the
    paper's configure takes, and papermill's injected cell sets."""
    from papermill.translators import translate_parameters

    source = parameters_cell(name)
    assigned = [n.target.id for n in ast.parse(source).body if isinstance(n, ast.AnnAssign)]
    assert assigned == list(declared(name)), "papermill cannot parse a line of the parameters cell"
    configure_params = inspect.signature(importlib.import_module(PAPERS[name]).configure).parameters
    assert set(assigned) == set(configure_params)
    for value in declared(name).values():
        ast.literal_eval(value["default"])  # the runner reads the defaults so
    injected = translate_parameters("python3", "python", CHANGES[name], "Parameters")  # papermill's cell
    namespace: dict[str, object] = {}
    exec(source + "\n" + injected, namespace)
    assert {k: namespace[k] for k in CHANGES[name]} == CHANGES[name]


@pytest.mark.parametrize(("name", "key"), CHANGED, ids=[f"{n}-{k}" for n, k in CHANGED])
def test_a_changed_parameter_writes_its_own_folder(name, key, monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    exp = configure(name, scale="smoke", **{key: CHANGES[name][key]})
    assert not exp.is_default and exp.run_name.startswith(f"{name}--")
    assert re.fullmatch(rf"{name}--[A-Za-z0-9._-]+-[0-9a-f]{{8}}", exp.run_name)
    assert exp.figures == tmp_path / "smoke" / exp.run_name
    record = json.loads((exp.figures / PARAMS_FILE).read_text())
    assert record["default"] is False and record["changed"] and record["run"] == exp.run_name
    assert not (tmp_path / "smoke" / name).exists()  # the scale's folder is not touched


@pytest.mark.parametrize("scale", ["smoke", "cpu"])
@pytest.mark.parametrize("name", sorted(PAPERS))
def test_the_defaults_given_explicitly_write_the_scale_folder(name, scale, monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    empty = {"seeds": []} if "seeds" in declared(name) else {"text_sets": []}
    for given in ({"scale": scale}, {"scale": scale, **empty}, explicit_defaults(name, scale)):
        exp = configure(name, **given)
        assert exp.is_default and exp.run_name == name, (given, exp.changed)
        assert exp.figures == tmp_path / scale / name
    assert json.loads((tmp_path / scale / name / PARAMS_FILE).read_text())["default"] is True
    assert [p.name for p in (tmp_path / scale).iterdir()] == [name]


def test_run_names_are_stable_and_tell_runs_apart():
    names = {configure(n, scale="smoke", **{k: CHANGES[n][k]}).run_name for n, k in CHANGED}
    assert len(names) == len(CHANGED)
    assert (
        configure("xsa", scale="smoke", seeds=[7]).run_name
        == configure("xsa", scale="smoke", seeds=[7]).run_name
    )
    assert (
        configure("contribution_weights", scale="smoke", fractions=[0.25, 0.15]).run_name
        == configure("contribution_weights", scale="smoke", fractions=[0.15, 0.25]).run_name
    )  # the same resolved fractions, the same run
    code = "from attnlab.papers import xsa; print(xsa.configure(scale='smoke', seeds=[7]).run_name)"
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert fresh.stdout.strip() == configure("xsa", scale="smoke", seeds=[7]).run_name  # no per-process hash


def test_slugs_are_readable_and_bounded():
    steps = {"preset.sizes.2L.train.steps": 100, "preset.sizes.3L.train.steps": 100, "seeds": [0, 1]}
    assert slug(steps) == "steps-100--seeds-0-1"  # a pair repeated across sizes once
    assert slug({"preset.corpus": "/data/my shards"}) == "corpus-data-my-shards"
    long = slug({"lrs": [0.001 * i for i in range(1, 30)]})
    assert len(long) <= 48 and long.startswith("lrs-0.001-0.002")
    name = configure("qk_speed", scale="smoke", ratios=[1 + i / 7 for i in range(40)]).run_name
    assert len(name) <= len("qk_speed--") + 48 + 9


@pytest.mark.parametrize("name", sorted(PAPERS))
def test_list_parameters_refuse_an_int(name, capsys):
    """``seeds=3`` once ran seed 3 alone, for minutes; an int (or 0) for any list or dict parameter is now a
    ParameterError, and exit status 2 from the runner before anything runs."""
    lists = [k for k, v in declared(name).items() if v["inferred_type_name"].startswith(("list", "dict"))]
    assert lists
    for key in lists:
        for value in (3, 0):
            with pytest.raises(ParameterError, match=re.escape(key)):
                configure(name, scale="smoke", **{key: value})
        assert run.main(["--scale", "cpu", "--notebooks", name, "-p", f"{key}=3"]) == 2
        assert key in capsys.readouterr().err


def test_split_assignments_keeps_values_with_spaces():
    text = " seeds=[0, 1]  steps=100 lr_grid={'2L-64d': [1e-3, 2e-3]} corpus=a b"
    assert split_assignments(text) == [
        "seeds=[0, 1]",
        "steps=100",
        "lr_grid={'2L-64d': [1e-3, 2e-3]}",
        "corpus=a b",
    ]
    assert split_assignments("") == []


def test_make_params_reach_the_notebook(monkeypatch, tmp_path):
    """``make reproduce PARAMS='...'`` passes every assignment through the runner to papermill's parameters,
    quotes included."""
    params = "seeds=[0, 1] steps=100 sizes=['2L-64d']"
    make = [
        "make",
        "-n",
        "-o",
        ".venv/.installed",
        "reproduce",
        "SCALE=cpu",
        "NOTEBOOKS=xsa",
        f"PARAMS={params}",
    ]
    shown = subprocess.run(make, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    shown = shown.replace("\\\n", " ")  # the recipe's continued line
    command = shlex.split(next(line for line in shown.splitlines() if "attnlab.runner.run" in line))
    argv = command[command.index("attnlab.runner.run") + 1 :]
    assert argv[argv.index("--params") + 1] == params
    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))
    seen = []

    def execute(source, target, parameters, log_output):
        seen.append(parameters)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"metadata": {}, "cells": []}))

    monkeypatch.setattr(run, "execute", execute)
    assert run.main([*argv, "--quiet"]) == 0
    assert len(seen) == 1 and seen[0]["scale"] == "cpu"
    assert (seen[0]["seeds"], seen[0]["steps"], seen[0]["sizes"]) == ([0, 1], 100, ["2L-64d"])
    run_name = configure("xsa", **seen[0]).run_name
    assert (tmp_path / "build" / "notebooks" / "cpu" / f"{run_name}.ipynb").exists()


def test_make_passes_notebooks_with_spaces_and_a_dollar_in_params_as_given():
    make = ["make", "-n", "-o", ".venv/.installed", "reproduce", "SCALE=smoke", "NOTEBOOKS=xsa qk",
            "PARAMS=corpus=$HOME/shards"]  # fmt: skip
    shown = subprocess.run(make, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    line = next(line for line in shown.replace("\\\n", " ").splitlines() if "runner.run" in line)
    command = shlex.split(line)
    assert command[command.index("--notebooks") + 1] == "xsa qk"  # the runner names 'qk' as unknown
    assert command[command.index("--params") + 1] == "corpus=$HOME/shards"  # not make's $H


@pytest.mark.slow
def test_a_notebook_run_by_papermill_writes_the_experiments_folder(monkeypatch, tmp_path):
    """The folder is the experiment's decision, so a notebook run without the runner (papermill here,
    Jupyter alike) writes a changed run beside the scale's folder, and the defaults into it."""
    import nbformat
    import papermill

    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path / "figures"))
    cells = [
        nbformat.v4.new_code_cell(
            "seeds: list[int] = []  # training seeds", metadata={"tags": ["parameters"]}
        ),
        nbformat.v4.new_code_cell(
            textwrap.dedent("""
            from attnlab.papers import xsa
            print(xsa.configure(scale="smoke", seeds=seeds).figures)
        """)
        ),
    ]
    source = tmp_path / "nb.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), source)
    for seeds in ([5], [], list(configure("xsa", scale="smoke").seeds)):
        papermill.execute_notebook(
            str(source), str(tmp_path / "out.ipynb"), parameters={"seeds": seeds}, kernel_name="python3",
            language="python", progress_bar=False,
        )  # fmt: skip
    folders = sorted(p.name for p in (tmp_path / "figures" / "smoke").iterdir())
    assert folders == ["xsa", configure("xsa", scale="smoke", seeds=[5]).run_name]


def test_the_report_names_each_tables_run_and_the_readme_counts_the_defaults(monkeypatch, tmp_path):
    from attnlab.runner.claims import Claim, write_claims
    from attnlab.runner.verdicts import HOLDS, Verdict

    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    claim = [Claim("Fig. 1", "c", "p", "o", Verdict(HOLDS))]
    changed = configure("xsa", scale="cpu", seeds=[0, 1])
    for exp in (configure("xsa", scale="cpu"), changed):
        write_claims(claim, exp.figures, "XSA")
    write_claims(claim, paths.figures_dir() / "cpu" / "sd_routing", "S-D")  # written before params.json
    for published in (tmp_path / "cpu").iterdir():
        manifest.write(published)  # as publish does
    text = report.write_report("cpu").read_text()
    assert "Run `xsa`: the scale's default parameters ([params.json](xsa/params.json))" in text
    assert "Run `sd_routing`: the scale's default parameters (written before runs recorded them" in text
    defaults, others = text.split("# Runs with other parameters")
    assert changed.run_name not in defaults
    assert (
        f"Run `{changed.run_name}`, not the scale's defaults: `seeds` = [0, 1] (default [0, 1, 2, 3, 4])"
        in others
    )
    block = report.readme_block("cpu")
    assert "| xsa | 1 | 0 | 0 | 0 |" in block and changed.run_name not in block


def test_readme_commands_run_from_a_checkout():
    """A bare ``python -m attnlab...`` fails unless the reader guesses the environment: the README writes
    every command as it runs from a checkout (``.venv/bin/python``, ``.venv/bin/torchrun``) or by make."""
    readme = (ROOT / "README.md").read_text()
    assert not re.findall(r"(?<![\w/.])python3? -(?:m attnlab|c [\"'][^\"']*attnlab)", readme)
    assert not re.findall(r"(?m)^torchrun ", readme)


@pytest.mark.parametrize(("name", "key"), CHANGED, ids=[f"{n}-{k}" for n, k in CHANGED])
def test_a_run_folder_is_named_by_the_parameter_that_changed(name, key):
    """``-p fast_ratio=3`` names its folder ``...--fast_ratio-3.0-<hash>``, not by the setting it sets
    (``fast_fafo``); a parameter that sets several settings (``steps``) leads its name."""
    run = configure(name, scale="smoke", **{key: CHANGES[name][key]}).run_name
    assert run.split(RUN_SEPARATOR, 1)[1].startswith(f"{key}-"), run
