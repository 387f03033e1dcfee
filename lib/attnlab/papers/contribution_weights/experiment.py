"""Contribution weights: a geometric analysis of self-attention (arXiv 2606.07604): scale presets and the
experiments of its notebook.

The notebook ``notebooks/contribution_weights.ipynb`` calls ``configure`` with its parameters, then the
methods of the returned ``ContributionExperiment``. The pretrained model is SmolLM2-135M (the one Llama-family
model that ships offline, papers/contribution-weights.md) unless the ``model`` parameter names another Hugging
Face causal LM (a hub name in the local cache or a folder); this project's own GPT, trained on Shakespeare, is
analysed beside it. Every result goes through ``attnlab.training.cache.cached_result``, keyed by the model,
the settings and the source of the modules that compute it: a re-run with unchanged parameters recomputes
nothing and does not even load the model."""

from __future__ import annotations

import functools
import json
import math
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from attnlab.data.corpora import load_corpus
from attnlab.data.tasks import answer_text, load_task
from attnlab.errors import ParameterError
from attnlab.hf import TextModel, capture, load_text_model, value_scale
from attnlab.metrics import IMPORTANCE_MEASURES, contribution_weights
from attnlab.model import GPTConfig
from attnlab.papers.contribution_weights.faithfulness import (
    MODES,
    SCOPES,
    choice_accuracy,
    curve_areas,
    hierarchy_holds,
    intervention_curves,
    token_nll,
)
from attnlab.papers.contribution_weights.sinks import (
    convex_fit,
    decomposition,
    output_spread,
    sink_rate_and_norm,
    sink_value_cosines,
)
from attnlab.papers.experiment import PaperExperiment
from attnlab.runner.claims import Claim, signed
from attnlab.runner.params import check_device, check_scale, check_subset
from attnlab.runner.plan import PlannedRun
from attnlab.training.cache import RunSpec, cached_result
from attnlab.training.launch import launch
from attnlab.training.trainer import TrainConfig

PAPER = "contribution_weights"
MEASURES = tuple(IMPORTANCE_MEASURES)  # least faithful first, the paper's hierarchy
MEASURE_LABELS = {
    "raw": "raw attention",
    "value_weighted": "value-weighted",
    "output_normalised": "value-weighted, output-normalised",
    "contribution": "contribution weights",
}
TEXT_SETS = {
    "brown": "Brown corpus, held-out split (stand-in for FineWeb-Edu)",
    "shakespeare": "Shakespeare, held-out split",
    "math": "MathQA word problems with answers, BIG-bench (stand-in for GSM8K)",
}
DOWNSTREAM = {"winowhy": "Winogrande", "strategyqa": "BoolQ"}  # our stand-in -> the paper's set

_CODE = (
    "hf.py",
    "metrics.py",
    "papers/contribution_weights/faithfulness.py",
    "papers/contribution_weights/sinks.py",
    "data/tasks.py",
    "papers/contribution_weights/experiment.py",
)
_MATH_ITEMS = 3000  # MathQA problems written out as the math text set


# --- presets ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OwnModel:
    """This project's GPT, trained on ``corpus`` and analysed beside the pretrained model."""

    model: GPTConfig
    train: TrainConfig
    windows: int  # held-out windows of ``model.block_size`` bytes for its faithfulness curves
    corpus: str = "shakespeare"


@dataclass(frozen=True)
class Preset:
    model: str  # "smollm2" (the offline artifact), a hub name in the local cache, or a folder
    dtype: str  # float32 | bfloat16
    window: int  # tokens per text window
    windows: int  # windows per text set
    batch_size: int
    fractions: tuple[float, ...]  # fractions of value terms zeroed per query
    scopes: tuple[
        str, ...
    ]  # ranking scopes of the faithfulness curves (attnlab.papers.contribution_weights.faithfulness.SCOPES)
    task_limit: int  # multiple-choice items per downstream task
    task_fraction: float  # the fraction zeroed for the downstream accuracies
    fig1_tokens: int  # length of the Fig. 1 passage
    own: OwnModel
    bench_lengths: tuple[int, ...]  # sequence lengths of the cost benchmark
    bench_naive_max_gb: float  # the naive implementation runs only where its terms tensor fits this
    bench_repeats: int


