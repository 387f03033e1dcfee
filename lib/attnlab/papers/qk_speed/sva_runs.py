"""Subject-verb agreement in "Faster query-key learning sharpens attention" (arXiv 2608.06776), as the
authors set it up (``sva``): the verb's number from the full sentence, a one-layer attention-only classifier,
the baseline against faster QK for every SVA seed, trained with the authors' momentum SGD or this project's
Adam into the results cache; per test sentence the true label's probability, correctness, the attention on
the subject head and the verb, and comprehensiveness and sufficiency.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
import torch

from attnlab.metrics import attention_mass, faithfulness
from attnlab.papers.qk_speed import authors
from attnlab.papers.qk_speed.counted_cache import CountedCache
from attnlab.papers.qk_speed.presets import BASELINE, SVA_ITEMS, SVASetup, fast_label
from attnlab.papers.qk_speed.real_data import Variant, lr_scale, real_summary
from attnlab.papers.qk_speed.sva import (
    AttentionOnlyClassifier,
    held_out_subset,
    load_agreement,
    train_agreement,
)
from attnlab.papers.qk_speed.text_tasks import ClassificationData, classifier_outputs, classifier_prob_fn
from attnlab.runner.plan import PlannedRun
from attnlab.training.cache import checkpoint_path

#: What keys the SVA classifiers: the import closure of this module, which trains them (``attnlab.codekeys``).
CODE = (__name__,)
#: The SVA training protocols: the authors' momentum SGD, and this project's Adam (``SVASetup.adam_lr``).
SVA_PROTOCOLS = ("authors", "adam")


@dataclass(frozen=True)
class SVARuns:
    """The SVA classifiers of every protocol, variant and seed, trained on ``device``."""

    sva: SVASetup
    seeds: tuple[int, ...]
    device: torch.device
    cache: CountedCache

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
        """The agreement sentences of every offline set (``sva.load_agreement``) and the test sentences the
        metrics use (``sva.held_out_subset``: ``test_limit`` of them, the same for every run)."""
        p = self.sva
        data = load_agreement(train_fraction=p.train_fraction, limit=p.limit)
        return data, held_out_subset(data, p.test_limit)

    def run(self, protocol: str = "authors") -> pd.DataFrame:
        """Train (or load) every SVA run of ``protocol``: the authors' momentum SGD (``"authors"``) or Adam at
        ``SVASetup.adam_lr`` (``"adam"``, this project's protocol, everything else theirs). One row per
        (variant, seed, test sentence; ``variants``): the class probability of the true label, correctness,
        the label, the last token's attention mass on the subject head and the verb, comprehensiveness and
        sufficiency at the top ``topk`` of the tokens by that attention."""
        p = self.sva
        if protocol not in self.protocols():
            raise ValueError(f"protocol must be one of {self.protocols()}, got {protocol!r}")
        data, test = self.data()
        cfg = replace(
            p.model, vocab_size=len(data.vocab), block_size=max(p.model.block_size, data.tokens.shape[1])
        )
        dev = self.device
        frames = []
        for variant, qk_scale in self.variants(protocol):
            for seed in self.seeds:
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
                config = dict(model=cfg.to_dict(), **settings, device=dev.type)

                def compute(settings: dict[str, Any] = settings, config: dict = config) -> dict:
                    saved = checkpoint_path("sva_attention_only", config, data.fingerprint(), code=CODE)
                    return train_agreement(cfg, data, **settings, device=str(dev), checkpoint=saved)

                res = self.cache.result(
                    "sva_attention_only", config, compute, data=data.fingerprint(), code=CODE
                )
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

    @staticmethod
    def summary(frame: pd.DataFrame) -> pd.DataFrame:
        """``real_summary`` of the SVA columns with the authors' printed numbers beside ours
        (``authors.sva_column``, reference only)."""
        out = real_summary(frame, ["correct", "mass", "true_prob", "comprehensiveness", "sufficiency"])
        return out.assign(**{"authors' notebook": pd.Series(authors.sva_column(out.index))})

    def planned_runs(self) -> dict[str, PlannedRun]:
        """The SVA classifiers as GPT training runs, for :mod:`attnlab.runner.plan`, at an upper bound of
        their tokens (every sentence as long as the context)."""
        p = self.sva
        items = p.limit or SVA_ITEMS
        runs = {}
        for protocol in self.protocols():
            for variant, _ in self.variants(protocol):
                for seed in self.seeds:
                    tokens = p.epochs * 2 * items * p.model.block_size  # two sentences (verb forms) per item
                    runs[f"SVA {protocol} {variant} seed {seed}"] = PlannedRun(
                        p.model, p.model.block_size, tokens, f"sva {protocol} {variant} {seed}"
                    )
        return runs
