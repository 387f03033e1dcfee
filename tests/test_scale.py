"""The scale sections: contribution weights on every pinned model (papers.contribution_weights.scale) and
the shared scale figure (runner.scale_figure)."""

import math
from dataclasses import replace
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from attnlab.errors import ParameterError  # noqa: E402
from attnlab.papers import contribution_weights as cw  # noqa: E402
from attnlab.papers.contribution_weights import scale  # noqa: E402
from attnlab.runner.claims import Claim  # noqa: E402
from attnlab.runner.scale_figure import scale_figure  # noqa: E402
from attnlab.runner.verdicts import HOLDS, NOT_TESTABLE, Verdict, not_testable  # noqa: E402


def test_each_model_runs_the_reduced_protocol_and_the_base_model_no_task():
    exp = cw.configure(scale="cpu")
    s = scale.PRESETS["cpu"]
    assert s.models == ("smollm2", "gemma3-270m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    qwen = scale.experiment_for(exp, "qwen2.5-coder-1.5b", s)
    assert (qwen.model, qwen.tasks, qwen.text_sets) == (
        "qwen2.5-coder-1.5b",
        ("mmlu", "winogrande", "boolq"),
        ("brown",),
    )
    assert (qwen.preset.windows, qwen.preset.window, qwen.preset.fractions) == (16, 48, (0.0, 0.05, 0.2))
    assert qwen.preset.scopes == ("joint",) and qwen.preset.layers == 1
    assert qwen.preset.mmlu_per_subject == exp.preset.mmlu_per_subject == 9  # 513 questions
    assert qwen.seed == exp.seed and qwen.device == exp.device
    assert qwen.preset.dtype == "bfloat16" and exp.preset.dtype == "float32"  # the main sections: float32
    assert qwen.weights.endswith(", run in bfloat16") and "run in" not in exp.weights
    assert scale.experiment_for(exp, "smollm2", scale.PRESETS["smoke"]).preset.dtype == "float32"  # CI
    assert scale.experiment_for(exp, "gemma3-270m", s).tasks == ("winogrande", "boolq")  # at chance on MMLU
    assert "base" in scale.experiment_for(exp, "gemma3-270m", s).weights  # the rows say which weights
    assert exp.model == "smollm2" and exp.preset.windows == 32  # the main experiment is left as it was
    assert qwen.preset.task_measures == ("raw", "value_weighted", "contribution")  # what the claim compares
    assert "contribution_abs" in exp.preset.task_measures  # the main section also ranks by |c|


def test_the_downstream_runs_only_the_interventions_of_its_measures(monkeypatch, tmp_path):
    """Each measure of ``task_measures`` under each mode that ranks by it, nothing else, and the measures are
    in the result's key: the scale section's result is never the main section's."""
    from attnlab.papers.contribution_weights import experiment

    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path))
    seen = []

    def accuracy(lm, items, settings, layers, scope, desc):
        seen.append(list(settings))
        return pd.DataFrame(columns=["item", "measure", "mode", "fraction", "credit", "chance"])

    monkeypatch.setattr(experiment, "choice_accuracy", accuracy)
    monkeypatch.setattr(experiment, "task_items", lambda task, limit, per_subject: [])
    exp = cw.configure(scale="cpu", tasks=["winogrande"])
    measures = scale.PRESETS["cpu"].task_measures
    reduced = replace(exp, preset=replace(exp.preset, task_measures=measures))  # all else the same
    for e in (exp, reduced):
        e.__dict__["lm"] = SimpleNamespace(n_layers=4)  # the cached property: no model loaded
        e.downstream()
    main, small = ([(m, mode) for m, mode, _ in settings] for settings in seen)  # computed twice
    assert main == [
        ("raw", "comprehensiveness"), ("value_weighted", "comprehensiveness"),
        ("contribution", "comprehensiveness"), ("raw", "sufficiency"), ("value_weighted", "sufficiency"),
        ("contribution", "sufficiency"), ("contribution_abs", "sufficiency"),
    ]  # fmt: skip
    assert small == [s for s in main if s[0] != "contribution_abs"]


def test_the_main_protocol_can_run_in_bfloat16_and_says_so():
    exp = cw.configure(scale="cpu", model="gemma3-270m", dtype="bfloat16")
    assert exp.preset.dtype == "bfloat16" and exp.weights.endswith(", run in bfloat16")
    assert exp.changed == {"model": "gemma3-270m", "preset.dtype": "bfloat16"}  # its own figures folder
    assert cw.configure(scale="cpu", dtype="float32").is_default  # the preset's, given explicitly


