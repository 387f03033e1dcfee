"""The runner rejects bad parameters before any compute, with a clear message."""

import json
import os

import pytest

from attnlab.errors import ParameterError
from attnlab.papers import xsa
from attnlab.papers.experiment import with_steps
from attnlab.runner import run
from attnlab.runner.params import check_count, check_number, check_numbers, parse_assignment
from attnlab.training.launch import NPROC_ENV, config_from
from attnlab.training.trainer import TrainConfig


@pytest.fixture
def no_execution(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("a notebook was executed despite bad parameters")

    monkeypatch.setattr(run, "execute", fail)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scale", "cpu", "--notebooks", "xsa", "-p", "sedes=[1]"], "unknown parameter(s) ['sedes']"),
        (["--scale", "cpu", "--notebooks", "xsa", "-p", "seeds=[-1]"], "seeds must be a list"),
        (["--scale", "cpu", "--notebooks", "xsa", "-p", "seeds=[1, 1]"], "seeds must be distinct"),
        (["--scale", "cpu", "--notebooks", "xsa", "-p", "seeds=3"], "got the integer 3: write [3]"),
        (["--scale", "cpu", "--notebooks", "xsa", "-p", "seeds=[0]", "--params", "seeds=[1]"], "given twice"),
        (["--scale", "cpu", "--notebooks", "xsa", "-p", "sizes=['9L']"], "sizes: unknown ['9L']"),
        (["--scale", "cpu", "--notebooks", "xsa", "-p", "device=cuda:0"], "CUDA is not available"),
        (["--scale", "cpu", "--notebooks", "nope"], "unknown notebook 'nope'"),
        (["--notebooks", "contribution_weights", "-p", "text_sets=['wiki']"], "text_sets: unknown ['wiki']"),
        (["--notebooks", "contribution_weights", "-p", "tasks=['copa']"], "tasks: unknown ['copa']"),
        (["--notebooks", "contribution_weights", "-p", "seed=-1"], "seed must be a non-negative"),
        (["--notebooks", "contribution_weights", "-p", "model=3"], "model must be"),
        (["--scale", "cpu", "--notebooks", "xsa", "-p", "lr_grid={'9L': [1e-3]}"], "lr_grid must map"),
        (["--scale", "cpu", "--notebooks", "xsa", "-p", "lr_grid={'2L-64d': [2]}"], "lr_grid['2L-64d'] must"),
        (["--scale", "cpu", "--notebooks", "xsa", "-p", "steps=-1"], "steps must be a positive integer"),
        (["--scale", "cpu", "--notebooks", "qk_speed", "-p", "ratios=[0, 1]"], "ratios must be a list"),
        (["--scale", "cpu", "--notebooks", "qk_speed", "-p", "ratios=[2]"], "ratios: a sweep needs"),
        (["--scale", "cpu", "--notebooks", "qk_speed", "-p", "fast_ratio=0.5"], "fast_ratio must be"),
        (["--scale", "cpu", "--notebooks", "qk_speed", "-p", "epochs=1.5"], "epochs must be"),
        (["--scale", "cpu", "--notebooks", "sd_routing", "-p", "steps=-3"], "steps must be"),
        (["--scale", "cpu", "--notebooks", "sd_routing", "-p", "retrain_linear=[5]"], "retrain_linear must"),
        (["--notebooks", "contribution_weights", "-p", "fractions=[0.1]"], "fractions: a curve needs"),
        (["--notebooks", "contribution_weights", "-p", "fractions=[0, 0.1]"], "fractions must be a list"),
        (["--notebooks", "contribution_weights", "-p", "layers=-1"], "layers must be"),
        (["--notebooks", "contribution_weights", "-p", "windows=1"], "windows: the intervals"),
        (["--notebooks", "contribution_weights", "-p", "dtype=float16"], "dtype must be one of"),
        (["--scale", "cpu", "-p", "seeds"], "key=value"),
        (["--store", "-p", "seeds=[3]"], "--store runs the notebooks with their stored"),
    ],
)
def test_bad_parameters_fail_fast(argv, message, no_execution, capsys):
    assert run.main(argv) == 2
    assert message in capsys.readouterr().err


def test_bad_scale_is_rejected_by_the_cli(no_execution):
    with pytest.raises(SystemExit):
        run.main(["--scale", "huge"])