def _own(n_layer: int, d_model: int, steps: int, seq: int, windows: int) -> OwnModel:
    model = GPTConfig(
        n_layer=n_layer, d_model=d_model, n_head=4, head_dim=d_model // 4, block_size=seq, pos="rope"
    )
    train = TrainConfig(
        steps=steps, batch_size=32, seq_len=seq, lr=2e-3, warmup_steps=steps // 10, eval_every=steps // 5,
        eval_batches=4,
    )  # fmt: skip
    return OwnModel(model, train, windows)


FRACTIONS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)

PRESETS: dict[str, Preset] = {
    # About a minute on a CPU (most of it loading SmolLM2).
    "smoke": Preset(
        model="smollm2", dtype="float32", window=24, windows=2, batch_size=2, fractions=(0.0, 0.3, 0.6),
        scopes=SCOPES,
        task_limit=4, task_fraction=0.3, fig1_tokens=16, own=_own(2, 32, 40, 32, 2),
        bench_lengths=(32, 64), bench_naive_max_gb=0.5, bench_repeats=2,
    ),
    # A 2-core laptop, under 30 minutes.
    "cpu": Preset(
        model="smollm2", dtype="float32", window=128, windows=8, batch_size=8, fractions=FRACTIONS,
        scopes=SCOPES,
        task_limit=100, task_fraction=0.3, fig1_tokens=32, own=_own(4, 128, 600, 128, 32),
        bench_lengths=(512, 1024, 2048), bench_naive_max_gb=8.0, bench_repeats=3,
    ),
    # One GPU: longer windows, many more of them, the full downstream sets' first thousand items.
    "gpu": Preset(
        model="smollm2", dtype="bfloat16", window=512, windows=64, batch_size=16, fractions=FRACTIONS,
        scopes=SCOPES,
        task_limit=1000, task_fraction=0.3, fig1_tokens=32, own=_own(6, 384, 5000, 512, 256),
        bench_lengths=(512, 1024, 2048), bench_naive_max_gb=40.0, bench_repeats=10,
    ),
    # The paper's protocol on a 7-8B model (pass its name or folder as ``model``; it needs the weights).
    "paper": Preset(
        model="mistralai/Mistral-7B-v0.1", dtype="bfloat16", window=1024, windows=256, batch_size=4,
        fractions=FRACTIONS, scopes=SCOPES, task_limit=2000, task_fraction=0.3, fig1_tokens=32,
        own=_own(6, 384, 5000, 512, 256), bench_lengths=(512, 1024, 2048, 4096), bench_naive_max_gb=40.0,
        bench_repeats=10,
    ),
}  # fmt: skip


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

    @functools.cached_property
    def lm(self) -> TextModel:
        """The pretrained model, loaded on first use (a fully cached re-run never loads it)."""
        dtype = getattr(torch, self.preset.dtype)
        return load_text_model(self.model, dtype=dtype, device=self.torch_device)

    def _key(self, **extra) -> dict:
        return {"model": self.model, "dtype": self.preset.dtype, "device": self.torch_device.type} | extra

    def describe(self) -> str:
        p = self.preset
        return (
            f"scale {self.scale}: model {self.model}; {p.windows} windows of {p.window} tokens per text set "
            f"({', '.join(self.text_sets)}); fractions {list(p.fractions)}; downstream {list(self.tasks)} "
            f"({p.task_limit} items each)"
        )

    # text -------------------------------------------------------------------------------------------------

    @staticmethod
    def text(name: str) -> str:
        """The raw text of a text set: a corpus's held-out documents, or the MathQA problems written out."""
        if name == "math":
            return answer_text(load_task("math_qa", limit=_MATH_ITEMS))
        return "\n\n".join(load_corpus(name)["validation"]["text"])

    def windows(self, lm: TextModel, name: str, length: int, count: int) -> torch.Tensor:
        """``count`` windows of ``length`` tokens (count, length), at seeded distinct offsets of the text."""
        ids = lm.encode(self.text(name))
        slots = len(ids) // length
        if slots < count:
            raise ValueError(f"text set {name!r} has {slots} windows of {length} tokens, {count} asked")
        rng = np.random.default_rng(self.seed)
        starts = sorted(rng.choice(slots, size=count, replace=False) * length)
        return torch.tensor([ids[s : s + length] for s in starts], dtype=torch.long)

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

        result, _ = cached_result("cw_fig1", self._key(n=p.fig1_tokens, seed=self.seed), compute, code=_CODE)
        return result

    # faithfulness -----------------------------------------------------------------------------------------

    def faithfulness(self) -> pd.DataFrame:
        """Delta-PPL curves (comprehensiveness and sufficiency) of the four measures on every text set:
        columns text, measure, mode, fraction, ppl, delta_ppl."""
        p = self.preset
        frames = []
        for name in self.text_sets:
            key = self._key(
                text=name,
                window=p.window,
                windows=p.windows,
                fractions=p.fractions,
                scopes=p.scopes,
                seed=self.seed,
            )

            def compute(name: str = name) -> dict:
                ids = self.windows(self.lm, name, p.window, p.windows)
                frame = intervention_curves(
                    self.lm, ids, p.fractions, batch_size=p.batch_size, desc=name, scopes=p.scopes
                )
                return frame.to_dict("list")

            result, _ = cached_result("cw_faithfulness", key, compute, code=_CODE)
            frames.append(pd.DataFrame(result).assign(text=name))
        return pd.concat(frames, ignore_index=True)

    @staticmethod
    def areas(curves: pd.DataFrame, log: bool = False) -> pd.DataFrame:
        """Area under each curve (mean delta-PPL over the fractions; with ``log``, of sign x log(1 + |dPPL|)),
        one row per (text, scope, measure)."""
        parts = {
            key: curve_areas(sub, log).loc[list(MEASURES)]
            for key, sub in curves.groupby(["text", "scope"], sort=False)
        }
        return pd.concat(parts, names=["text", "scope", "measure"])

    # downstream -------------------------------------------------------------------------------------------

    def downstream(self) -> pd.DataFrame:
        """Zero-shot accuracy on each task, clean and with the top (comprehensiveness) or bottom
        (sufficiency) ``task_fraction`` of the value terms zeroed per measure: columns task, measure, mode,
        fraction, accuracy."""
        p = self.preset
        settings = [(m, mode, p.task_fraction) for m in MEASURES for mode in MODES]
        frames = []
        for task in self.tasks:
            key = self._key(task=task, limit=p.task_limit, fraction=p.task_fraction)

            def compute(task: str = task) -> dict:
                items = load_task(task, limit=p.task_limit)
                frame = choice_accuracy(self.lm, items, settings, batch_size=p.batch_size * 2, desc=task)
                return frame.to_dict("list")

            result, _ = cached_result("cw_downstream", key, compute, code=_CODE)
            frames.append(pd.DataFrame(result).assign(task=task))
        return pd.concat(frames, ignore_index=True)

    # sinks ------------------------------------------------------------------------------------------------

    def sinks(self) -> dict:
        """The sink analyses on the Brown windows: per layer, the contribution decomposition (sink vs tail)
        and the cosines between the sink's projected values and the others'; per head, the convex fit of
        ||o||^2 against the sink rate (and a sample of points for the scatter); and the sink-norm removal
        (the sink's value terms zeroed in every layer): perplexity and the head outputs' cone and norm spread,
        per layer, before and after."""
        p = self.preset
        key = self._key(window=p.window, windows=p.windows, seed=self.seed)

        def compute() -> dict:
            lm = self.lm
            ids = self.windows(lm, "brown", p.window, p.windows).to(lm.device)
            decomp, cosines, fits, scatter, spread = [], [], [], [], []
            nll_clean = nll_removed = 0.0
            rng = np.random.default_rng(self.seed)
            for start in range(0, len(ids), p.batch_size):
                batch = ids[start : start + p.batch_size]
                logits, records = capture(lm.model, batch)
                sink = value_scale(torch.arange(batch.shape[1], device=batch.device).eq(0).expand_as(batch))
                scales = dict.fromkeys(records, sink)
                logits_removed, records_removed = capture(lm.model, batch, scales=scales)
                nll_clean += token_nll(logits, batch).item()
                nll_removed += token_nll(logits_removed, batch).item()
                spread.append(output_spread(records).assign(batch=start, state="clean"))
                spread.append(
                    output_spread(records_removed, scales).assign(batch=start, state="sink removed")
                )
                for layer, r in records.items():
                    d = decomposition(r["pattern"], r["values"]).assign(layer=layer, batch=start)
                    decomp.append(d.rename_axis("group").reset_index())
                    cos = sink_value_cosines(r["values"])
                    cosines.append({
                        "layer": layer, "batch": start, "mean": cos.mean().item(),
                        "negative": (cos < 0).float().mean().item(), "n": cos.numel(),
                        "sample": cos[torch.from_numpy(rng.choice(cos.numel(), 200))].tolist(),
                    })  # fmt: skip
                    rate, norm = sink_rate_and_norm(r["pattern"], r["values"])
                    for h in range(rate.shape[0]):
                        scatter.append((layer, h, start, rate[h].cpu().numpy(), norm[h].cpu().numpy()))
                del records, records_removed
            for layer, h in sorted({(s[0], s[1]) for s in scatter}):
                rate = np.concatenate([s[3] for s in scatter if s[:2] == (layer, h)])
                norm = np.concatenate([s[4] for s in scatter if s[:2] == (layer, h)])
                sample = rng.choice(len(rate), size=min(len(rate), 300), replace=False)
                fits.append({
                    "layer": layer, "head": h, **convex_fit(rate, norm),
                    "mean_rate": float(rate.mean()), "rate_sample": rate[sample].tolist(),
                    "norm_sample": norm[sample].tolist(),
                })  # fmt: skip
            tokens = ids[:, 1:].numel()
            frame = pd.concat(decomp, ignore_index=True)
            return {
                "decomposition": frame.groupby(["layer", "group"]).mean(numeric_only=True)
                .drop(columns="batch").reset_index().to_dict("list"),
                "cosines": _pool_cosines(cosines),
                "fits": pd.DataFrame(fits).to_dict("list"),
                "spread": pd.concat(spread).groupby(["state", "layer"]).mean(numeric_only=True)
                .drop(columns="batch").reset_index().to_dict("list"),
                "ppl": {
                    "clean": math.exp(nll_clean / tokens), "sink removed": math.exp(nll_removed / tokens)
                },
            }  # fmt: skip

        result, _ = cached_result("cw_sinks", key, compute, code=_CODE)
        return {
            "decomposition": pd.DataFrame(result["decomposition"]),
            "cosines": pd.DataFrame(result["cosines"]),
            "fits": pd.DataFrame(result["fits"]),
            "spread": pd.DataFrame(result["spread"]),
            "ppl": result["ppl"],
        }

    # this project's model ---------------------------------------------------------------------------------

    def own_model(self) -> tuple[TextModel, pd.DataFrame]:
        """Train (or load) this project's GPT and compute its faithfulness curves on held-out Shakespeare."""
        own = self.preset.own
        spec = RunSpec(own.model, own.train, own.corpus)
        run = launch(spec, device=self.device, label=f"own GPT {own.model.n_layer}L-{own.model.d_model}d")
        lm = TextModel(run.model.eval(), None, "attnlab GPT")
        p = self.preset
        key = {"run": spec.key(self.torch_device), "windows": own.windows, "fractions": p.fractions,
               "scopes": p.scopes}  # fmt: skip

        def compute() -> dict:
            ids = self.windows(lm, own.corpus, own.model.block_size, own.windows)
            frame = intervention_curves(lm, ids, p.fractions, batch_size=16, desc="own GPT", scopes=p.scopes)
            return frame.to_dict("list")

        result, _ = cached_result("cw_own_faithfulness", key, compute, code=_CODE)
        return lm, pd.DataFrame(result).assign(text=own.corpus)

    # cost -------------------------------------------------------------------------------------------------

    def planned_runs(self) -> dict[str, PlannedRun]:
        """The notebook's one training run, this project's GPT, for :mod:`attnlab.runner.plan`."""
        own = self.preset.own
        return {"own GPT": PlannedRun.from_spec(RunSpec(own.model, own.train, own.corpus))}

    def cost(self) -> pd.DataFrame:
        """Time and peak memory of ``contribution_weights`` vs a naive implementation that materialises the
        (B, H, T, T, D) tensor of weighted terms, at the model's head count and width, batch 1: columns
        impl, T, seconds, peak_gb (memory above the inputs), terms_gb (the naive tensor's size). The naive
        one is skipped where its terms tensor exceeds ``bench_naive_max_gb``."""
        p = self.preset
        H, D = _model_shape(self.model)
        key = {"H": H, "D": D, "T": p.bench_lengths, "max_gb": p.bench_naive_max_gb, "device": self.device}

        def compute() -> dict:
            rows = []
            for T in p.bench_lengths:
                terms_gb = H * T * T * D * 4 / 1e9
                for impl in ("contribution_weights", "naive"):
                    if impl == "naive" and terms_gb > p.bench_naive_max_gb:
                        rows.append({"impl": impl, "T": T, "seconds": math.nan, "peak_gb": math.nan})
                    else:
                        rows.append(_measure_cost(impl, H, T, D, p.bench_repeats, self.torch_device))
                    rows[-1]["terms_gb"] = terms_gb
            return pd.DataFrame(rows).to_dict("list")

        result, _ = cached_result("cw_cost", key, compute, code=_CODE)
        return pd.DataFrame(result)

    # claims -----------------------------------------------------------------------------------------------

    def claims(
        self,
        sinks: dict,
        curves: pd.DataFrame,
        downstream: pd.DataFrame,
        own_curves: pd.DataFrame,
    ) -> list[Claim]:
        return [
            self._claim_fig1(sinks),
            *self._claims_faithfulness(curves, "pretrained"),
            self._claim_downstream(downstream),
            *self._claims_sinks(sinks),
            *self._claims_faithfulness(own_curves, "own GPT"),
        ]

    def _claim_fig1(self, sinks: dict) -> Claim:
        d = sinks["decomposition"]
        sink = d[d["group"] == "sink"]
        a, c = sink["mean_attention"].mean(), sink["mean_contribution"].mean()
        high = sink[sink["mean_attention"] > 0.3]
        verdict = "holds" if a > 0.3 and c < a / 2 else "does not hold"
        return Claim(
            "Fig. 1",
            "the first token gets a large attention mass but contributes little",
            "qualitative (two heads of a 7-8B model)",
            f"{self.model}, all heads, Brown text: first token's mean attention {a:.2f}, mean "
            f"contribution {c:.2f}; in the {len(high)} of {len(sink)} layers with mean attention > 0.3 its "
            f"contribution is {high['mean_contribution'].mean():.2f}",
            verdict + " (criterion: mean attention > 0.3 and contribution below half of it)",
        )

    def _claims_faithfulness(self, curves: pd.DataFrame, who: str) -> list[Claim]:
        areas, log_areas = self.areas(curves), self.areas(curves, log=True)
        claims = []
        for scope in dict.fromkeys(areas.index.get_level_values("scope")):
            claims += self._claims_faithfulness_scope(
                areas.xs(scope, level="scope"), log_areas.xs(scope, level="scope"), who, scope
            )
        return claims

    @staticmethod
    def _most_faithful(areas: pd.DataFrame) -> tuple[list[bool], list[bool]]:
        """Per text set: is contribution the most comprehensive, and the most sufficient?"""
        comp, suff = [], []
        for _, sub in areas.groupby(level="text", sort=False):
            comp.append(sub.droplevel("text")["comprehensiveness"].idxmax() == "contribution")
            suff.append(sub.droplevel("text")["sufficiency"].idxmin() == "contribution")
        return comp, suff

    def _claims_faithfulness_scope(
        self, areas: pd.DataFrame, log_areas: pd.DataFrame, who: str, scope: str
    ) -> list[Claim]:
        # Ranked per head, the two value-weighted baselines order every row alike: only three levels remain.
        order = MEASURES if scope == "joint" else ("raw", "value_weighted", "contribution")
        best_comp, best_suff = self._most_faithful(areas)
        log_comp, log_suff = self._most_faithful(log_areas)
        order_ok, orders = [], []
        for text, sub in areas.groupby(level="text", sort=False):
            sub = sub.droplevel("text")
            ok = hierarchy_holds(sub, order)
            order_ok.append(ok["comprehensiveness"] and ok["sufficiency"])
            comp = " < ".join(sub.loc[list(order), "comprehensiveness"].sort_values().index)
            suff = " > ".join(sub.loc[list(order), "sufficiency"].sort_values(ascending=False).index)
            orders.append(f"{text}: comp {comp}; suff {suff}")
        sets = len(best_comp)

        def verdict(flags: list[bool]) -> str:
            if all(flags):
                return "holds"
            return "does not hold" if not any(flags) else f"inconclusive: {sum(flags)} of {sets} text sets"

        model = self.model if who == "pretrained" else "this project's GPT (Shakespeare, byte-level)"
        where = "on GSM8K and FineWeb-Edu, four 7-8B models"
        ranking = {"head": "ranked per head", "joint": "ranked jointly across heads"}[scope]
        hierarchy = "raw < value-weighted < output-normalised < contribution"
        if scope == "head":
            hierarchy = "raw < value-weighted (= output-normalised per row) < contribution"
        return [
            Claim(
                "faithfulness",
                f"contribution weights are the most faithful measure ({who}, {ranking})",
                f"largest comprehensiveness and smallest sufficiency delta-PPL {where}",
                f"{model}: most comprehensive on {sum(best_comp)} of {sets} sets, most sufficient on "
                f"{sum(best_suff)} of {sets} (area of log(1 + delta PPL), which weighs the small fractions: "
                f"{sum(log_comp)} and {sum(log_suff)} of {sets})",
                verdict([c and s for c, s in zip(best_comp, best_suff, strict=True)]),
            ),
            Claim(
                "faithfulness",
                f"hierarchy {hierarchy} ({who}, {ranking})",
                f"strict ordering of the area under the delta-PPL curves {where}",
                f"{model}: " + "; ".join(orders),
                verdict(order_ok),
            ),
        ]

    def _claim_downstream(self, frame: pd.DataFrame) -> Claim:
        parts, flags, chance_only = [], [], True
        for task, sub in frame.groupby("task", sort=False):
            clean = sub.loc[sub["measure"] == "none", "accuracy"].iloc[0]
            n_choices = len(load_task(task, limit=1)[0].choices)
            items = self.preset.task_limit
            # more than two standard errors above chance, else the interventions cannot be judged
            above = clean > 1 / n_choices + 2 * math.sqrt((1 / n_choices) * (1 - 1 / n_choices) / items)
            chance_only &= not above
            comp = sub[sub["mode"] == "comprehensiveness"].set_index("measure")["accuracy"]
            suff = sub[sub["mode"] == "sufficiency"].set_index("measure")["accuracy"]
            flags.append(comp.idxmin() == "contribution" and suff.idxmax() == "contribution")
            parts.append(
                f"{task} (for {DOWNSTREAM[task]}): clean {clean:.2f}; "
                f"top {self.preset.task_fraction:g} zeroed "
                + ", ".join(f"{m} {comp[m]:.2f}" for m in MEASURES)
                + "; bottom zeroed "
                + ", ".join(f"{m} {suff[m]:.2f}" for m in MEASURES)
            )
        if chance_only:
            verdict = "not testable here: the clean model is at chance on every task"
        elif all(flags):
            verdict = "holds"
        else:
            verdict = "does not hold" if not any(flags) else "inconclusive: differs between tasks"
        return Claim(
            "downstream",
            "interventions guided by contribution weights hurt accuracy most (top zeroed) and least (bottom)",
            "MMLU, Winogrande, BoolQ with 7-8B models",
            "; ".join(parts),
            verdict,
        )

    def _claims_sinks(self, sinks: dict) -> list[Claim]:
        d = sinks["decomposition"].groupby("group").mean(numeric_only=True)
        s, t = d.loc["sink"], d.loc["tail"]
        sink_geo = s["corr_contribution_geometry"] > s["corr_contribution_attention"]
        tail_joint = t["corr_contribution_attention"] > 0.3 and t["corr_contribution_geometry"] > 0.3
        cos = sinks["cosines"]
        cos_mean = float((cos["mean"] * cos["n"]).sum() / cos["n"].sum())
        neg = float((cos["negative"] * cos["n"]).sum() / cos["n"].sum())
        fits = sinks["fits"]
        convex = fits["p2"] > 0
        inside = convex & (fits["vertex"] > 0) & (fits["vertex"] < 1)
        spread = sinks["spread"].groupby("state")[["cone", "norm_cv"]].mean()
        ppl = sinks["ppl"]
        cone_up = spread.loc["sink removed", "cone"] > spread.loc["clean", "cone"]
        ppl_up = ppl["sink removed"] > ppl["clean"]
        noise_up = spread.loc["sink removed", "norm_cv"] > spread.loc["clean", "norm_cv"]
        rises = {"cone": cone_up, "PPL": ppl_up, "noise": noise_up}
        if all(rises.values()):
            removal_verdict = "holds"
        elif not (cone_up or ppl_up):  # neither of the paper's two main effects
            removal_verdict = "does not hold"
        else:
            removal_verdict = "inconclusive: " + ", ".join(
                f"{what} {'rises' if up else 'does not rise'}" for what, up in rises.items()
            )
        return [
            Claim(
                "decomposition",
                "the sink's contribution is driven by value geometry, not attention; the tail's by attention "
                "and alignment jointly",
                "qualitative",
                f"correlation of c with attention / with norm ratio x cosine (mean over layers): sink "
                f"{signed(s['corr_contribution_attention'], 2)} / "
                f"{signed(s['corr_contribution_geometry'], 2)}; tail "
                f"{signed(t['corr_contribution_attention'], 2)} / "
                f"{signed(t['corr_contribution_geometry'], 2)}; mean "
                f"factors sink: a {s['mean_attention']:.2f}, norm ratio {s['mean_norm_ratio']:.2f}, cos "
                f"{signed(s['mean_cosine'], 2)}",
                ("holds" if sink_geo and tail_joint else "does not hold")
                + " (criterion: sink correlates more with geometry than attention; tail > 0.3 with both)",
            ),
            Claim(
                "sinks",
                "the sink's projected values are anti-aligned with the other tokens'",
                "negative cosine",
                f"cos(v~_sink, v~_j): mean {signed(cos_mean, 3)}, negative for {100 * neg:.0f}% of "
                "(head, token) pairs",
                "holds" if cos_mean < 0 and neg > 0.5 else "does not hold",
            ),
            Claim(
                "sinks",
                "output norm is a convex function of the sink rate with its minimum at a sink rate below 1",
                "convex; minimum inside (0, 1)",
                f"quadratic fit of ||o||^2 per head: convex for {int(convex.sum())} of {len(fits)} heads, "
                f"vertex inside (0, 1) for {int(inside.sum())} (median vertex of the convex ones "
                f"{fits.loc[convex, 'vertex'].median():.2f})",
                "holds" if inside.sum() > len(fits) / 2 else "does not hold",
            ),
            Claim(
                "sink-norm removal",
                "removing the sink's value norm collapses head outputs into a cone; PPL and noise rise",
                "outputs collapse into a 'semantic cone', PPL rises",
                f"PPL {ppl['clean']:.1f} -> {ppl['sink removed']:.1f}; cone (mean cos to the head's mean "
                f"direction) {spread.loc['clean', 'cone']:.2f} -> {spread.loc['sink removed', 'cone']:.2f}; "
                f"norm CV {spread.loc['clean', 'norm_cv']:.2f} -> "
                f"{spread.loc['sink removed', 'norm_cv']:.2f}",
                removal_verdict,
            ),
        ]  # fmt: skip


