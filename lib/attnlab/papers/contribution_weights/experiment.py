"""Contribution weights: a geometric analysis of self-attention (arXiv 2606.07604): the experiments of its
notebook (its scale presets are in ``presets``, its claims table in ``claims``).

The notebook ``notebooks/contribution_weights.ipynb`` calls ``configure`` with its parameters, then the
methods of the returned ``ContributionExperiment``. The pretrained model is SmolLM2-135M (the one Llama-family
model that ships offline, docs/papers/contribution-weights.md) unless the ``model`` parameter names another
Hugging Face causal LM (a hub name in the local cache or a folder); this project's own GPT, trained on
Shakespeare, is analysed beside it. Every result goes through ``attnlab.training.cache.cached_result``, keyed
by the model, the settings and the source of the modules that compute it: a re-run with unchanged parameters
recomputes nothing and does not even load the model.

Text sets: held-out Brown (for FineWeb-Edu), GSM8K's test problems with their worked answers (the paper's
own), held-out Shakespeare. Downstream tasks: the paper's three, MMLU, WinoGrande and BoolQ (``task_items``: a
fixed sample of each).

A text set or downstream task whose data cannot be had here (an artifact its registry no longer serves, with
no copy on disk: ``attnlab.errors.DataUnavailable``) is skipped: its part prints "<text set or task>:
skipped: <reason>", the result leaves it out (an empty table with the usual columns when nothing is left),
and the reason, the same on every machine, travels in the table's ``attrs["skipped"]`` (``{name: reason}``)
to the claims rows and the figures."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from attnlab.data.corpora import load_corpus
from attnlab.data.tasks import MultipleChoice, gsm8k_text, load_mmlu, load_task
from attnlab.errors import DataUnavailable, ParameterError
from attnlab.hf import (
    CAUSAL_LMS,
    PRETRAINED,
    TextModel,
    capture,
    check_model_name,
    describe,
    load_text_model,
    model_fingerprint,
)
from attnlab.metrics import contribution_weights
from attnlab.papers.contribution_weights.cost import measure as measure_cost
from attnlab.papers.contribution_weights.cost import model_shape, paired_times, terms_gb
from attnlab.papers.contribution_weights.faithfulness import (
    choice_accuracy,
    intervention_curves,
    layer_sets,
    window_areas,
    with_delta,
)
from attnlab.papers.contribution_weights.presets import (
    DOWNSTREAM,
    DOWNSTREAM_RANKINGS,
    DTYPES,
    PAPER,
    PINNED_LAYERS,
    PRESETS,
    RANKINGS,
    SAMPLE_SEED,
    SCALE_MODELS,
    TEXT_SETS,
    Preset,
)
from attnlab.papers.contribution_weights.sinks import analyse as sink_analyses
from attnlab.papers.experiment import PaperExperiment
from attnlab.runner.params import check_count, check_device, check_numbers, check_scale, check_subset
from attnlab.runner.plan import PlannedRun
from attnlab.runner.stats import estimate
from attnlab.training.cache import RunSpec, cached_result
from attnlab.training.launch import launch

# claims are judged after the computation: imported where used, outside the results' code keys
if TYPE_CHECKING:
    from attnlab.papers.contribution_weights.claims import Evidence
    from attnlab.runner.claims import Claim

#: The columns of ``faithfulness()`` and ``downstream()``, also when every text set or task was skipped.
CURVE_COLUMNS = ["window", "layers", "scope", "mode", "measure", "fraction", "nll", "clean_nll", "tokens",
                 "text", "ppl", "ppl0", "delta_ppl"]  # fmt: skip
DOWNSTREAM_COLUMNS = ["item", "measure", "mode", "fraction", "credit", "chance", "task"]
#: The frames of ``sinks()`` (``sinks.analyse``); beside them the pooled perplexities and the first token.
SINK_FRAMES = ("decomposition", "decomposition_bos", "cosines", "positions", "fits", "spread", "nll",
               "identity", "negative")  # fmt: skip


# --- the experiment ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContributionExperiment(PaperExperiment):
    paper = PAPER

    scale: str
    preset: Preset
    model: str
    device: str
    text_sets: tuple[str, ...]
    tasks: tuple[str, ...]
    seed: int
    scale_models: tuple[str, ...] = ()  # the scale section's pinned models (SCALE_MODELS); empty: ``scale``'s

    @functools.cached_property
    def lm(self) -> TextModel:
        """The pretrained model, loaded on first use (a fully cached re-run never loads it)."""
        dtype = getattr(torch, self.preset.dtype)
        return load_text_model(self.model, dtype=dtype, device=self.torch_device)

    @functools.cached_property
    def weights_fingerprint(self) -> str:
        """The analysed model's weights as the cache keys know them (:func:`attnlab.hf.model_fingerprint`:
        a folder's files by content, so replacing them computes afresh)."""
        return model_fingerprint(self.model)

    def _key(self, **extra) -> dict:
        return {"model": self.model, "weights": self.weights_fingerprint, "dtype": self.preset.dtype,
                "device": self.torch_device.type} | extra  # fmt: skip

    def check_data(self) -> None:
        """The analysed model can load here (a pinned model, a folder or a cached hub name): checked before
        any compute, so a bad ``model`` parameter fails at once and names itself."""
        check_model_name(self.model)

    def describe(self) -> str:
        p = self.preset
        return (
            f"scale {self.scale}: model {self.model}; {p.windows} windows of {p.window} tokens per text set "
            f"({', '.join(self.text_sets)}); interventions in {p.layers} evenly spaced layers one at a time "
            "and "
            f"together; fractions {list(p.fractions)}; downstream {list(self.tasks)} ("
            f"{'every' if p.task_sample is None else p.task_sample} items each but MMLU, "
            f"{'all' if p.mmlu_per_subject is None else p.mmlu_per_subject} MMLU questions per subject)"
        )

    @property
    def weights(self) -> str:
        """The exact weights analysed and, where it is not float32, the precision they ran in, for every
        claim row."""
        dtype = self.preset.dtype
        return describe(self.model) + ("" if dtype == "float32" else f", run in {dtype}")

    def layer_sets(self, n_layers: int, clip: bool = False) -> dict[str, tuple[int, ...]]:
        """The layer sets of the faithfulness curves for a model of ``n_layers`` layers. More layers asked for
        than the model has is refused (a :class:`ParameterError` before any compute, never a silent clip that
        the run folder and its text would misreport), unless ``clip`` (this project's small GPT: as many as
        the preset's, at most all of them)."""
        if self.preset.layers > n_layers and not clip:
            raise ParameterError(f"layers={self.preset.layers}: {self.model} has {n_layers} layers")
        return layer_sets(n_layers, min(self.preset.layers, n_layers))

    # text -------------------------------------------------------------------------------------------------

    @staticmethod
    def text(name: str) -> str:
        """The raw text of a text set: a corpus's held-out documents, or GSM8K's 1,319 test problems with
        their worked answers written out (``attnlab.data.tasks.gsm8k_text``)."""
        if name == "gsm8k":
            return gsm8k_text()
        return "\n\n".join(load_corpus(name)["validation"]["text"])

    def windows(self, lm: TextModel, name: str, length: int, count: int) -> torch.Tensor:
        """``count`` windows of ``length`` tokens (count, length), at seeded distinct offsets of the text."""
        return lm.text_windows(self.text(name), length, count, self.seed, f"text set {name!r}")

    # Fig. 1 -----------------------------------------------------------------------------------------------

    def fig1(self) -> dict:
        """Attention vs contribution-weight matrices of two heads drawn with ``seed`` from all (layer, head)
        pairs, on the first Brown window of ``fig1_tokens`` tokens."""
        p = self.preset

        def compute() -> dict:
            lm = self.lm
            ids = self.windows(lm, "brown", p.fig1_tokens, 1)
            _, records = capture(lm.model, ids.to(lm.device))
            rng = np.random.default_rng(self.seed)
            H = records[0]["pattern"].shape[1]
            picks = rng.choice(len(records) * H, size=2, replace=False)
            heads = []
            for flat in sorted(int(x) for x in picks):
                layer, head = divmod(flat, H)
                r = records[layer]
                c = contribution_weights(r["pattern"], r["values"])[0, head]
                heads.append({
                    "layer": layer, "head": head, "attention": r["pattern"][0, head].float().cpu(),
                    "contribution": c.cpu(),
                })  # fmt: skip
            return {"tokens": lm.token_strings(ids[0].tolist()), "heads": heads}

        result, _ = cached_result("cw_fig1", self._key(n=p.fig1_tokens, seed=self.seed), compute)
        return result

    # faithfulness -----------------------------------------------------------------------------------------

    def faithfulness(self) -> pd.DataFrame:
        """Per-window delta-PPL curves (comprehensiveness and sufficiency) of the measures on every text set,
        each layer set and scope (``faithfulness.intervention_curves`` and ``with_delta``): columns text,
        window, layers, scope, mode, measure, fraction, ppl, ppl0, delta_ppl, ... A text set whose data is
        unavailable here is skipped (module docstring): ``attrs["skipped"]`` maps it to the reason."""
        p = self.preset
        frames, skipped = [], {}
        for name in self.text_sets:
            key = self._key(
                text=name, window=p.window, windows=p.windows, fractions=p.fractions, scopes=p.scopes,
                layers=p.layers, rankings=RANKINGS, seed=self.seed,
            )  # fmt: skip

            def compute(name: str = name) -> dict:
                text = self.text(name)  # first: a text set whose data is unavailable loads no model
                lm = self.lm
                ids = lm.text_windows(text, p.window, p.windows, self.seed, f"text set {name!r}")
                frame = intervention_curves(
                    lm, ids, p.fractions, self.layer_sets(lm.n_layers), RANKINGS, p.scopes, p.batch_size, name
                )
                return frame.to_dict("list")

            try:
                result, _ = cached_result("cw_faithfulness", key, compute)
            except DataUnavailable as e:
                skipped[name] = _skip(f"text set {name}", e)
                continue
            frames.append(pd.DataFrame(result).assign(text=name))
        if not frames:
            print("faithfulness: every text set was skipped; no pretrained curves here")
        out = with_delta(pd.concat(frames, ignore_index=True)) if frames else _empty(CURVE_COLUMNS)
        out.attrs["skipped"] = skipped
        return out

    @staticmethod
    def areas(curves: pd.DataFrame, log: bool = False) -> pd.DataFrame:
        """Area under each window's curve (mean delta-PPL over the fractions; with ``log``, of
        sign x log(1 + |dPPL|)), averaged over windows with its 95% interval: one row per (text, layers,
        scope, mode, measure), columns mean, low, high, n."""
        per_window = window_areas(curves, log)
        rows = {}
        for key, values in per_window.groupby(
            level=["text", "layers", "scope", "mode", "measure"], sort=False
        ):
            est = estimate(values.to_list())
            rows[key] = {"mean": est.mean, "low": est.low, "high": est.high, "n": est.n}
        index = pd.MultiIndex.from_tuples(list(rows), names=["text", "layers", "scope", "mode", "measure"])
        return pd.DataFrame(list(rows.values()), index=index, columns=["mean", "low", "high", "n"])

    @classmethod
    def area_table(cls, curves: pd.DataFrame) -> pd.DataFrame:
        """``areas`` on both scales side by side: columns mean, low, high (delta-PPL), the same with " (log)"
        and n (windows)."""
        linear, log = cls.areas(curves), cls.areas(curves, log=True)
        return pd.concat(
            [linear.drop(columns="n"), log.drop(columns="n").add_suffix(" (log)"), linear["n"]], axis=1
        )

    # downstream -------------------------------------------------------------------------------------------

    def downstream(self) -> pd.DataFrame:
        """Zero-shot multiple choice on each task, clean and with the top (comprehensiveness) or bottom
        (sufficiency) ``task_fraction`` of the value terms zeroed per measure of ``task_measures`` in the
        evenly spaced layers together, ranked jointly across heads: one row per item and setting, columns
        task, item, measure, mode, fraction, credit, chance (``faithfulness.choice_accuracy``). A task whose
        data is unavailable here is skipped (module docstring): ``attrs["skipped"]`` maps it to the reason."""
        p = self.preset
        settings = [
            (m, mode, p.task_fraction)
            for mode, ms in DOWNSTREAM_RANKINGS.items()
            for m in ms
            if m in p.task_measures
        ]
        frames, skipped = [], {}
        for task in self.tasks:
            size = p.mmlu_per_subject if task == "mmlu" else p.task_sample  # MMLU's: questions per subject
            key = self._key(
                task=task, sample=size, fraction=p.task_fraction, layers=p.layers, measures=p.task_measures
            )

            def compute(task: str = task) -> dict:
                items = task_items(task, p.task_sample, p.mmlu_per_subject)  # first: see faithfulness
                lm = self.lm
                layers = list(self.layer_sets(lm.n_layers).values())[-1]  # the layers together
                frame = choice_accuracy(lm, items, settings, layers, "joint", desc=task)
                return frame.to_dict("list")

            try:
                result, _ = cached_result("cw_downstream", key, compute)
            except DataUnavailable as e:
                skipped[task] = _skip(f"downstream task {task}", e)
                continue
            frames.append(pd.DataFrame(result).assign(task=task))
        if skipped and not frames:
            print("downstream: every task was skipped; no downstream result here")
        out = pd.concat(frames, ignore_index=True) if frames else _empty(DOWNSTREAM_COLUMNS)
        out.attrs["skipped"] = skipped
        return out

    # sinks ------------------------------------------------------------------------------------------------

    def sinks(self) -> dict:
        """The sink analyses on the Brown windows (``sinks.analyse``): per layer, the contribution
        decomposition (sink vs tail), also with a BOS token prefixed to every window, the cosines between the
        sink's projected values and the others', the row sums of c against 1 and the layer's own output
        against its terms, and the negative c; per window and layer, the same mean cosine for the sink and
        for the control positions ``control_positions``; per head, the binned minimum and the quadratic fit
        of ||o|| against the sink rate (and a sample of points for the scatter); and the sink-norm removal
        (the sink's value terms zeroed in every layer): each window's NLL in both states, the pooled
        perplexity, and the head outputs' cone and norm spread per layer."""
        p = self.preset
        key = self._key(window=p.window, windows=p.windows, seed=self.seed, controls=self.control_positions)

        def compute() -> dict:
            lm = self.lm
            ids = self.windows(lm, "brown", p.window, p.windows)
            return sink_analyses(lm, ids, p.batch_size, self.control_positions, self.seed)

        result, _ = cached_result("cw_sinks", key, compute)
        return {name: pd.DataFrame(result[name]) for name in SINK_FRAMES} | {
            "ppl": result["ppl"],
            "first_token": result["first_token"],
        }

    @property
    def control_positions(self) -> tuple[int, int]:
        """The non-sink positions whose value cosines are the sink's control: 5 and the window's middle."""
        return (5, self.preset.window // 2)

    # this project's model ---------------------------------------------------------------------------------

    def own_model(self) -> tuple[TextModel, pd.DataFrame]:
        """Train (or load) this project's GPT and compute its faithfulness curves on held-out Shakespeare, in
        its own evenly spaced layers (as many as the preset's, at most all of them)."""
        own = self.preset.own
        spec = RunSpec(own.model, own.train, own.corpus)
        run = launch(spec, device=self.device, label=f"own GPT {own.model.n_layer}L-{own.model.d_model}d")
        lm = TextModel(run.model.eval(), None, "attnlab GPT")
        p = self.preset
        key = {"run": spec.key(self.torch_device), "windows": own.windows, "window": own.window,
               "fractions": p.fractions, "scopes": p.scopes, "layers": p.layers,
               "rankings": RANKINGS}  # fmt: skip

        def compute() -> dict:
            ids = self.windows(lm, own.corpus, own.window, own.windows)
            frame = intervention_curves(
                lm,
                ids,
                p.fractions,
                self.layer_sets(lm.n_layers, clip=True),
                RANKINGS,
                p.scopes,
                16,
                "own GPT",
            )
            return frame.to_dict("list")

        result, _ = cached_result("cw_own_faithfulness", key, compute)
        return lm, with_delta(pd.DataFrame(result).assign(text=own.corpus))

    # cost -------------------------------------------------------------------------------------------------

    def planned_runs(self) -> dict[str, PlannedRun]:
        """The notebook's one training run, this project's GPT, for :mod:`attnlab.runner.plan`."""
        own = self.preset.own
        return {"own GPT": PlannedRun.from_spec(RunSpec(own.model, own.train, own.corpus))}

    def cost(self) -> pd.DataFrame:
        """Time and peak memory of ``contribution_weights`` vs the naive form that materialises the
        (B, H, T, T, D) tensor of weighted terms (``cost.measure``: each in a fresh process), at the model's
        head count and width, batch 1: columns impl, T, seconds, peak_gb (memory above the inputs), terms_gb
        (the naive tensor's size). The naive one is skipped where its terms tensor exceeds
        ``bench_naive_max_gb``."""
        p = self.preset
        H, D = model_shape(self.model)
        key = {"H": H, "D": D, "T": p.bench_lengths, "max_gb": p.bench_naive_max_gb, "device": self.device}

        def compute() -> dict:
            lengths, max_gb = p.bench_lengths, p.bench_naive_max_gb
            return measure_cost(H, D, lengths, p.bench_repeats, max_gb, self.torch_device).to_dict("list")

        result, _ = cached_result("cw_cost", key, compute)
        return pd.DataFrame(result)

    def cost_pairs(self) -> pd.DataFrame:
        """Both forms of :meth:`cost` timed in one process, alternated, ``bench_pair_repeats`` times at each
        length of ``bench_lengths`` where the naive terms tensor fits ``bench_pair_max_gb``
        (``cost.paired_times``): columns T, repeat, first, contribution_weights, naive (seconds)."""
        p = self.preset
        H, D = model_shape(self.model)
        lengths = tuple(T for T in p.bench_lengths if terms_gb(H, T, D) <= p.bench_pair_max_gb)
        key = {"H": H, "D": D, "T": lengths, "repeats": p.bench_pair_repeats, "device": self.device}

        def compute() -> dict:
            return paired_times(H, D, lengths, p.bench_pair_repeats, self.torch_device).to_dict("list")

        result, _ = cached_result("cw_cost_pairs", key, compute)
        return pd.DataFrame(result)

    # claims -----------------------------------------------------------------------------------------------

    def claims(
        self,
        sinks: dict,
        curves: pd.DataFrame,
        downstream: pd.DataFrame,
        own_curves: pd.DataFrame,
        cost: pd.DataFrame | None = None,
        cost_pairs: pd.DataFrame | None = None,
    ) -> list[Claim]:
        """The claims table (:func:`attnlab.papers.contribution_weights.claims.claims`) of the results, passed
        by keyword and gathered by :meth:`evidence` (``cost`` and ``cost_pairs``: :meth:`cost` and
        :meth:`cost_pairs`; None: no cost rows). Its signature is part of the results cache's code key."""
        from attnlab.papers.contribution_weights import claims as paper_claims  # judged after computing

        return paper_claims.claims(self.evidence(sinks, curves, downstream, own_curves, cost, cost_pairs))

    def evidence(
        self,
        sinks: dict,
        curves: pd.DataFrame,
        downstream: pd.DataFrame,
        own_curves: pd.DataFrame | None = None,
        cost: pd.DataFrame | None = None,
        cost_pairs: pd.DataFrame | None = None,
    ) -> Evidence:
        """The results by name (``own_curves`` None: no own-GPT rows, as in the scale section; ``cost``,
        ``cost_pairs`` None: no cost rows) and the settings the claims rows name, as one
        :class:`~attnlab.papers.contribution_weights.claims.Evidence` (which checks that each table is the one
        its name says)."""
        from attnlab.papers.contribution_weights.claims import Evidence  # judged after computing

        p, own = self.preset, self.preset.own.model
        return Evidence(
            pretrained_curves=curves, downstream=downstream, sinks=sinks, own_curves=own_curves,
            weights=self.weights, pinned=self.model in PRETRAINED, own_model=f"{own.n_layer}L-{own.d_model}d",
            window=p.window, task_fraction=p.task_fraction, scopes=p.scopes, cost=cost, cost_pairs=cost_pairs,
        )  # fmt: skip


def task_items(task: str, sample: int | None, mmlu_per_subject: int | None = None) -> list[MultipleChoice]:
    """The items of a downstream task (:data:`DOWNSTREAM`): MMLU, ``mmlu_per_subject`` questions from each of
    its 57 subjects (``attnlab.data.tasks.load_mmlu``, a fixed sample), answered by letter; WinoGrande and
    BoolQ, a fixed sample of ``sample`` items (None, or at least the split's size: all of them) drawn without
    replacement with :data:`SAMPLE_SEED` and kept in file order: the same items on every run and machine."""
    if task not in DOWNSTREAM:
        raise ValueError(f"unknown downstream task {task!r}; known: {list(DOWNSTREAM)}")
    if task == "mmlu":
        return [q.multiple_choice() for q in load_mmlu(mmlu_per_subject)]
    items = load_task(task)
    if sample is None or sample >= len(items):
        return items
    if sample < 1:
        raise ValueError(f"sample must be a positive number of items or None, got {sample!r}")
    keep = np.sort(np.random.default_rng(SAMPLE_SEED).choice(len(items), size=sample, replace=False))
    return [items[int(k)] for k in keep]


def _skip(what: str, error: DataUnavailable) -> str:
    """Print that ``what`` is skipped, and why (no paths: the same line on every machine); return the why."""
    print(f"{what}: skipped: {error.reason}", flush=True)
    return error.reason


def _empty(columns: list[str]) -> pd.DataFrame:
    """A result table with no rows: every part of it was skipped."""
    return pd.DataFrame(columns=columns)


def configure(
    scale: str = "smoke",
    model: str = "",
    device: str = "auto",
    text_sets: list[str] | tuple[str, ...] = (),
    tasks: list[str] | tuple[str, ...] = (),
    seed: int = 0,
    fractions: list[float] | tuple[float, ...] = (),
    layers: int = 0,
    windows: int = 0,
    dtype: str = "",
    scale_models: list[str] | tuple[str, ...] = (),
) -> ContributionExperiment:
    """Validate the notebook's parameters and resolve them against the scale's preset. ``fractions``: the
    fractions of value terms zeroed per query on the faithfulness curves (at least two, each in (0, 1); the
    clean pass, fraction 0, is always there); ``layers``: how many evenly spaced layers are intervened on (at
    most the model's); ``windows``: text windows per text set (at least two); ``dtype``: the pretrained
    model's precision (:data:`DTYPES`); ``scale_models``: the pinned models of the scale section
    (``attnlab.papers.contribution_weights.scale``), smallest first; empty or 0: the preset's."""
    scale = check_scale(scale)
    preset = PRESETS[scale]
    if not isinstance(model, str):
        raise ParameterError(f"model must be a Hugging Face name, a folder or 'smollm2'; got {model!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ParameterError(f"seed must be a non-negative integer; got {seed!r}")
    chosen = check_numbers("fractions", fractions, (), high=1.0)
    if len(chosen) == 1:
        raise ParameterError(f"fractions: a curve needs at least two fractions; got {fractions!r}")
    if dtype and dtype not in DTYPES:
        raise ParameterError(f"dtype must be one of {list(DTYPES)} or empty (the preset's); got {dtype!r}")
    n_windows = check_count("windows", windows) or preset.windows
    if n_windows < 2:
        raise ParameterError(f"windows: the intervals are over windows, so at least two; got {windows!r}")
    chosen_models = check_subset("scale_models", scale_models, CAUSAL_LMS, SCALE_MODELS[scale])
    pinned_layers = PINNED_LAYERS.get(model or preset.model)
    if layers and pinned_layers is not None and layers > pinned_layers:
        raise ParameterError(f"layers={layers}: {model or preset.model} has {pinned_layers} layers")
    preset = replace(
        preset,
        fractions=(0.0, *chosen) if chosen else preset.fractions,
        layers=check_count("layers", layers) or preset.layers,
        windows=n_windows,
        dtype=dtype or preset.dtype,
    )
    return ContributionExperiment(
        scale=scale,
        preset=preset,
        model=model or preset.model,
        device=check_device(device),
        text_sets=check_subset("text_sets", text_sets, TEXT_SETS, preset.text_sets),
        tasks=check_subset("tasks", tasks, DOWNSTREAM, preset.tasks),
        seed=seed,
        scale_models=tuple(m for m in CAUSAL_LMS if m in chosen_models),  # smallest first
    )
