"""The cost of contribution weights (arXiv 2606.07604, docs/papers/contribution-weights.md, "Cost"): the
paper computes c_ij = a_ij <o_i, v~_j> / ||o_i||^2 with <o_i, v~_j> for all (i, j) one T x T matrix product
per head, so memory is O(T^2) per head and the T x T x d tensor of weighted terms a_ij v~_j is never formed.
The null a reader can see is the computation that forms it (:func:`naive_contribution`).

Two measurements: :func:`measure` (time and peak memory of each form at each length, each in a fresh process,
so that its peak memory is its own: ``attnlab.tools.benchmark.contribution_cost``) and :func:`paired_times`
(both forms timed in one process, alternated, one ratio per repeat: the timing claim's units)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import pandas as pd
import torch

from attnlab.hf import model_source
from attnlab.metrics import contribution_weights
from attnlab.tools.benchmark import contribution_cost

IMPLS = ("contribution_weights", "naive")


def naive_contribution(pattern: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Contribution weights the naive way: the (B, H, T, T, D) tensor of every weighted term a_ij v~_j, summed
    over j for o_i, then each term's projection on o_i over ||o_i||^2 (0 where o_i = 0, as
    ``attnlab.metrics.contribution_weights``, which it equals)."""
    terms = pattern[..., None] * values[:, :, None]  # (B, H, T, T, D)
    o = terms.sum(3)  # (B, H, T, D)
    sq = (o * o).sum(-1)[..., None]  # (B, H, T, 1)
    return torch.where(sq > 0, (terms * o[:, :, :, None]).sum(-1) / torch.where(sq > 0, sq, 1.0), 0.0)


def terms_gb(H: int, T: int, D: int) -> float:
    """The size of the (H, T, T, D) float32 tensor of weighted terms, batch 1, in GB."""
    return H * T * T * D * 4 / 1e9


def measure(
    H: int, D: int, lengths: Sequence[int], repeats: int, max_gb: float, device: torch.device
) -> pd.DataFrame:
    """Time and peak memory of both forms at each length, each in a fresh process (``contribution_cost``);
    the naive one only where its terms tensor fits ``max_gb``: columns impl, T, seconds (median of
    ``repeats``), peak_gb (memory above the inputs; NaN where not run), terms_gb, H and D."""
    rows = []
    for T in lengths:
        for impl in IMPLS:
            if impl == "naive" and terms_gb(H, T, D) > max_gb:
                rows.append({"impl": impl, "T": T, "seconds": math.nan, "peak_gb": math.nan})
            else:
                rows.append(contribution_cost(impl, H, T, D, repeats, device))
            rows[-1] |= {"terms_gb": terms_gb(H, T, D), "H": H, "D": D}
    return pd.DataFrame(rows)


def _layer(H: int, T: int, D: int, device: torch.device, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A random causal pattern (1, H, T, T) and values (1, H, T, D), float32, seeded."""
    g = torch.Generator().manual_seed(seed)
    future = ~torch.ones(T, T, dtype=torch.bool).tril()
    scores = torch.randn(1, H, T, T, generator=g).masked_fill(future, -math.inf)
    return scores.softmax(-1).to(device), torch.randn(1, H, T, D, generator=g).to(device)


def paired_times(
    H: int, D: int, lengths: Sequence[int], repeats: int, device: torch.device, seed: int = 0
) -> pd.DataFrame:
    """Both forms timed in this one process at each length, alternated: repeat k runs the efficient form
    first when k is even, the naive first when odd, so a drift of the machine (another process, the clock)
    falls on both alike; one warm-up call of each first. Columns T, repeat, first (which ran first),
    contribution_weights and naive (seconds of that repeat's call)."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    forms = {"contribution_weights": contribution_weights, "naive": naive_contribution}
    rows = []
    for T in lengths:
        pattern, values = _layer(H, T, D, device, seed)
        for fn in forms.values():
            fn(pattern, values)
        sync()
        for k in range(repeats):
            order = IMPLS if k % 2 == 0 else IMPLS[::-1]
            row: dict[str, float | int | str] = {"T": T, "repeat": k, "first": order[0]}
            for impl in order:
                start = time.perf_counter()
                forms[impl](pattern, values)
                sync()
                row[impl] = time.perf_counter() - start
            rows.append(row)
        del pattern, values
    return pd.DataFrame(rows, columns=["T", "repeat", "first", *IMPLS])


def ratios(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per length of :func:`paired_times`: repeats, the median seconds of each form and the geometric mean
    of the per-repeat ratio naive / contribution_weights."""
    log = (pairs["naive"] / pairs["contribution_weights"]).map(math.log)
    grouped = pairs.assign(log_ratio=log).groupby("T")
    return pd.DataFrame({
        "repeats": grouped.size(), "contribution_weights_s": grouped["contribution_weights"].median(),
        "naive_s": grouped["naive"].median(), "ratio": grouped["log_ratio"].mean().map(math.exp),
    })  # fmt: skip


def model_shape(name: str) -> tuple[int, int]:
    """(query heads, model width) of a model, from its config alone (SmolLM2: 9, 576), read where
    :func:`attnlab.hf.load` reads it (a pinned name from its verified local folder, never the hub)."""
    if name == "smollm2":
        return 9, 576
    from transformers import AutoConfig

    source, kwargs = model_source(name)
    cfg = AutoConfig.from_pretrained(source, **kwargs)
    return cfg.num_attention_heads, cfg.hidden_size