def _pool_cosines(rows: list[dict]) -> dict:
    """Per layer: the count-weighted mean cosine and negative fraction over batches, and the pooled sample."""
    out: dict[int, dict] = {}
    for r in rows:
        o = out.setdefault(r["layer"], {"layer": r["layer"], "sum": 0.0, "neg": 0.0, "n": 0, "sample": []})
        o["sum"] += r["mean"] * r["n"]
        o["neg"] += r["negative"] * r["n"]
        o["n"] += r["n"]
        o["sample"] += r["sample"]
    rows_out = [
        {"layer": o["layer"], "mean": o["sum"] / o["n"], "negative": o["neg"] / o["n"], "n": o["n"],
         "sample": o["sample"]}
        for o in out.values()
    ]  # fmt: skip
    return pd.DataFrame(rows_out).to_dict("list")


def _model_shape(name: str) -> tuple[int, int]:
    """(query heads, model width) of a model, from its config alone (SmolLM2: 9, 576)."""
    if name == "smollm2":
        return 9, 576
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(name)
    return cfg.num_attention_heads, cfg.hidden_size


_COST_SCRIPT = """
import json, sys, time, torch
from attnlab.metrics import contribution_weights
impl, H, T, D, repeats, device = sys.argv[1], *map(int, sys.argv[2:6]), sys.argv[6]
torch.manual_seed(0)
scores = torch.randn(1, H, T, T, device=device).masked_fill(~torch.ones(T, T, dtype=torch.bool,
    device=device).tril(), float("-inf"))
pattern, values = scores.softmax(-1), torch.randn(1, H, T, D, device=device)
del scores

def naive(pattern, values):
    terms = pattern[..., None] * values[:, :, None]  # (B, H, T, T, D): every weighted term a_ij v_j
    o = terms.sum(3)  # (B, H, T, D)
    return (terms * o[:, :, :, None]).sum(-1) / (o * o).sum(-1)[..., None]

fn = contribution_weights if impl == "contribution_weights" else naive
def hwm():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM"))
sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
if device == "cpu":
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak resident set size (VmHWM) to the current one
    before = hwm()
else:
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
fn(pattern, values); sync()
times = []
for _ in range(repeats):
    t = time.perf_counter(); fn(pattern, values); sync(); times.append(time.perf_counter() - t)
peak = hwm() if device == "cpu" else torch.cuda.max_memory_allocated()
print(json.dumps({"seconds": sorted(times)[len(times) // 2], "peak_gb": (peak - before) / 1e9}))
"""