def test_scale_models_chooses_the_scale_sections_models_in_size_order(monkeypatch):
    assert cw.configure(scale="cpu").scale_models == scale.PRESETS["cpu"].models  # the preset's four
    assert cw.configure(scale="cpu", scale_models=list(cw.SCALE_MODELS["cpu"])).is_default  # given explicitly
    exp = cw.configure(scale="cpu", model="gemma3-270m", scale_models=["qwen2.5-coder-1.5b", "gemma3-270m"])
    assert exp.scale_models == ("gemma3-270m", "qwen2.5-coder-1.5b")  # smallest first, as the figure reads
    assert "scale_models" in exp.changed
    for bad in (["gpt2"], "gemma3-270m", [3]):
        with pytest.raises(ParameterError, match="scale_models"):
            cw.configure(scale="cpu", scale_models=bad)
    measured = []

    class Fake:
        tasks, weights = (), "w"

        def __init__(self, name):
            self.name = name

        def sinks(self):
            measured.append(self.name)

        def faithfulness(self):
            pass

    monkeypatch.setattr(scale, "experiment_for", lambda exp, name, s: Fake(name))
    monkeypatch.setattr(scale, "parameters", lambda name: 1)
    assert list(scale.measure(exp, scale.PRESETS["cpu"])) == measured == ["gemma3-270m", "qwen2.5-coder-1.5b"]
    scale.measure(replace(exp, scale_models=()), scale.PRESETS["smoke"])
    assert measured[2:] == ["smollm2"]  # none chosen: the scale preset's own models


def test_parameters_are_counted_from_the_checkpoint_headers(tmp_path, monkeypatch):
    save_file({"a": torch.zeros(3, 4), "b": torch.zeros(5)}, str(tmp_path / "model-1.safetensors"))
    save_file({"c": torch.zeros(2, 2, 2)}, str(tmp_path / "model-2.safetensors"))
    monkeypatch.setattr(scale, "checkpoint", lambda name: tmp_path)
    monkeypatch.setattr(scale, "cached_result", lambda kind, key, compute: (compute(), False))
    assert scale.parameters("smollm2") == 12 + 5 + 8


def _rows(estimate: float) -> list[Claim]:
    holds = Verdict(HOLDS, "x", estimate=estimate, low=estimate - 0.1, high=estimate + 0.1, n=10, null=0.0)
    return [
        Claim("scale: Fig. 1", "the claim", "paper", "ours", holds),
        Claim("scale: sinks", "another", "paper", "ours", not_testable("at a floor", n=1, null=0.0)),
    ]


def test_the_scale_table_orders_models_by_size_and_the_figure_draws_every_claim():
    results = {"big": {"parameters": 1_500_000_000}, "small": {"parameters": 135_000_000}}
    table = scale.scale_table(results, {"big": _rows(0.5), "small": _rows(0.2)})
    assert list(table["claim"]) == ["Fig. 1: the claim"] * 2 + ["sinks: another"] * 2
    assert list(table["model"]) == ["small", "big", "small", "big"]
    assert list(table["estimate"][:2]) == [0.2, 0.5] and math.isnan(table["estimate"][2])
    [panel] = scale_figure(table, "test").axes  # one grid: a row per claim, a column per model by size
    assert [t.get_text() for t in panel.get_yticklabels()] == ["Fig. 1: the claim", "sinks: another"]
    assert [t.get_text() for t in panel.get_xticklabels()] == ["small\n135M", "big\n1.5B"]
    cells = {(round(t.xy[0]), t.xy[1]): t.get_text() for t in panel.texts}
    assert cells[0, 0].startswith("0.2 [0.1, 0.3]") and cells[1, 0].startswith("0.5 [0.4, 0.6]")
    assert cells[0, 1] == cells[1, 1] == "not testable"
    # a not-testable row with an estimate far off the others' (a saturated perplexity) says so, with it
    far = Verdict(NOT_TESTABLE, "saturated", estimate=21071.0, low=float("nan"), high=float("nan"), n=4)
    rows = {"big": _rows(0.5)[:1], "small": [replace(_rows(0.2)[0], verdict=far)]}
    panel = scale_figure(scale.scale_table(results, rows), "test").axes[0]
    assert "not testable (2.11e+04)" in [t.get_text() for t in panel.texts]
    with pytest.raises(ValueError, match="null"):
        scale_figure(table.drop(columns="null"), "test")


def test_the_scale_table_draws_a_prefixed_bos_and_a_fed_bos_in_one_panel():
    """Fig. 1 asked with a BOS first is one question whether the BOS was prefixed (SmolLM2, the Qwens) or is
    the model's own (Gemma): one claim in the scale view, every model a point; the first text token stays
    apart."""
    results = {"gemma": {"parameters": 270_000_000}, "smol": {"parameters": 135_000_000}}
    fig1 = _rows(0.2)[0]
    rows = {
        "gemma": [replace(fig1, claim="first token (BOS, as the model is fed)")],
        "smol": [replace(fig1, claim="first token (first text token)"),
                 replace(fig1, claim="first token (BOS prefixed)")],
    }  # fmt: skip
    table = scale.scale_table(results, rows)
    bos = table[table["claim"] == f"Fig. 1: first token {scale.BOS_PANEL}"]
    assert list(bos["model"]) == ["smol", "gemma"]
    assert list(table["claim"]).count("Fig. 1: first token (first text token)") == 1