def test_notebook_defaults_resolve_to_auto(monkeypatch):
    monkeypatch.setenv("ATTNLAB_SCALE", "smoke")
    params = run.resolve_parameters("xsa", {})
    assert params == {
        "scale": "auto", "seeds": [], "device": "auto", "workers": 0, "sizes": [], "corpus": "",
        "lr_grid": {}, "steps": 0,
    }  # fmt: skip
    assert xsa.configure(**params).scale == "smoke"
    assert run.resolve_parameters("xsa", {"scale": "cpu"})["scale"] == "cpu"


def test_configure_validates_and_resolves_presets():
    exp = xsa.configure(scale="cpu")
    assert exp.seeds == xsa.PRESETS["cpu"].seeds
    assert exp.sizes == tuple(xsa.PRESETS["cpu"].sizes)
    assert xsa.configure(scale="cpu", seeds=[5], sizes=["2L-64d"]).sizes == ("2L-64d",)
    with pytest.raises(ParameterError, match="scale must be auto or one of"):
        xsa.configure(scale="tiny")


def test_xsa_research_parameters_reach_the_runs():
    assert xsa.configure(scale="cpu").preset == xsa.PRESETS["cpu"]  # the defaults: the preset's values
    exp = xsa.configure(scale="cpu", lr_grid={"8L-64d": [1e-3, 5e-4], "2L-64d": []}, steps=100)
    sizes = exp.preset.sizes
    assert sizes["8L-64d"].lrs == (5e-4, 1e-3)  # sorted
    assert sizes["2L-64d"].lrs == xsa.PRESETS["cpu"].sizes["2L-64d"].lrs  # []: the preset's grid
    train = exp.spec("2L-64d", "xsa", 0).train
    assert (train.steps, train.warmup_steps, train.eval_every) == (100, 10, 5)  # preset 500, 50, 25
    runs = exp.planned_runs()  # what make plan counts
    assert "8L-64d lr=0.0005 sa seed 0" in runs and "8L-64d lr=0.002 sa seed 0" not in runs
    assert runs["8L-64d xsa seed 0"].tokens == 100 * 16 * 128  # steps x batch x context


def test_research_parameter_checks():
    assert check_count("steps", 0) == 0 and check_count("steps", 7) == 7
    assert check_numbers("ratios", [5, 0.5], (1.0,)) == (0.5, 5.0)
    assert check_numbers("ratios", [], (1.0, 2.0)) == (1.0, 2.0)
    assert check_number("fast_ratio", 0, 20.0, low=1.0) == 20.0
    assert check_number("fast_ratio", 3, 20.0, low=1.0) == 3.0
    for bad in ([True], [float("nan")], [1, 1], ["1"], 1.0, [0], [1.0]):
        with pytest.raises(ParameterError, match="^lrs"):
            check_numbers("lrs", bad, (), high=1.0)
    for bad in (-1, 1.0, True, "3"):
        with pytest.raises(ParameterError, match="^steps"):
            check_count("steps", bad)
    for bad in (0.5, -2, "2", None):
        with pytest.raises(ParameterError, match="^fast_ratio"):
            check_number("fast_ratio", bad, 20.0, low=1.0)


def test_with_steps_keeps_the_warmup_share_and_the_number_of_evaluations():
    train = TrainConfig(steps=500, warmup_steps=50, eval_every=25)
    assert with_steps(train, 500) == train
    short = with_steps(train, 40)
    assert (short.steps, short.warmup_steps, short.eval_every) == (40, 4, 2)
    assert with_steps(train, 1).eval_every == 1


def test_parse_assignment_reads_literals_and_strings(tmp_path):
    assert parse_assignment("seeds=[0, 1]") == ("seeds", [0, 1])
    assert parse_assignment("device=cpu") == ("device", "cpu")
    assert parse_assignment("betas=(0.9, 0.95)") == ("betas", (0.9, 0.95))
    assert parse_assignment("flag=true") == ("flag", "true")  # the runner: Python literals only
    assert parse_assignment("flag=true", json_values=True) == ("flag", True)  # the trainer: JSON first
    assert parse_assignment("x=null", json_values=True) == ("x", None)
    assert parse_assignment("x=None", json_values=True) == ("x", None)
    for bad in ("seeds", "2x=1", "a.b=1"):
        with pytest.raises(ParameterError, match="key=value"):
            parse_assignment(bad)
    # the trainer's overrides: key=value items and JSON files of fields, in order
    (tmp_path / "train.json").write_text(json.dumps({"steps": 5, "lr": 0.1}))
    cfg = config_from(TrainConfig, {"steps": 2}, [str(tmp_path / "train.json"), "lr=0.5", "betas=[0.8, 0.9]"])
    assert (cfg.steps, cfg.lr, cfg.betas) == (5, 0.5, (0.8, 0.9))