def _measure_cost(impl: str, H: int, T: int, D: int, repeats: int, device: torch.device) -> dict:
    """One (impl, T) measurement in a fresh process, so that its peak memory is its own: median seconds of
    ``repeats`` calls after a warm-up, and the peak memory above the inputs (CPU: peak resident set size,
    reset after the inputs are made, Linux only; CUDA: peak allocated)."""
    dev = "cpu" if device.type == "cpu" else str(device)
    args = [impl, H, T, D, repeats, dev]
    out = subprocess.run(
        [sys.executable, "-c", _COST_SCRIPT, *map(str, args)], capture_output=True, text=True, check=True
    )
    return {"impl": impl, "T": T, **json.loads(out.stdout.strip().splitlines()[-1])}


def configure(
    scale: str = "smoke",
    model: str = "",
    device: str = "auto",
    text_sets: list[str] | tuple[str, ...] = (),
    tasks: list[str] | tuple[str, ...] = (),
    seed: int = 0,
) -> ContributionExperiment:
    """Validate the notebook's parameters and resolve them against the scale's preset."""
    scale = check_scale(scale)
    preset = PRESETS[scale]
    if not isinstance(model, str):
        raise ParameterError(f"model must be a Hugging Face name, a folder or 'smollm2'; got {model!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ParameterError(f"seed must be a non-negative integer; got {seed!r}")
    return ContributionExperiment(
        scale=scale,
        preset=preset,
        model=model or preset.model,
        device=check_device(device),
        text_sets=check_subset("text_sets", text_sets, TEXT_SETS),
        tasks=check_subset("tasks", tasks, DOWNSTREAM),
        seed=seed,
    )
