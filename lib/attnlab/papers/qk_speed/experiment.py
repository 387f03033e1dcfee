"""Faster query-key learning sharpens attention (arXiv 2608.06776): the experiments of its notebook (the scale
presets are in ``presets``, the claims table in ``claims``).

The notebook ``notebooks/qk_speed.ipynb`` calls ``configure`` with its parameters, then the methods of the
returned ``QKSpeedExperiment``. Every training run goes through ``attnlab.training.cache.cached_result``: a
re-run with the same settings, data and code loads the trained weights instead of training them. Settings are
those of ``docs/papers/qk-speed.md`` (read from the authors' notebooks); where a scale departs
from them (a larger learning rate with proportionally fewer SGD steps at ``cpu`` scale, fewer items) the
preset says so.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch

from attnlab.errors import ParameterError, TrainingDiverged
from attnlab.metrics import DTAP_EDGES, attention_confidence, attention_mass, dtap_histogram, faithfulness
from attnlab.model import GPT
from attnlab.papers.experiment import PaperExperiment
from attnlab.papers.qk_speed import authors
from attnlab.papers.qk_speed.batched import CircuitSpec, train_circuits
from attnlab.papers.qk_speed.circuits import (
    CircuitTrainResult,
    attention_shift,
    evaluate_circuit,
    make_circuit,
    train_fixed_attention,
)
from attnlab.papers.qk_speed.dynamics import (
    ReducedModel,
    Simulation,
    Trajectory,
    fit_growth_laws,
    regime_fit,
    simulate,
    simulate_adaptive,
    stopping_values,
)
from attnlab.papers.qk_speed.presets import (
    BASELINE,
    PRESETS,
    SVA_ITEMS,
    CircuitRun,
    Preset,
    fast_label,
    fig2_runs,
)
from attnlab.papers.qk_speed.sva import (
    AttentionOnlyClassifier,
    held_out_subset,
    load_agreement,
    train_agreement,
)
from attnlab.papers.qk_speed.synthetic import sample_batch, seeded_generator
from attnlab.papers.qk_speed.text_tasks import (
    DatasetUnavailable,
    QABatchData,
    classifier_outputs,
    classifier_prob_fn,
    encode_qa,
    load_hatexplain,
    load_squad,
    qa_outputs,
    train_qa,
)
from attnlab.runner.params import (
    check_count,
    check_device,
    check_number,
    check_numbers,
    check_scale,
    check_seeds,
)
from attnlab.runner.plan import PlannedRun
from attnlab.training.cache import cached_result, checkpoint_path, result_path
from attnlab.training.trainer import TrainConfig

# claims are judged after the computation: imported where used, outside the results' code keys
if TYPE_CHECKING:
    from attnlab.papers.qk_speed import claims as paper_claims  # judged after computing
    from attnlab.runner.claims import Claim

PAPER = "qk_speed"
#: The SVA training protocols: the authors' momentum SGD, and this project's Adam (``SVASetup.adam_lr``).
SVA_PROTOCOLS = ("authors", "adam")
SQUAD_PROTOCOLS = ("shared", "authors")  # faster QK at the baseline's other rates, or the authors' pairing
#: What keys every cached QK-speed result: the import closure of this module, which defines each computation
#: (``attnlab.codekeys``; the prefetch checks name it because they look a result up without its computation).
CODE = (__name__,)
#: A real-data run: its variant label ("baseline", "fast QK x<factor>") and faster QK's factor (None: the
#: baseline).
Variant = tuple[str, float | None]
_PROGRESS_STEPS = 500  # SQuAD runs at least this long show a progress bar
RATIO_INIT_LABELS = {"default": "QK at nn.Linear default", "identity": "QK at 1e-6 I"}


def _tensors(d: dict) -> dict:
    """Lists of floats as float64 tensors, for a weights_only-loadable cache entry."""
    return {k: torch.tensor(v, dtype=torch.float64) for k, v in d.items()}


def circuit_spec(config: dict) -> tuple[CircuitSpec, dict]:
    """A circuit run's cache config (``QKSpeedExperiment._circuit_config``) as ``train_circuits``' spec and
    its shared training settings."""
    spec = CircuitSpec(
        config["kind"],
        config["lr_qk"],
        config["lr_ov"],
        qk_ramp=tuple(config["qk_ramp"]),
        seq_len=config["seq_len"],
        seed=config["seed"],
        qk_init=config["qk_init"],
        collapsed_init=config["collapsed_init"],
    )
    settings = {k: config[k] for k in ("batch_size", "batches_per_epoch", "max_epochs", "loss_stop")}
    return spec, settings


def _circuit_result(r: CircuitTrainResult) -> dict:
    """A trained circuit as its cache entry."""
    return {
        "model": r.model.state_dict(),
        "history": _tensors(r.history),
        "steps": r.steps,
        "stopped_early": r.stopped_early,
    }


def _train_fixed(config: dict) -> dict:
    """Train one fixed-attention run (Fig. 3) from its cache config."""
    kw = {k: v for k, v in config.items() if k not in ("alpha", "other")}
    r = train_fixed_attention(config["alpha"], eval_alphas=(config["other"],), **kw)
    return {"loss": torch.tensor(r.loss), "other": torch.tensor(r.loss_at[config["other"]])}


def _store(kind: str, train, config: dict) -> None:
    """Worker of ``QKSpeedExperiment._prefetch``: compute one result into the results cache."""
    torch.set_num_threads(1)
    cached_result(kind, config, lambda: train(config), code=CODE)


@dataclass(frozen=True)
class QKSpeedExperiment(PaperExperiment):
    paper = PAPER

    scale: str
    preset: Preset
    seeds: tuple[int, ...]
    device: str
    workers: int = 1  # processes that train the fixed-attention runs (Fig. 3) in parallel
    cached: dict = field(default_factory=lambda: {"loaded": 0, "computed": 0}, compare=False)
    # result paths computed by _prefetch's workers or _train_circuits
    prefetched: set = field(default_factory=set, compare=False)
    # test scores of the SQuAD runs evaluated so far, by run config (the baseline serves both protocols)
    squad_scores: dict = field(default_factory=dict, compare=False)

    def _cached(self, kind: str, config: dict, compute, *, data: str = "", code=CODE) -> dict:
        """The result, counted as computed when this run computed it (here, or in ``_prefetch``'s workers)."""
        result, loaded = cached_result(kind, config, compute, data=data, code=code)
        fresh = not loaded or (
            bool(self.prefetched) and result_path(kind, config, data, code=code) in self.prefetched
        )
        self.cached["computed" if fresh else "loaded"] += 1
        return result

    def cache_summary(self) -> str:
        n, total = self.cached["loaded"], self.cached["loaded"] + self.cached["computed"]
        return f"{n} of {total} results were loaded from the results cache."

    # Fig. 2 and the ratio sweep ----------------------------------------------------------------------------

    def _circuit_config(self, run: CircuitRun, lr_qk: float, seed: int) -> dict:
        """A circuit run's cache config: ``run``'s parameterisation, initialisation, budget and early stop
        (the preset's row-1 settings where ``run`` leaves them open), QK learning rate ``lr_qk``."""
        c = self.preset.circuits
        return dict(
            kind=run.kind,
            lr_qk=lr_qk,
            lr_ov=c.lr,
            qk_ramp=list(run.qk_ramp),
            seq_len=run.seq_len,
            qk_init=run.qk_init,
            collapsed_init=run.collapsed_init,
            batch_size=32,
            batches_per_epoch=run.batches_per_epoch or c.batches_per_epoch,
            max_epochs=run.max_epochs or c.max_epochs,
            loss_stop=c.loss_stop if run.early_stop else None,
            seed=seed,
            device=self.torch_device.type,  # trained there (train_circuits): float rounding differs by device
        )

    def _prefetch(self, kind: str, train, configs: list[dict]) -> None:
        """Compute the results of ``configs`` (``train(config) -> result``, a module-level function) that are
        not cached yet in ``workers`` single-threaded processes, so that the calls that follow load them.
        With one worker, or one missing result, nothing happens here."""
        missing = [cfg for cfg in configs if not result_path(kind, cfg, code=CODE).exists()]
        workers = min(self.workers, len(missing)) if self.preset.parallel else 1
        if workers < 2:
            return
        context = multiprocessing.get_context("spawn")  # no fork of a process that holds OpenMP threads
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            list(pool.map(partial(_store, kind, train), missing))
        self.prefetched.update(result_path(kind, cfg, code=CODE) for cfg in missing)

    def _fig2_jobs(self) -> list[tuple[CircuitRun, int, dict]]:
        c = self.preset.circuits
        return [
            (run, seed, self._circuit_config(run, c.lr * run.qk_factor, seed))
            for run in fig2_runs(c)
            for seed in self.seeds
        ]

    def _ratio_jobs(self) -> list[tuple[str, float, int, dict]]:
        """(QK init, ratio, seed, config): FAFO at the row-1 budget for every ratio and QK initialisation."""
        c = self.preset.circuits
        return [
            (init, ratio, seed, self._circuit_config(run, c.lr * ratio, seed))
            for init in c.ratio_inits
            for run in [CircuitRun("FAFO", "fafo", seq_len=c.seq_len, qk_init=init)]
            for ratio in c.ratios
            for seed in self.seeds[: self.preset.ratio_seeds]
        ]

    def _fig3_jobs(self) -> list[dict]:
        f = self.preset.fixed
        jobs = []
        for protocol in f.protocols:
            for factorised in (True, False):
                for alpha in f.alphas:
                    other = alpha + f.step if alpha + f.step <= 1.0 else alpha - f.step
                    jobs.append(dict(
                        alpha=alpha, other=other, factorised=factorised, epochs=f.epochs, lr=f.lr,
                        batches_per_epoch=f.batches_per_epoch, eval_size=f.eval_size, seed=self.seeds[0],
                        protocol=protocol,
                    ))  # fmt: skip
        return jobs

    def circuit_steps(self) -> int:
        """SGD steps of the circuit and fixed-attention runs (Figs. 2-3, the ratio sweep), distinct runs once,
        every circuit run counted to ``max_epochs`` (an upper bound: they stop at ``loss_stop``), for
        :mod:`attnlab.runner.plan`. The fixed-attention runs train on the CPU, one core per run, ``workers``
        at a time; the circuit runs all at once (``train_circuits``), a circuit's step costing far less."""
        circuits = self.circuit_configs()
        steps = sum(cfg["max_epochs"] * cfg["batches_per_epoch"] for cfg in circuits)
        return steps + sum(cfg["epochs"] * cfg["batches_per_epoch"] for cfg in self._fig3_jobs())

    def circuit_stacks(self) -> list[tuple[int, int]]:
        """The batched program that trains the circuit runs (``_train_circuits``): (circuits, batched SGD
        steps at most) of each ``CircuitStack`` that ``train_circuits`` runs, one per set of shared training
        settings and sequence length, for :mod:`attnlab.runner.plan` (a stack's step trains all its
        circuits; stopped circuits leave it, so the steps are an upper bound)."""
        stacks: dict[tuple[str, int], list[int]] = {}
        for cfg in self.circuit_configs():
            spec, settings = circuit_spec(cfg)
            steps = settings["max_epochs"] * settings["batches_per_epoch"]
            stacks.setdefault((json.dumps(settings, sort_keys=True), spec.seq_len), [0, steps])[0] += 1
        return [(circuits, steps) for circuits, steps in stacks.values()]

    def circuit_configs(self) -> list[dict]:
        """The distinct circuit runs of Fig. 2 and the ratio sweep (their cache configs), in job order."""
        configs = {json.dumps(cfg, sort_keys=True): cfg for *_, cfg in self._fig2_jobs() + self._ratio_jobs()}
        return list(configs.values())

    def _train_circuits(self) -> None:
        """Train the circuit runs of Fig. 2 and the ratio sweep that are not cached yet, all at once on the
        experiment's device (``train_circuits``, one batch per set of shared training settings), and cache
        each result, so that the calls that follow load them."""
        missing: dict[str, list[tuple[dict, CircuitSpec]]] = {}
        for cfg in self.circuit_configs():
            if not result_path("circuit", cfg, code=CODE).exists():
                spec, settings = circuit_spec(cfg)
                missing.setdefault(json.dumps(settings, sort_keys=True), []).append((cfg, spec))
        for key, runs in missing.items():
            results = train_circuits([spec for _, spec in runs], device=self.torch_device, **json.loads(key))
            for (cfg, _), r in zip(runs, results, strict=True):
                cached_result("circuit", cfg, partial(_circuit_result, r), code=CODE)
                self.prefetched.add(result_path("circuit", cfg, code=CODE))

    def _train_one(self, config: dict) -> dict:
        """Train one circuit run (``train_circuits`` of one spec) into its cache entry."""
        spec, settings = circuit_spec(config)
        return _circuit_result(train_circuits([spec], device=self.torch_device, **settings)[0])

    def _circuit(self, config: dict) -> dict:
        """Load (or train) one circuit run and evaluate it on held-out sequences (stream 2 of its seed): the
        statistics of ``evaluate_circuit`` and ``moved``, the share of the attention that moved from the
        circuit's initialisation (``attention_shift``; the same circuit rebuilt as ``train_circuits`` builds
        it)."""
        result = self._cached("circuit", config, partial(self._train_one, config), code=CODE)
        model = make_circuit(config["kind"], seed=config["seed"])
        model.load_state_dict(result["model"])
        start = make_circuit(
            config["kind"],
            seed=config["seed"],
            qk_init=config["qk_init"],
            collapsed_init=config["collapsed_init"],
        )
        held_out = sample_batch(
            self.preset.circuits.eval_size, config["seq_len"], seeded_generator(config["seed"], 2)
        )
        stats = evaluate_circuit(model, held_out) | {"moved": attention_shift(model, start, held_out)}
        return {
            "stats": stats,
            "epochs": len(result["history"]["epoch"]),
            "steps": result["steps"],
            "final_loss": float(result["history"]["train_loss"][-1]),
        }

    def fig2(self) -> pd.DataFrame:
        """Train (or load) every Fig. 2 configuration for every seed; one row per (run, seed, test example):
        distinct-token attention mass, mass on the query token (the shortcut), the share of the attention that
        moved from the initialisation, true-label probability, correct."""
        jobs = self._fig2_jobs()
        self._train_circuits()
        frames = []
        for run, seed, cfg in jobs:
            out = self._circuit(cfg)
            s = out["stats"]
            frames.append(
                pd.DataFrame(
                    {
                        "run": run.label,
                        "seed": seed,
                        "mass": s["distinct_mass"],
                        "query_mass": s["query_mass"],
                        "moved": s["moved"],
                        "true_prob": s["true_prob"],
                        "correct": s["correct"],
                        "epochs": out["epochs"],
                        "final_loss": out["final_loss"],
                    }
                )
            )
        return pd.concat(frames, ignore_index=True)

    @staticmethod
    def dtap(frame: pd.DataFrame, key: str = "run") -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per run: the mean DTAP histogram over seeds (%, (5, 5), x = mass bin) and its std over seeds."""
        out = {}
        for run, sub in frame.groupby(key, sort=False):
            hists = np.stack([dtap_histogram(s["mass"], s["true_prob"]) for _, s in sub.groupby("seed")])
            out[run] = (hists.mean(0), hists.std(0))
        return out

    @staticmethod
    def summary(frame: pd.DataFrame, key: str = "run") -> pd.DataFrame:
        """Per run: mean attention mass on the relevant tokens, accuracy and true-label probability, and where
        the frame has them (Fig. 2) the mass on the query token and the share of the attention that moved from
        the initialisation (mean and std over seeds of the per-seed means)."""
        columns = {"mass": "mass", "accuracy": "correct", "true_prob": "true_prob"}
        columns |= {c: c for c in ("query_mass", "moved") if c in frame}
        per_seed = frame.groupby([key, "seed"], sort=False).agg(
            **{k: (v, "mean") for k, v in columns.items()}
        )
        out = per_seed.groupby(level=0, sort=False).agg(["mean", "std"])
        out.columns = [f"{a}_{b}" for a, b in out.columns]
        if key == "run":  # Fig. 2: what the authors' notebooks printed, beside ours (reference only)
            out["authors' notebook"] = pd.Series(authors.fig2_column(out.index))
        return out

    @classmethod
    def dtap_shares(cls, frame: pd.DataFrame) -> pd.DataFrame:
        """Fig. 2, ours beside the authors' saved heatmaps (``authors.DTAP_SHARES``, reference only): for each
        run they have an image of, the % of test sequences in each attention-mass bin within the top
        true-label-probability bin [0.8, 1] (the only row of their images that is not 0), ours the mean over
        seeds (``dtap``), one row per (run, source)."""
        ours = cls.dtap(frame)
        rows = []
        for run, shares in authors.DTAP_SHARES.items():
            if run not in ours:
                continue
            seeds = f"seed {shares.seeds[0]}" if len(shares.seeds) == 1 else f"{len(shares.seeds)} seeds"
            rows.append({"run": run, "source": f"authors' notebook ({seeds})", **_bins(shares.top_row)})
            rows.append({"run": run, "source": "ours", **_bins(ours[run][0][:, -1])})
        return pd.DataFrame(rows).set_index(["run", "source"])

    def ratio_sweep(self) -> pd.DataFrame:
        """FAFO at eta_QK / eta_OV = each ratio (eta_OV the shared LR), from each QK initialisation of the
        preset (``ratio_inits``): per (init, ratio, seed) the mean distinct-token attention mass, the mass on
        the query token, the share of the attention that moved from the initialisation (``moved``: near 0, the
        QK circuit did not leave its init) and the accuracy on held-out sequences."""
        jobs = self._ratio_jobs()
        self._train_circuits()
        rows = []
        for init, ratio, seed, cfg in jobs:
            out = self._circuit(cfg)
            s = out["stats"]
            rows.append(
                {
                    "init": RATIO_INIT_LABELS[init],
                    "ratio": ratio,
                    "seed": seed,
                    "mass": float(s["distinct_mass"].mean()),
                    "query_mass": float(s["query_mass"].mean()),
                    "moved": float(s["moved"].mean()),
                    "accuracy": float(s["correct"].mean()),
                    "true_prob": float(s["true_prob"].mean()),
                    "epochs": out["epochs"],
                }
            )
        return pd.DataFrame(rows)

    # Fig. 3 ------------------------------------------------------------------------------------------------

    def fig3(self) -> pd.DataFrame:
        """Held-out loss per epoch with attention fixed at each alpha, factorised and collapsed OV, under each
        protocol of the preset (``FixedSetup.protocols``), first seed; ``fd`` is the finite difference
        (L(alpha) - L(alpha + d)) / d of the same model (backward difference (L(alpha - d) - L(alpha)) / d at
        alpha = 1)."""
        f = self.preset.fixed
        jobs = self._fig3_jobs()
        self._prefetch("fixed_attention", _train_fixed, jobs)
        rows = []
        for config in jobs:
            res = self._cached("fixed_attention", config, partial(_train_fixed, config), code=CODE)
            loss, loss_other = res["loss"].numpy(), res["other"].numpy()
            alpha, other = config["alpha"], config["other"]
            fd = (loss - loss_other) / f.step if other > alpha else (loss_other - loss) / f.step
            for epoch, (lv, d) in enumerate(zip(loss, fd, strict=True)):
                rows.append(
                    {
                        "protocol": config["protocol"],
                        "ov": "factorised" if config["factorised"] else "collapsed",
                        "alpha": alpha,
                        "epoch": epoch,
                        "loss": float(lv),
                        "fd": float(d),
                    }
                )
        return pd.DataFrame(rows)

    # Fig. 4 ------------------------------------------------------------------------------------------------

    def fig4(self) -> dict[float, Simulation]:
        """The reduced dynamics for every r (cached: the trajectories and final values)."""
        d = self.preset.dynamics
        sims = {}
        for r in d.rs:
            config = dict(r=r, loss_stop=d.loss_stop, solver=d.solver)
            if d.solver == "rk4":
                config |= dict(dtau=d.dtau, record_every=d.record_every)

            def compute(r=r) -> dict:
                if d.solver == "rk4":  # the authors' fixed-step solve, for the exact comparison
                    s = simulate(r, loss_stop=d.loss_stop, dtau=d.dtau, record_every=d.record_every)
                else:
                    s = simulate_adaptive(r, loss_stop=d.loss_stop)
                traj = {k: torch.tensor(getattr(s.trajectory, k)) for k in Trajectory.__dataclass_fields__}
                final = {k: getattr(s, k) for k in ("mu_ov", "mu_qk", "alpha", "loss", "tau", "t")}
                return {"trajectory": traj, "final": final, "steps": s.steps, "reached": s.reached}

            res = self._cached("reduced_dynamics", config, compute)
            traj = Trajectory(**{k: v.numpy() for k, v in res["trajectory"].items()})
            sims[r] = Simulation(
                r=r,
                model=ReducedModel(eta_ov=1.0, eta_qk=r),
                **res["final"],
                steps=res["steps"],
                reached=res["reached"],
                loss_stop=d.loss_stop,
                dtau=d.dtau if d.solver == "rk4" else float("nan"),
                trajectory=traj,
            )
        return sims

    @staticmethod
    def final_values(sims: dict[float, Simulation]) -> pd.DataFrame:
        return pd.DataFrame([s.summary() for s in sims.values()]).set_index("r")

    @staticmethod
    def final_values_with_authors(sims: dict[float, Simulation]) -> pd.DataFrame:
        """``final_values`` with the authors' printed end state beside ours (``authors.FIG4_END_STATES``:
        their notebook's output, reference only)."""
        final = QKSpeedExperiment.final_values(sims)[["mu_ov", "mu_qk", "alpha", "loss", "tau"]]
        return final.assign(**{"authors' notebook": pd.Series(authors.fig4_column(final.index))})

    @staticmethod
    def stopping_curves(sims: dict[float, Simulation]) -> pd.DataFrame:
        """The authors' stopping-threshold curves for every r (``dynamics.stopping_values`` at their 50
        thresholds, ``authors.STOP_THRESHOLDS``), one row per (r, threshold)."""
        t = authors.STOP_THRESHOLDS
        thresholds = np.logspace(np.log10(t["high"]), np.log10(t["low"]), t["count"])
        frames = [stopping_values(s, thresholds).assign(r=r) for r, s in sims.items()]
        return pd.concat(frames, ignore_index=True)

    @staticmethod
    def growth_fits(sims: dict[float, Simulation], late: float = 0.5) -> pd.DataFrame:
        """``fit_growth_laws`` over the last half (in log t) of every run, one row per (r, law)."""
        frames = [fit_growth_laws(s, late=late).assign(r=r) for r, s in sims.items()]
        return pd.concat(frames, ignore_index=True)

    @staticmethod
    def supported_law(fits: pd.DataFrame) -> pd.DataFrame:
        """Per r: R^2 of mu_QK ~ log^2 t and of exp(mu_QK) ~ log^2 t, and which fits better."""
        wide = fits.pivot_table(index="r", columns="law", values="r2")
        out = pd.DataFrame(
            {
                "r2 mu_OV ~ log t": wide["mu_OV ~ log t"],
                "r2 mu_QK ~ log^2 t": wide["mu_QK ~ log^2 t"],
                "r2 exp(mu_QK) ~ log^2 t": wide["exp(mu_QK) ~ log^2 t"],
            }
        )
        out["better"] = np.where(
            out["r2 exp(mu_QK) ~ log^2 t"] > out["r2 mu_QK ~ log^2 t"],
            "exp(mu_QK) ~ log^2 t",
            "mu_QK ~ log^2 t",
        )
        return out

    @staticmethod
    def growth_regimes(sims: dict[float, Simulation]) -> pd.DataFrame:
        """Per r: the regime of the first integral at the end of the run, the two log^2 t fits where it holds
        (``dynamics.regime_fit``) and the verdict of ``claims.verdict_growth_regime``."""
        from attnlab.papers.qk_speed import claims as paper_claims  # judged after computing

        rows = []
        for r, sim in sims.items():
            fit = regime_fit(sim, dominance=paper_claims.DOMINANCE)
            verdict = paper_claims.verdict_growth_regime(
                str(fit["regime"]), float(fit["r2 mu_QK ~ log^2 t"]), float(fit["r2 exp(mu_QK) ~ log^2 t"])
            )
            rows.append({"r": r, **fit, "verdict": verdict.word})
        return pd.DataFrame(rows).set_index("r")

    # SVA ---------------------------------------------------------------------------------------------------

    @staticmethod
    def _lr_scale(qk_scale: float | None, groups: tuple[str, ...] = ("qk", "embed")) -> dict[str, float]:
        """Faster QK's learning-rate multipliers (``qk_scale``; None: the baseline, none): the authors' SVA
        notebooks scale the embeddings with W_Q and W_K, their SQuAD notebooks W_Q and W_K alone
        (``groups=("qk",)``)."""
        return {} if qk_scale is None else dict.fromkeys(groups, qk_scale)

    def sva_variants(self, protocol: str) -> list[Variant]:
        """The SVA runs of ``protocol``: the baseline and faster QK at the authors' x``qk_scale`` (their
        SGD), or at each factor of ``adam_qk_scales`` (Adam, whose step does not scale as SGD's)."""
        if protocol not in SVA_PROTOCOLS:
            raise ValueError(f"protocol must be one of {SVA_PROTOCOLS}, got {protocol!r}")
        p = self.preset.sva
        scales = (p.qk_scale,) if protocol == "authors" else p.adam_qk_scales
        return [(BASELINE, None), *((fast_label(f), f) for f in scales)]

    def sva_data(self):
        """The agreement sentences of every offline set (``sva.load_agreement``) and the test sentences the
        metrics use (``sva.held_out_subset``: ``test_limit`` of them, the same for every run)."""
        p = self.preset.sva
        data = load_agreement(train_fraction=p.train_fraction, limit=p.limit)
        return data, held_out_subset(data, p.test_limit)

    def sva(self, protocol: str = "authors") -> pd.DataFrame:
        """Subject-verb agreement as the authors set it up (``papers/qk_speed/sva.py``): the verb's number
        from the full sentence, an attention-only block, baseline vs faster QK, every SVA seed; trained with
        their momentum SGD (``protocol="authors"``) or with Adam at ``SVASetup.adam_lr`` (``"adam"``, this
        project's protocol, everything else theirs). One row per (variant, seed, test sentence;
        ``sva_variants``): the class probability of the true label, correctness, the label, the
        last token's attention mass on the subject head and the verb, comprehensiveness and sufficiency at the
        top ``topk`` of the tokens by that attention."""
        p = self.preset.sva
        if protocol not in self.sva_protocols():
            raise ValueError(f"protocol must be one of {self.sva_protocols()}, got {protocol!r}")
        data, test = self.sva_data()
        cfg = replace(
            p.model, vocab_size=len(data.vocab), block_size=max(p.model.block_size, data.tokens.shape[1])
        )
        dev = self.torch_device
        frames = []
        for variant, qk_scale in self.sva_variants(protocol):
            for seed in self.preset.sva_seeds:
                scale = self._lr_scale(qk_scale)
                settings: dict[str, Any] = dict(
                    epochs=p.epochs,
                    batch_size=p.batch_size,
                    lr=p.lr if protocol == "authors" else p.adam_lr,
                    momentum=p.momentum,
                    weight_decay=p.weight_decay,
                    warmup=p.warmup,
                    lr_scale=scale,
                    seed=seed,
                )
                if protocol == "adam":  # the authors' runs keep their cache keys
                    settings["optimizer"] = "adam"
                config = dict(model=cfg.to_dict(), **settings, device=dev.type)

                def compute(settings=settings, config=config) -> dict:
                    saved = checkpoint_path("sva_attention_only", config, data.fingerprint(), code=CODE)
                    return train_agreement(cfg, data, **settings, device=str(dev), checkpoint=saved)

                res = self._cached("sva_attention_only", config, compute, data=data.fingerprint())
                model = AttentionOnlyClassifier(cfg).to(dev)
                model.load_state_dict(res["model"])
                out = classifier_outputs(model, test)
                probs, attn = out["probs"], out["attn"]
                real = torch.arange(test.tokens.shape[1]) < test.lengths[:, None]  # ranked: every real token
                faith = faithfulness(classifier_prob_fn(model, test.lengths), test.tokens, attn, p.topk, real)
                frames.append(
                    pd.DataFrame(
                        {
                            "variant": variant,
                            "seed": seed,
                            "label": test.labels.numpy(),
                            "mass": attention_mass(attn, test.relevant).double().numpy(),
                            "true_prob": probs.gather(-1, test.labels[:, None]).squeeze(-1).double().numpy(),
                            "correct": (probs.argmax(-1) == test.labels).numpy(),
                            "comprehensiveness": faith["comprehensiveness"].double().numpy(),
                            "sufficiency": faith["sufficiency"].double().numpy(),
                            "final_train_loss": float(res["train_loss"][-1]),
                            "train_sentences": int(data.train.sum()),
                        }
                    )
                )
        return pd.concat(frames, ignore_index=True)

    def sva_protocols(self) -> list[str]:
        """The SVA protocols run: the authors' and, unless ``adam_lr`` is None, this project's."""
        return [p for p in SVA_PROTOCOLS if p == "authors" or self.preset.sva.adam_lr is not None]

    def sva_summary(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``real_summary`` of the SVA columns with the authors' printed numbers beside ours
        (``authors.sva_column``, reference only)."""
        out = self.real_summary(frame, ["correct", "mass", "true_prob", "comprehensiveness", "sufficiency"])
        return out.assign(**{"authors' notebook": pd.Series(authors.sva_column(out.index))})

    def squad_summary(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``real_summary`` of the SQuAD columns with the authors' printed final F1 and exact match beside
        ours (``authors.squad_column``, reference only: their data, tokenizer, model and rates differ)."""
        out = self.real_summary(frame, ["f1", "em", "true_prob", "mass"])
        return out.assign(**{"authors' notebook": pd.Series(authors.squad_column(out.index))})

    def real_summary(self, frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
        """Per variant: mean and std over seeds of the per-seed means of ``columns``, and of AC and ACMC (%,
        ``claims.acmc_by_seed``); flat
        columns ``<metric>_mean``, ``<metric>_std``."""
        from attnlab.papers.qk_speed import claims as paper_claims  # judged after computing

        per_seed = frame.groupby(["variant", "seed"], sort=False)[columns].mean()
        per_seed = per_seed.join(self.ac_by_seed(frame).set_index(["variant", "seed"]))
        per_seed = per_seed.join(paper_claims.acmc_by_seed(frame).set_index(["variant", "seed"]))
        out = per_seed.groupby(level=0, sort=False).agg(["mean", "std"])
        out.columns = [f"{a}_{b}" for a, b in out.columns]
        return out

    @staticmethod
    def ac_by_seed(frame: pd.DataFrame) -> pd.DataFrame:
        """AC (%) per (variant, seed): mass on the relevant tokens > 0.1 and true-answer probability > 0.1."""
        rows = [
            {"variant": v, "seed": s, "AC": attention_confidence(g["mass"], g["true_prob"])}
            for (v, s), g in frame.groupby(["variant", "seed"], sort=False)
        ]
        return pd.DataFrame(rows)

    def planned_runs(self) -> dict[str, PlannedRun]:
        """The GPT training runs of the notebook, for :mod:`attnlab.runner.plan`, at an upper bound of their
        tokens (every sequence as long as the context: batches are padded to their longest sequence). The
        circuit and fixed-attention runs are tiny models, counted apart (``circuit_stacks``,
        ``circuit_steps``)."""
        p, q = self.preset.sva, self.preset.squad
        items = p.limit or SVA_ITEMS
        runs = {}
        for protocol in self.sva_protocols():
            for variant, _ in self.sva_variants(protocol):
                for seed in self.preset.sva_seeds:
                    tokens = p.epochs * 2 * items * p.model.block_size  # two sentences (verb forms) per item
                    runs[f"SVA {protocol} {variant} seed {seed}"] = PlannedRun(
                        p.model, p.model.block_size, tokens, f"sva {protocol} {variant} {seed}"
                    )
        for protocol in SQUAD_PROTOCOLS:
            for variant, qk_scale in self.squad_variants(protocol):
                if qk_scale is None and protocol != SQUAD_PROTOCOLS[0]:
                    continue  # one baseline run serves both protocols
                for seed in self.preset.squad_seeds:
                    t = self.squad_train(seed, qk_scale, protocol)
                    tokens = t.steps * t.batch_size * q.model.block_size
                    runs[f"SQuAD {protocol} {variant} seed {seed}"] = PlannedRun(
                        q.model, q.model.block_size, tokens, f"squad {protocol} {variant} {seed}"
                    )
        return runs

    # SQuAD -------------------------------------------------------------------------------------------------

    def squad_data(self):
        q = self.preset.squad
        examples = load_squad(window=q.window, max_answer=q.max_answer)
        train = [e for e in examples if e.train][: q.train_limit]
        test = [e for e in examples if not e.train][: q.test_limit]
        return encode_qa(train), encode_qa(test)

    def squad_variants(self, protocol: str = "shared") -> list[Variant]:
        """The SQuAD runs of ``protocol``: the baseline (one run for both protocols) and faster QK at each
        factor of ``qk_scales`` (shared rates: a search for a factor whose model learns the task) or at the
        authors' ``qk_scale`` (their pairing)."""
        if protocol not in SQUAD_PROTOCOLS:
            raise ValueError(f"protocol must be one of {SQUAD_PROTOCOLS}, got {protocol!r}")
        q = self.preset.squad
        scales = q.qk_scales if protocol == "shared" else (q.qk_scale,)
        return [(BASELINE, None), *((fast_label(f), f) for f in scales)]

    def squad_train(self, seed: int, qk_scale: float | None = None, protocol: str = "shared") -> TrainConfig:
        """The training settings of one SQuAD run: ``SquadSetup.train`` with ``seed``; faster QK (``qk_scale``
        not None) multiplies the rate of W_Q, W_K and their biases by ``qk_scale``, and under
        ``protocol="authors"`` also trains everything at ``authors_rate`` x the rate for ``authors_steps`` x
        the steps (the authors' pairing). The baseline is the same run under both protocols."""
        if protocol not in SQUAD_PROTOCOLS:
            raise ValueError(f"protocol must be one of {SQUAD_PROTOCOLS}, got {protocol!r}")
        q = self.preset.squad
        t = replace(q.train, seed=seed)
        if qk_scale is None:
            return t
        if protocol == "authors":
            t = replace(t, lr=t.lr * q.authors_rate, steps=round(t.steps * q.authors_steps))
        return replace(t, lr_scale=self._lr_scale(qk_scale, ("qk",)))

    def squad_budget(self, train: QABatchData | None = None) -> dict[str, float]:
        """One SQuAD run's training budget in the units the authors state theirs in (70 epochs of 60 000
        questions): questions seen (steps x batch), epochs of the training questions, and byte tokens (the
        training sequences' mean length, prompt and answer, x questions seen). ``train``: the encoded
        training questions (``squad_data``'s; loaded when None)."""
        t = self.preset.squad.train
        data = train if train is not None else self.squad_data()[0]
        seen = t.steps * t.batch_size
        mean_tokens = float((data.prompt_len + data.target_len).double().mean())
        return {
            "training questions": len(data),
            "questions seen": seen,
            "epochs": seen / len(data),
            "tokens": seen * mean_tokens,
        }

    def squad(self, protocol: str = "shared") -> pd.DataFrame:
        """SQuAD as generative QA, baseline vs faster QK (``squad_variants``, ``squad_train``: ``protocol``
        "shared" or "authors"; the baseline is the same run in both): one row per (variant, seed, test
        question) with F1, EM, the gold answer's probability and the rollout attention mass on the answer's
        bytes in the context."""
        q = self.preset.squad
        train, test = self.squad_data()
        width = max(train.tokens.shape[1], test.tokens.shape[1])
        cfg = replace(q.model, block_size=max(q.model.block_size, width))
        dev = self.torch_device
        frames = []
        for variant, qk_scale in self.squad_variants(protocol):
            for seed in self.preset.squad_seeds:
                tcfg = self.squad_train(seed, qk_scale, protocol)
                config = dict(
                    model=cfg.to_dict(), train=tcfg.to_dict(), prompt_weight=q.prompt_weight, device=dev.type
                )

                def compute(tcfg=tcfg, config=config, label=f"SQuAD {variant} seed {seed}") -> dict:
                    try:
                        return train_qa(
                            cfg,
                            tcfg,
                            train,
                            prompt_weight=q.prompt_weight,
                            device=str(dev),
                            desc=label if tcfg.steps >= _PROGRESS_STEPS else None,
                            checkpoint=checkpoint_path("squad", config, train.fingerprint(), code=CODE),
                        )
                    except TrainingDiverged as err:
                        return {"model": None, "train_loss": [math.nan], "diverged": str(err)}

                res = self._cached("squad", config, compute, data=train.fingerprint())
                key = json.dumps(config, sort_keys=True)
                if res["model"] is None:  # diverged: every score of the run is NaN, the claims say so
                    print(f"SQuAD {variant} seed {seed}: {res['diverged']}")
                    nan = np.full(len(test), np.nan)
                    out = {"f1": nan, "em": nan, "answer_prob": nan, "mass": nan}
                elif key in self.squad_scores:
                    out = self.squad_scores[key]
                else:
                    model = GPT(cfg).to(dev)
                    model.load_state_dict(res["model"])
                    out = self.squad_scores[key] = qa_outputs(model, test, max_new=q.max_answer + 8)
                frames.append(
                    pd.DataFrame(
                        {
                            "variant": variant,
                            "seed": seed,
                            "f1": out["f1"],
                            "em": out["em"],
                            "true_prob": out["answer_prob"],
                            "mass": out["mass"],
                            "final_train_loss": float(np.mean(res["train_loss"][-20:])),
                        }
                    )
                )
        return pd.concat(frames, ignore_index=True)

    # HateXplain --------------------------------------------------------------------------------------------

    @staticmethod
    def hatexplain() -> str:
        """Try to load HateXplain; return what happened in a sentence (offline: why it is unavailable)."""
        try:
            ds = load_hatexplain("test")
        except DatasetUnavailable as err:
            return f"not run: {err}"
        return f"available ({len(ds)} test posts), but this notebook has no HateXplain experiment yet"

    # Claims ------------------------------------------------------------------------------------------------

    def claims(self, evidence: paper_claims.Evidence) -> list[Claim]:
        """The claims table's rows (:func:`attnlab.papers.qk_speed.claims.claims`) from the notebook's
        results, named in one :class:`~attnlab.papers.qk_speed.claims.Evidence` bundle."""
        from attnlab.papers.qk_speed import claims as paper_claims  # judged after computing

        return paper_claims.claims(self, evidence)


def _bins(shares) -> dict[str, float]:
    """Five DTAP attention-mass bin shares (%) as columns named by their bins."""
    edges = DTAP_EDGES
    names = [
        f"[{lo:g}, {hi:g}{']' if hi == edges[-1] else ')'}" for lo, hi in zip(edges, edges[1:], strict=False)
    ]
    return {name: float(v) for name, v in zip(names, shares, strict=True)}


def available_cores() -> int:
    """The CPU cores this process may run on: its affinity set where the platform has one (Linux), else
    ``os.cpu_count()`` (macOS, Windows), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def configure(
    scale: str = "smoke",
    seeds: list[int] | tuple[int, ...] = (),
    device: str = "auto",
    workers: int = 0,
    ratios: list[float] | tuple[float, ...] = (),
    fast_ratio: float = 0.0,
    epochs: int = 0,
    sva_epochs: int = 0,
) -> QKSpeedExperiment:
    """Validate the notebook's parameters and resolve them against the scale's preset. ``seeds`` are the
    synthetic-task seeds (Figs. 2-3 and the ratio sweep; empty: the preset's); ``workers`` the processes that
    train the (single-threaded) fixed-attention runs of Fig. 3 in parallel, 0 = one per available CPU core
    (the circuit runs of Fig. 2 and the ratio sweep train all at once on ``device``). ``ratios``: the
    eta_QK / eta_OV ratios of the sweep; ``fast_ratio``: the ratio of Fig. 2's "FAFO QK x20" run (faster QK,
    above 1); ``epochs``: the row-1 and ratio-sweep budget in epochs (early stop at ``loss_stop``);
    ``sva_epochs``: the SVA classifiers' epochs (the cosine schedule stretches with them); empty or 0: the
    preset's."""
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 0:
        raise ParameterError(f"workers must be a non-negative integer; got {workers!r}")
    workers = workers or available_cores()
    scale = check_scale(scale)
    preset = PRESETS[scale]
    c = preset.circuits
    sweep = check_numbers("ratios", ratios, c.ratios)
    if len(sweep) < 2:
        raise ParameterError(f"ratios: a sweep needs at least two ratios; got {ratios!r}")
    circuits = replace(
        c,
        ratios=sweep,
        fast_fafo=check_number("fast_ratio", fast_ratio, c.fast_fafo, low=1.0),
        max_epochs=check_count("epochs", epochs) or c.max_epochs,
    )
    sva = replace(preset.sva, epochs=check_count("sva_epochs", sva_epochs) or preset.sva.epochs)
    preset = replace(preset, circuits=circuits, sva=sva)
    seeds = check_seeds(seeds, preset.seeds)
    if preset.ratio_seeds > len(seeds):
        preset = replace(preset, ratio_seeds=len(seeds))
    return QKSpeedExperiment(
        scale=scale, preset=preset, seeds=seeds, device=check_device(device), workers=workers
    )