def test_nproc_reaches_the_notebook_kernels_through_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))
    monkeypatch.setenv(NPROC_ENV, "1")  # restored after the test
    seen = []

    def execute(source, target, parameters, log_output):
        seen.append(os.environ[NPROC_ENV])
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"metadata": {}, "cells": []}))

    monkeypatch.setattr(run, "execute", execute)
    monkeypatch.setattr(run, "available_cores", lambda: 4)
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    assert run.main(["--scale", "cpu", "--notebooks", "xsa", "--nproc", "4", "--quiet"]) == 0
    assert seen == ["4"]
    assert run.main(["--scale", "cpu", "--notebooks", "xsa", "--nproc", "0"]) == 2
    assert run.main(["--scale", "cpu", "--notebooks", "xsa", "--nproc", "5"]) == 2  # more than the cores
    assert seen == ["4"]


def test_a_bogus_realisation_is_refused_before_any_folder_is_touched(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ATTNLAB_REALISATION", "bogus")
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))
    assert run.main(["--scale", "smoke", "--notebooks", "xsa"]) == 2
    assert "ATTNLAB_REALISATION='bogus'" in capsys.readouterr().err
    assert not (tmp_path / "build").exists()


def test_stored_notebooks_keep_outputs_but_not_timings_or_widgets(tmp_path):
    path = tmp_path / "nb.ipynb"
    bar = {"output_type": "display_data", "metadata": {},
           "data": {run.WIDGET_VIEW: {"model_id": "ab12"}, "text/plain": ["load:   0%|"]}}  # fmt: skip
    text = {"output_type": "stream", "name": "stdout", "text": ["loss 3.1\n"]}
    nb = {
        "metadata": {"papermill": {"duration": 3.2}, "widgets": {"state": {"ab12": {}}}, "kernelspec": {}},
        "cells": [
            {"cell_type": "code", "metadata": {"execution": {"t": 1}, "tags": ["x"]}, "outputs": [bar, text]},
            {"cell_type": "markdown", "metadata": {}, "source": ["# A"]},
        ],
    }
    path.write_text(json.dumps(nb))
    run.strip_noise(path)
    out = json.loads(path.read_text())
    assert out["metadata"] == {"kernelspec": {}}
    assert out["cells"][0] == {"cell_type": "code", "metadata": {"tags": ["x"]}, "outputs": [text]}
    assert out["cells"][1] == nb["cells"][1]


def notebook_writing_claims(source, target, parameters, log_output):
    """What a paper notebook does with its parameters, in brief: configure its experiment and write a claims
    table into the experiment's folder (the staging folder's, under the runner)."""
    import importlib

    from attnlab.papers import PAPERS
    from attnlab.runner.claims import Claim, write_claims
    from attnlab.runner.verdicts import HOLDS, Verdict

    exp = importlib.import_module(PAPERS[source.stem]).configure(**parameters)
    write_claims([Claim("Fig. 1", "c", "p", f"seeds {list(exp.seeds)}", Verdict(HOLDS))], exp.figures, "XSA")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"metadata": {"papermill": {}}, "cells": []}))


