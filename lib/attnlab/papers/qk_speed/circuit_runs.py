"""Fig. 2 of "Faster query-key learning sharpens attention" (arXiv 2608.06776) and its eta_QK / eta_OV ratio
sweep: the circuit runs of ``circuit_configs``, trained all at once (``batched.train_circuits``) into the
results cache, then evaluated on held-out sequences: attention mass on the distinct tokens and on the query
token, the share of the attention that moved from the initialisation, the true-label probability and
correctness.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial

import pandas as pd
import torch

from attnlab.papers.qk_speed.batched import CircuitSpec, circuit_spec, train_circuits
from attnlab.papers.qk_speed.circuit_configs import CircuitJobs
from attnlab.papers.qk_speed.circuits import (
    CircuitTrainResult,
    attention_shift,
    evaluate_circuit,
    make_circuit,
)
from attnlab.papers.qk_speed.counted_cache import CountedCache
from attnlab.papers.qk_speed.synthetic import sample_batch, seeded_generator
from attnlab.training.cache import cached_result, result_path

#: What keys the circuit results: the import closure of this module, which computes them
#: (``attnlab.codekeys``; named because the batched program looks results up without their computation).
CODE = (__name__,)
RATIO_INIT_LABELS = {"default": "QK at nn.Linear default", "identity": "QK at 1e-6 I"}


def _tensors(d: dict) -> dict:
    """Lists of floats as float64 tensors, for a weights_only-loadable cache entry."""
    return {k: torch.tensor(v, dtype=torch.float64) for k, v in d.items()}


def _circuit_result(r: CircuitTrainResult) -> dict:
    """A trained circuit as its cache entry."""
    return {
        "model": r.model.state_dict(),
        "history": _tensors(r.history),
        "steps": r.steps,
        "stopped_early": r.stopped_early,
    }


@dataclass(frozen=True)
class CircuitRuns:
    """The circuit runs of Fig. 2 and the ratio sweep (``jobs``), trained on ``device``."""

    jobs: CircuitJobs
    device: torch.device
    cache: CountedCache

    def steps(self) -> int:
        """SGD steps of the distinct runs, each counted to ``max_epochs`` (an upper bound: they stop at
        ``loss_stop``)."""
        return sum(cfg["max_epochs"] * cfg["batches_per_epoch"] for cfg in self.jobs.configs())

    def stacks(self) -> list[tuple[int, int]]:
        """The batched program that trains the runs: (circuits, batched SGD steps at most) of each
        ``CircuitStack`` that ``train_circuits`` runs, one per set of shared training settings and sequence
        length (a stack's step trains all its circuits; stopped circuits leave it, so the steps are an upper
        bound)."""
        stacks: dict[tuple[str, int], list[int]] = {}
        for cfg in self.jobs.configs():
            spec, settings = circuit_spec(cfg)
            steps = settings["max_epochs"] * settings["batches_per_epoch"]
            stacks.setdefault((json.dumps(settings, sort_keys=True), spec.seq_len), [0, steps])[0] += 1
        return [(circuits, steps) for circuits, steps in stacks.values()]

    def _train_missing(self) -> None:
        """Train the runs that are not cached yet, all at once on ``device`` (``train_circuits``, one batch
        per set of shared training settings), and cache each result, so that the calls that follow load
        them."""
        missing: dict[str, list[tuple[dict, CircuitSpec]]] = {}
        for cfg in self.jobs.configs():
            if not result_path("circuit", cfg, code=CODE).exists():
                spec, settings = circuit_spec(cfg)
                missing.setdefault(json.dumps(settings, sort_keys=True), []).append((cfg, spec))
        for key, runs in missing.items():
            results = train_circuits([spec for _, spec in runs], device=self.device, **json.loads(key))
            for (cfg, _), r in zip(runs, results, strict=True):
                cached_result("circuit", cfg, partial(_circuit_result, r), code=CODE)
                self.cache.prefetched.add(result_path("circuit", cfg, code=CODE))

    def _train_one(self, config: dict) -> dict:
        """Train one circuit run (``train_circuits`` of one spec) into its cache entry."""
        spec, settings = circuit_spec(config)
        return _circuit_result(train_circuits([spec], device=self.device, **settings)[0])

    def _circuit(self, config: dict) -> dict:
        """Load (or train) one circuit run and evaluate it on held-out sequences (stream 2 of its seed): the
        statistics of ``evaluate_circuit`` and ``moved``, the share of the attention that moved from the
        circuit's initialisation (``attention_shift``; the same circuit rebuilt as ``train_circuits`` builds
        it)."""
        result = self.cache.result("circuit", config, partial(self._train_one, config), code=CODE)
        model = make_circuit(config["kind"], seed=config["seed"])
        model.load_state_dict(result["model"])
        start = make_circuit(
            config["kind"],
            seed=config["seed"],
            qk_init=config["qk_init"],
            collapsed_init=config["collapsed_init"],
        )
        held_out = sample_batch(
            self.jobs.circuits.eval_size, config["seq_len"], seeded_generator(config["seed"], 2)
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
        jobs = self.jobs.fig2()
        self._train_missing()
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

    def ratio_sweep(self) -> pd.DataFrame:
        """FAFO at eta_QK / eta_OV = each ratio (eta_OV the shared LR), from each QK initialisation of the
        preset (``ratio_inits``): per (init, ratio, seed) the mean distinct-token attention mass, the mass on
        the query token, the share of the attention that moved from the initialisation (``moved``: near 0, the
        QK circuit did not leave its init) and the accuracy on held-out sequences."""
        jobs = self.jobs.ratio()
        self._train_missing()
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
