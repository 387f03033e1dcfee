"""Subject-verb agreement in "Faster query-key learning sharpens attention" (arXiv 2608.06776), as the
authors set it up (``sva``): the verb's number from the full sentence, a one-layer attention-only classifier,
the baseline against faster QK for every SVA seed, trained with the authors' momentum SGD or this project's
Adam into the results cache; per test sentence the true label's probability, correctness, the attention on
the subject head, the number of attractors, and comprehensiveness and sufficiency. The sentences are
``sva.SVA_DATA``, the Brown-tagged substitute for Linzen et al.'s set (``sva.load_agreement``).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from attnlab.metrics import attention_mass, faithfulness
from attnlab.model import GPTConfig
from attnlab.papers.qk_speed import authors
from attnlab.papers.qk_speed.counted_cache import CountedCache
from attnlab.papers.qk_speed.presets import BASELINE, SVA_DATA, SVA_ITEMS, SVASetup, fast_label
from attnlab.papers.qk_speed.real_data import Variant, lr_scale, real_summary
from attnlab.papers.qk_speed.sva import (
    AttentionOnlyClassifier,
    held_out_subset,
    load_agreement,
    train_agreement,
)
from attnlab.papers.qk_speed.text_tasks import ClassificationData, classifier_outputs, classifier_prob_fn
from attnlab.runner.plan import PlannedRun
from attnlab.training.cache import checkpoint_path, result_path
from attnlab.training.workers import loaded_once, run_in_workers

#: What keys the SVA classifiers: the import closure of this module, which trains them (``attnlab.codekeys``;
#: named because ``prefetch`` looks results up without their computation).
CODE = (__name__,)
KIND = "sva_attention_only"
#: The SVA training protocols: the authors' momentum SGD, and this project's Adam (``SVASetup.adam_lr``).
SVA_PROTOCOLS = ("authors", "adam")
#: The columns of ``SVARuns.run``'s frame and their dtypes.
COLUMNS = {
    "variant": "str",
    "seed": "int64",
    "label": "int64",
    "attractors": "int64",
    "mass": "float64",
    "true_prob": "float64",
    "correct": "bool",
    "comprehensiveness": "float64",
    "sufficiency": "float64",
    "final_train_loss": "float64",
    "train_sentences": "int64",
}


def _train(
    cfg: GPTConfig, data: ClassificationData, settings: dict[str, Any], config: dict, device: torch.device
) -> dict:
    """Train one SVA classifier (``SVARuns.result``), checkpointing beside its cached result."""
    saved = checkpoint_path(KIND, config, data.fingerprint(), code=CODE)
    return train_agreement(cfg, data, **settings, device=str(device), checkpoint=saved)


def _train_in_worker(job: tuple[SVARuns, str, float | None, int]) -> None:
    """One worker of ``SVARuns.prefetch``: train the run (protocol, faster QK's factor, seed) into the results
    cache, on the sentences this process loads once."""
    runs, protocol, qk_scale, seed = job
    runs.result(protocol, qk_scale, seed, loaded_once(repr(runs.sva), lambda: runs.data()[0]))


@dataclass(frozen=True)
class SVARuns:
    """The SVA classifiers of every protocol, variant and seed, trained on ``device``."""

    sva: SVASetup
    seeds: tuple[int, ...]
    device: torch.device
    cache: CountedCache
    workers: int = 1  # processes that train a protocol's missing runs at once (``prefetch``; 1: none)

    def protocols(self) -> list[str]:
        """The SVA protocols run: the authors' and, unless ``adam_lr`` is None, this project's."""
        return [p for p in SVA_PROTOCOLS if p == "authors" or self.sva.adam_lr is not None]

    def variants(self, protocol: str) -> list[Variant]:
        """The SVA runs of ``protocol``: the baseline and faster QK at the authors' x``qk_scale`` (their
        SGD), or at each factor of ``adam_qk_scales`` (Adam, whose step does not scale as SGD's)."""
        if protocol not in SVA_PROTOCOLS:
            raise ValueError(f"protocol must be one of {SVA_PROTOCOLS}, got {protocol!r}")
        p = self.sva
        scales = (p.qk_scale,) if protocol == "authors" else p.adam_qk_scales
        return [(BASELINE, None), *((fast_label(f), f) for f in scales)]

    def data(self) -> tuple[ClassificationData, ClassificationData]:
        """The agreement sentences (``sva.load_agreement``: ``sva.SVA_DATA``) and the test sentences the
        metrics use (``sva.held_out_subset``: ``test_limit`` of them, the same for every run)."""
        p = self.sva
        data = load_agreement(train_fraction=p.train_fraction, limit=p.limit)
        return data, held_out_subset(data, p.test_limit)

    def model_config(self, data: ClassificationData) -> GPTConfig:
        """The classifier's config for ``data``: the preset's, with its vocabulary and a context that holds
        its longest sentence."""
        p = self.sva
        return replace(
            p.model, vocab_size=len(data.vocab), block_size=max(p.model.block_size, data.tokens.shape[1])
        )

    def settings(self, protocol: str, qk_scale: float | None, seed: int) -> dict[str, Any]:
        """The training settings of one run (``sva.train_agreement``'s keyword arguments but the device):
        ``protocol``'s optimiser and rate, faster QK at ``qk_scale`` (None: the baseline), ``seed``."""
        p = self.sva
        settings: dict[str, Any] = dict(
            epochs=p.epochs,
            batch_size=p.batch_size,
            lr=p.lr if protocol == "authors" else p.adam_lr,
            momentum=p.momentum,
            weight_decay=p.weight_decay,
            warmup=p.warmup,
            lr_scale=lr_scale(qk_scale),
            seed=seed,
        )
        if protocol == "adam":  # the authors' runs keep their cache keys
            settings["optimizer"] = "adam"
        return settings

    def _config(self, cfg: GPTConfig, settings: dict[str, Any]) -> dict:
        """A run's cache config."""
        return dict(model=cfg.to_dict(), **settings, device=self.device.type)

    def result(self, protocol: str, qk_scale: float | None, seed: int, data: ClassificationData) -> dict:
        """One run's result (``sva.train_agreement``'s: weights and per-epoch losses), trained on ``data`` or
        loaded from the results cache; it checkpoints beside its result and resumes from there."""
        cfg = self.model_config(data)
        settings = self.settings(protocol, qk_scale, seed)
        config = self._config(cfg, settings)
        compute = partial(_train, cfg, data, settings, config, self.device)
        return self.cache.result(KIND, config, compute, data=data.fingerprint(), code=CODE)

    def prefetch(self, protocol: str, data: ClassificationData) -> None:
        """Train the runs of ``protocol`` that the results cache lacks in ``workers`` processes at once, each
        on its share of the cores (``attnlab.training.workers``), so that ``run`` loads them. With one worker,
        or one missing run, nothing happens here and they train one by one in ``run``."""
        if self.workers < 2:
            return
        cfg = self.model_config(data)
        missing: dict[Path, tuple[float | None, int]] = {}  # result path -> (faster QK's factor, seed)
        for _, qk_scale in self.variants(protocol):
            for seed in self.seeds:
                config = self._config(cfg, self.settings(protocol, qk_scale, seed))
                path = result_path(KIND, config, data.fingerprint(), code=CODE)
                if not path.exists():
                    missing[path] = (qk_scale, seed)
        alone = replace(self, workers=1, cache=CountedCache())  # what a worker needs, without our counts
        jobs = [(alone, protocol, qk_scale, seed) for qk_scale, seed in missing.values()]
        if run_in_workers(_train_in_worker, jobs, self.workers, desc=f"SVA {protocol} runs"):
            self.cache.prefetched.update(missing)

    def run(self, protocol: str = "authors") -> pd.DataFrame:
        """Train (or load) every SVA run of ``protocol``: the authors' momentum SGD (``"authors"``) or Adam at
        ``SVASetup.adam_lr`` (``"adam"``, this project's protocol, everything else theirs). One row per
        (variant, seed, test sentence; ``variants``; columns ``COLUMNS``): the class probability of the true
        label, correctness, the label, the sentence's attractors, the last token's attention mass on the
        subject head, comprehensiveness and sufficiency at the top ``topk`` of the tokens by that attention.
        The missing runs train first in ``workers`` processes (``prefetch``)."""
        p = self.sva
        if protocol not in self.protocols():
            raise ValueError(f"protocol must be one of {self.protocols()}, got {protocol!r}")
        data, test = self.data()
        attractors = dict(sorted(Counter(test.item.tolist()).items()))
        print(
            f"{SVA_DATA}, {protocol}: {int(data.train.sum())} training and {int((~data.train).sum())} test "
            f"sentences (classes balanced), {len(test)} scored; their attractor counts {attractors}"
        )
        self.prefetch(protocol, data)
        cfg = self.model_config(data)
        dev = self.device
        frames = []
        for variant, qk_scale in self.variants(protocol):
            for seed in self.seeds:
                res = self.result(protocol, qk_scale, seed, data)
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
                            "attractors": test.item.numpy(),
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

    @staticmethod
    def summary(frame: pd.DataFrame) -> pd.DataFrame:
        """``real_summary`` of the SVA columns with the authors' printed numbers beside ours
        (``authors.sva_column``, reference only)."""
        out = real_summary(frame, ["correct", "mass", "true_prob", "comprehensiveness", "sufficiency"])
        return out.assign(**{"authors' notebook": pd.Series(authors.sva_column(out.index))})

    def planned_runs(self) -> dict[str, PlannedRun]:
        """The SVA classifiers as GPT training runs, for :mod:`attnlab.runner.plan`, at an upper bound of
        their tokens (``presets.SVA_ITEMS`` items, every sentence as long as the context)."""
        p = self.sva
        items = math.ceil(SVA_ITEMS * p.train_fraction)
        items = min(items, p.limit) if p.limit else items
        runs = {}
        for protocol in self.protocols():
            for variant, _ in self.variants(protocol):
                for seed in self.seeds:
                    tokens = p.epochs * items * p.model.block_size
                    runs[f"SVA {protocol} {variant} seed {seed}"] = PlannedRun(
                        p.model, p.model.block_size, tokens, f"sva {protocol} {variant} {seed}"
                    )
        return runs
