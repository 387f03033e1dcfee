"""Every paper's lens on every attention kind (docs/papers/synthesis.md): the experiments of the synthesis
notebook (presets in :mod:`attnlab.papers.synthesis.presets`, lenses in :mod:`.lenses`, claims in
:mod:`.claims`).

The notebook ``notebooks/synthesis.ipynb`` calls ``configure`` with its parameters, then the methods of the
returned ``SynthesisExperiment``; nothing here is specific to a notebook cell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pandas as pd
import torch

from attnlab.errors import ParameterError
from attnlab.model import GPT
from attnlab.papers.contribution_weights.faithfulness import curve_areas, with_delta
from attnlab.papers.experiment import PaperExperiment, with_steps
from attnlab.papers.sd_routing.experiment import INTERACTION_LR_SCALE
from attnlab.papers.synthesis.lenses import MEASURES, faithfulness_curves, lenses
from attnlab.papers.synthesis.presets import KINDS, PRESETS, Preset
from attnlab.runner.params import (
    check_count,
    check_device,
    check_numbers,
    check_scale,
    check_seeds,
    check_subset,
)
from attnlab.runner.plan import PlannedRun
from attnlab.runner.stats import mean_interval
from attnlab.training.cache import RunSpec, cached_result, check_corpus, corpus_parameter, corpus_tokens
from attnlab.training.launch import launch
from attnlab.training.trainer import TrainResult, validation_windows

# claims are judged after the computation: imported where used, outside the results' code keys
if TYPE_CHECKING:
    from attnlab.papers.synthesis import claims as synthesis_claims  # judged after computing
    from attnlab.runner.claims import Claim

PAPER = "synthesis"
SD_KINDS = ("sd", "sd-shared")

Runs = dict[tuple[str, int, float], TrainResult]  # (kind, seed, eta_QK / eta_OV) -> run
#: The source whose change invalidates a cached faithfulness result (the run's own key covers the model).


def ratio_scales(ratio: float) -> tuple[float, float]:
    """The learning-rate multipliers (QK, OV) of the ratio eta_QK / eta_OV = ``ratio`` with their geometric
    mean fixed at 1 (the base rate): (sqrt(r), 1 / sqrt(r)). A reviewer's correction: multiplying only the QK
    rate by r confounds the ratio with leaving the base rate, which was tuned for SA at ratio 1."""
    if not ratio > 0:
        raise ValueError(f"eta_QK / eta_OV must be > 0; got {ratio}")
    root = math.sqrt(ratio)
    return root, 1.0 / root


@dataclass(frozen=True)
class SynthesisExperiment(PaperExperiment):
    paper = PAPER

    scale: str
    preset: Preset
    seeds: tuple[int, ...]
    kinds: tuple[str, ...]
    device: str

    def attn(self, kind: str) -> str | tuple[str, ...]:
        """The model's ``attn`` field for ``kind``: "linear" is SA with ELU+1 in its first
        ``linear_layers`` layers."""
        if kind != "linear":
            return kind
        n, k = self.preset.model.n_layer, min(self.preset.linear_layers, self.preset.model.n_layer)
        return ("linear",) * k + ("sa",) * (n - k)

    def spec(self, kind: str, seed: int, ratio: float = 1.0) -> RunSpec:
        """The run of ``kind`` with ``seed``; ``ratio`` = eta_QK / eta_OV, the query and key projections'
        learning rate (S-D: and its interaction L) over the value and output projections'. Their geometric
        mean stays at the base rate, XSA's tuned rate (``ratio_scales``: QK x sqrt(r), OV / sqrt(r)), so the
        sweep does not also move the attention's overall rate away from the tuned one; the embeddings, MLPs,
        norms and head learn at the base rate. S-D's interaction learns at ``INTERACTION_LR_SCALE`` times the
        QK rate, as in the S-D notebook. At ratio 1 an SA, XSA or previous-value run is the XSA notebook's
        run of the same seed (one cached run)."""
        scale = {"interaction": INTERACTION_LR_SCALE} if kind in SD_KINDS else {}
        if ratio != 1.0:
            qk, ov = ratio_scales(ratio)
            scale = {"qk": qk, "ov": ov, **{g: s * qk for g, s in scale.items()}}
        model = replace(self.preset.model, attn=self.attn(kind))
        return RunSpec(model, replace(self.preset.train, seed=seed, lr_scale=scale), self.preset.corpus)

    def run_keys(self) -> list[tuple[str, int, float]]:
        """Every (kind, seed, ratio) trained: every kind at ratio 1, the ratio kinds at every ratio."""
        keys = [(kind, seed, 1.0) for kind in self.kinds for seed in self.seeds]
        keys += [
            (kind, seed, r) for r in self.preset.qk_ratios if r != 1.0
            for kind in self.preset.ratio_kinds if kind in self.kinds for seed in self.seeds
        ]  # fmt: skip
        return keys

    def check_data(self) -> None:
        """The corpus exists, with no more token ids than the models' vocabulary."""
        check_corpus(self.preset.corpus, self.preset.model.vocab_size)

    def planned_runs(self) -> dict[str, PlannedRun]:
        """Every training run of the notebook, for :mod:`attnlab.runner.plan`."""
        return {
            f"{kind} seed {seed} qk x{r:g}": PlannedRun.from_spec(self.spec(kind, seed, r))
            for kind, seed, r in self.run_keys()
        }

    # Training --------------------------------------------------------------------------------------------

    def train_all(self) -> Runs:
        """Train (or load from the results cache) every run of ``run_keys``."""
        self.check_data()
        return {
            (kind, seed, r): launch(
                self.spec(kind, seed, r), device=self.device, label=f"{kind} seed {seed} qk x{r:g}",
                micro_tokens=self.preset.micro_tokens,
            )
            for kind, seed, r in self.run_keys()
        }  # fmt: skip

    @staticmethod
    def results_cached(runs: Runs) -> str:
        n = sum(r.cached for r in runs.values())
        return f"{n} of {len(runs)} training runs were loaded from the results cache."

    @staticmethod
    def losses(runs: Runs) -> pd.DataFrame:
        """Validation loss of every run at its first evaluation (step 0, the initialisation) and its last:
        kind, seed, ratio, initial, final."""
        return pd.DataFrame([
            {"kind": kind, "seed": seed, "ratio": r, "initial": run.history["val_loss"][0],
             "final": run.history["val_loss"][-1]}
            for (kind, seed, r), run in runs.items()
        ])  # fmt: skip

    # Lenses -------------------------------------------------------------------------------------------------

    def windows(self) -> torch.Tensor:
        """The fixed validation sequences every lens reads, (N, T)."""
        tokens = corpus_tokens(self.preset.corpus)["validation"]
        return validation_windows(tokens, self.preset.diag_sequences, self.preset.train.seq_len)[:, :-1]

    def initial_model(self, kind: str, seed: int) -> GPT:
        """The run's own initialisation (the trainer seeds the model with the run's seed): the random-init
        baseline of the same shapes."""
        spec = self.spec(kind, seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(spec.train.seed)
            return GPT(spec.model).to(self.torch_device)

    def lens_table(self, runs: Runs) -> pd.DataFrame:
        """Every lens (``lenses.MEASURES``) of every trained model and, at ratio 1, of its initialisation: one
        row per (kind, seed, ratio, state, layer), state "trained" or "init"."""
        tokens = self.windows()
        frames = []
        for (kind, seed, r), run in runs.items():
            models = [("trained", run.model)]
            if r == 1.0:
                models.append(("init", self.initial_model(kind, seed)))
            for state, model in models:
                frame = lenses(model, tokens, self.preset.control_position)
                frames.append(frame.assign(kind=kind, seed=seed, ratio=r, state=state))
        return pd.concat(frames, ignore_index=True)

    @staticmethod
    def per_seed(lens: pd.DataFrame, layer: int | None = None) -> pd.DataFrame:
        """One value per (kind, seed, ratio, state) and measure: the mean over layers (layers without the
        measure, e.g. linear layers' forms, left out), or one ``layer``."""
        data = lens if layer is None else lens[lens["layer"] == layer]
        cols = [*MEASURES, "uniform", "control_value_cos"]
        return data.groupby(["kind", "seed", "ratio", "state"])[cols].mean().reset_index()

    def values(self, lens: pd.DataFrame, losses: pd.DataFrame) -> pd.DataFrame:
        """``per_seed`` (layer means) with each run's final validation loss as ``val_loss`` (NaN for the
        initialisations)."""
        final = losses.rename(columns={"final": "val_loss"})[["kind", "seed", "ratio", "val_loss"]]
        out = self.per_seed(lens).merge(final, on=["kind", "seed", "ratio"], how="left")
        out.loc[out["state"] == "init", "val_loss"] = float("nan")
        return out

    @staticmethod
    def summary(values: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
        """Mean and 95% interval over seeds of ``columns`` per (kind, ratio, state): long format, columns
        kind, ratio, state, measure, mean, low, high, n."""
        rows = []
        for (kind, r, state), g in values.groupby(["kind", "ratio", "state"], sort=False):
            for col in columns:
                xs = g[col].dropna()
                if len(xs):
                    est = mean_interval(xs.tolist())
                    rows.append({"kind": kind, "ratio": r, "state": state, "measure": col, "mean": est.mean,
                                 "low": est.low, "high": est.high, "n": est.n})  # fmt: skip
        return pd.DataFrame(rows)

    def overview(self, lens: pd.DataFrame, losses: pd.DataFrame) -> pd.DataFrame:
        """The overview matrix: every trained kind at ratio 1 (and SA's initialisation as "random init") by
        final validation loss and every measure (layer mean), mean and 95% interval over seeds."""
        values = self.values(lens, losses)
        values = values[values["ratio"] == 1.0]
        trained = values[values["state"] == "trained"]
        init = values[(values["state"] == "init") & (values["kind"] == "sa")].assign(kind="random init")
        table = self.summary(pd.concat([trained, init]), ["val_loss", *MEASURES])
        order = [k for k in self.kinds] + ["random init"]
        return table.assign(kind=pd.Categorical(table["kind"], order)).sort_values(["kind"], kind="stable")

    # Faithfulness -------------------------------------------------------------------------------------------

    def faithfulness(self, runs: Runs) -> pd.DataFrame:
        """The single-layer faithfulness protocol (``lenses.faithfulness_curves``) on every trained model at
        ratio 1, on the first ``faithfulness_windows`` validation windows, through the results cache: the
        per-window curves with ``with_delta``'s columns, plus kind and seed."""
        p = self.preset
        tokens = self.windows()[: p.faithfulness_windows]
        frames = []
        for (kind, seed, r), run in runs.items():
            if r != 1.0:
                continue
            key = {"run": self.spec(kind, seed).key(self.torch_device), "windows": len(tokens),
                   "fractions": p.faithfulness_fractions}  # fmt: skip

            def compute(model: GPT = run.model, seed: int = seed) -> dict:
                return faithfulness_curves(model, tokens, p.faithfulness_fractions, seed).to_dict("list")

            result, _ = cached_result("synthesis_faithfulness", key, compute)
            frames.append(pd.DataFrame(result).assign(kind=kind, seed=seed))
        return with_delta(pd.concat(frames, ignore_index=True))

    @staticmethod
    def faithfulness_areas(curves: pd.DataFrame) -> pd.DataFrame:
        """One value per (kind, seed, mode, measure): the area under sign(dPPL) log(1 + |dPPL|) over the
        fractions (``curve_areas``, the contribution-weights notebook's log area) of every window's curve,
        averaged over windows and layers. Comprehensiveness: higher ranks more faithfully; sufficiency: lower
        does."""
        areas = curve_areas(curves, log=True, by=["kind", "seed", "layers", "window"]).rename("area")
        per_seed = areas.groupby(level=["kind", "seed", "mode", "measure"], sort=False).mean()
        return per_seed.reset_index()

    # Claims -------------------------------------------------------------------------------------------------

    def claims(self, evidence: synthesis_claims.Evidence) -> list[Claim]:
        """The notebook's hypotheses, each judged against its control (:mod:`.claims`) from ``evidence``, the
        named bundle of ``lens_table``, ``losses`` and ``faithfulness_areas``, to which this adds the run's
        kinds and its QK/OV sweep."""
        from attnlab.papers.synthesis import claims as synthesis_claims  # judged after computing

        if not isinstance(evidence, synthesis_claims.Evidence):
            raise TypeError(f"claims() takes one synthesis Evidence bundle; got {type(evidence).__name__}")
        settings = replace(evidence, kinds=tuple(self.kinds), qk_ratios=tuple(self.preset.qk_ratios),
                           ratio_kinds=tuple(self.preset.ratio_kinds))  # fmt: skip
        return synthesis_claims.claims(settings)


def configure(
    scale: str = "auto",
    seeds: list[int] | tuple[int, ...] = (),
    device: str = "auto",
    kinds: list[str] | tuple[str, ...] = (),
    corpus: str = "",
    qk_ratios: list[float] | tuple[float, ...] = (),
    steps: int = 0,
) -> SynthesisExperiment:
    """Validate the notebook's parameters and resolve them against the scale's preset. ``kinds``: a subset of
    ``KINDS`` (empty: all; SA is always trained, the control of every claim). ``corpus``: a corpus name or a
    folder of token shards; empty: the preset's. ``qk_ratios``: the eta_QK / eta_OV ratios of the ratio
    question, each in (0, 100) (1 is the base runs; empty: the preset's). ``steps``: training steps, warmup
    and evaluations scaled in proportion; 0: the preset's."""
    scale = check_scale(scale)
    preset = PRESETS[scale]
    chosen = check_subset("kinds", kinds, KINDS)
    if "sa" not in chosen:
        raise ParameterError(f"kinds must include 'sa', the control of every claim; got {list(kinds)!r}")
    ratios = check_numbers("qk_ratios", qk_ratios, preset.qk_ratios, high=100.0)
    steps = check_count("steps", steps)
    preset = replace(
        preset,
        corpus=corpus_parameter(corpus, preset.corpus),
        qk_ratios=ratios,
        train=with_steps(preset.train, steps) if steps else preset.train,
    )
    return SynthesisExperiment(
        scale=scale,
        preset=preset,
        seeds=check_seeds(seeds, preset.seeds),
        kinds=tuple(k for k in KINDS if k in chosen),
        device=check_device(device),
    )