def test_own_parameters_write_to_their_own_folders(monkeypatch, tmp_path):
    figures, build = tmp_path / "figures", tmp_path / "build"
    monkeypatch.setenv("ATTNLAB_FIGURES", str(figures))
    monkeypatch.setenv("ATTNLAB_BUILD", str(build))
    monkeypatch.setattr(run, "execute", notebook_writing_claims)
    assert run.main(["--scale", "cpu", "--notebooks", "xsa", "--quiet"]) == 0
    default = "seeds [0, 1, 2, 3, 4]"
    assert default in (figures / "cpu" / "xsa" / "claims.md").read_text()
    assert run.main(["--scale", "cpu", "--notebooks", "xsa", "--quiet", "-p", "seeds=[0, 1]"]) == 0
    assert default in (figures / "cpu" / "xsa" / "claims.md").read_text()  # the default run stays
    name = xsa.configure(scale="cpu", seeds=[0, 1]).run_name
    assert name.startswith("xsa--seeds-0-1-") and len(name) == len("xsa--seeds-0-1-") + 8
    assert "seeds [0, 1]" in (figures / "cpu" / name / "claims.md").read_text()
    record = json.loads((figures / "cpu" / name / "params.json").read_text())
    assert record["default"] is False and record["changed"] == {
        "seeds": {"value": [0, 1], "default": [0, 1, 2, 3, 4]}
    }
    assert json.loads((figures / "cpu" / "xsa" / "params.json").read_text())["default"] is True
    kept = sorted(p.name for p in (figures / "cpu" / "notebooks").iterdir())
    assert kept == [f"{name}.ipynb", "xsa.ipynb"]  # executed notebooks kept beside the figures
    assert (
        "papermill" not in json.loads((figures / "cpu" / "notebooks" / "xsa.ipynb").read_text())["metadata"]
    )
    report = (figures / "cpu" / "REPORT.md").read_text()
    overview, others = report.split("# Runs with other parameters")
    assert f"`{name}`" not in overview and f"## {name}: XSA" in others  # listed, but not as the default
    assert "`seeds` = [0, 1] (default [0, 1, 2, 3, 4])" in others
    # the preset's seeds given explicitly: the default run again, no second folder
    assert run.main(["--scale", "cpu", "--notebooks", "xsa", "--quiet", "-p", "seeds=[0, 1, 2, 3, 4]"]) == 0
    assert run.main(["--scale", "cpu", "--notebooks", "xsa", "--quiet", "--params", "seeds=[] steps=0"]) == 0
    runs = sorted(p.name for p in (figures / "cpu").iterdir() if (p / "claims.csv").exists())
    assert runs == ["xsa", name]


def test_a_failing_cell_is_summarised(tmp_path):
    path = tmp_path / "nb.failed.ipynb"
    cells = [
        {"cell_type": "code", "source": ["ok = 1"], "outputs": []},
        {
            "cell_type": "code",
            "source": ["train()\n", "plot()"],
            "outputs": [
                {"output_type": "stream", "name": "stdout", "text": ["step 1\n", "step 2 loss nan\n"]},
                {
                    "output_type": "error",
                    "ename": "TrainingDiverged",
                    "evalue": "loss is nan",
                    "traceback": [],
                },
            ],
        },
    ]
    path.write_text(json.dumps({"metadata": {}, "cells": cells}))
    summary = run.failure_summary(path)
    assert summary.splitlines() == [
        "cell 1 (train()) failed",
        "step 1",
        "step 2 loss nan",
        "TrainingDiverged: loss is nan",
    ]


def test_smoke_claims_say_they_judge_nothing(tmp_path, capsys):
    from attnlab.runner.claims import SMOKE_NOTE, Claim, write_claims
    from attnlab.runner.verdicts import HOLDS, Verdict

    claim = Claim("Fig. 1", "a claim", "1", "2", Verdict(HOLDS))
    write_claims([claim], tmp_path / "smoke" / "xsa", "XSA")
    write_claims([claim], tmp_path / "cpu" / "xsa", "XSA")
    assert SMOKE_NOTE in (tmp_path / "smoke" / "xsa" / "claims.md").read_text()
    assert SMOKE_NOTE in capsys.readouterr().out
    assert SMOKE_NOTE not in (tmp_path / "cpu" / "xsa" / "claims.md").read_text()


def test_the_runner_says_what_a_notebook_computed_and_what_came_from_the_cache(monkeypatch, tmp_path, capsys):
    build = tmp_path / "build"
    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setenv("ATTNLAB_BUILD", str(build))
    computing = {"on": True}

    def execute(source, target, parameters, log_output):
        if computing["on"]:  # a first run: one trained run and two analysis results land in the cache
            (build / "runs" / "k1").mkdir(parents=True)
            (build / "runs" / "k1" / "result.pt").write_bytes(b"x")
            (build / "results" / "fig1").mkdir(parents=True)
            for key in ("a", "b"):
                (build / "results" / "fig1" / f"{key}.pt").write_bytes(b"x")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"metadata": {"papermill": {}}, "cells": []}))

    monkeypatch.setattr(run, "execute", execute)
    assert run.main(["--scale", "cpu", "--notebooks", "xsa", "--quiet"]) == 0
    assert "computed 1 training runs and 2 other results (now cached)" in capsys.readouterr().out
    computing["on"] = False
    assert run.main(["--scale", "cpu", "--notebooks", "xsa", "--quiet"]) == 0
    assert "every expensive result loaded from the cache" in capsys.readouterr().out
