"""Exclusive Self Attention (XSA, arXiv 2603.09078): scale presets and the experiments of its notebook.

The notebook ``notebooks/xsa.ipynb`` calls ``configure`` with its parameters, then the methods of the returned
``XSAExperiment``; nothing here is specific to a notebook cell.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import torch

from attnlab import paths
from attnlab.cache import RunSpec, train_cached
from attnlab.claims import Claim, verdict_below_zero
from attnlab.data import load_tokens
from attnlab.metrics import similarity_bias_by_layer
from attnlab.model import GPT, GPTConfig
from attnlab.params import check_device, check_scale, check_seeds, check_subset
from attnlab.train import TrainConfig, TrainResult, validation_windows

PAPER = "xsa"
KINDS = ("sa", "xsa")


def _gpt(n_layer: int, d_model: int, n_head: int, head_dim: int, block_size: int) -> GPTConfig:
    """The paper's architecture: RoPE, LayerNorm after the embedding, head dim set independently."""
    return GPTConfig(
        n_layer=n_layer, d_model=d_model, n_head=n_head, head_dim=head_dim,
        block_size=block_size, pos="rope", embed_norm=True,
    )  # fmt: skip


@dataclass(frozen=True)
class Size:
    model: GPTConfig  # the SA configuration; XSA differs only in ``attn``
    train: TrainConfig


@dataclass(frozen=True)
class Preset:
    sizes: dict[str, Size]
    seeds: tuple[int, ...]
    diag_sequences: int  # validation sequences for Fig. 1
    corpus: str = "shakespeare"


def _train(steps: int, batch: int, seq: int, lr: float, warmup: int, evals: int, **kw) -> TrainConfig:
    return TrainConfig(
        steps=steps, batch_size=batch, seq_len=seq, lr=lr, warmup_steps=warmup,
        eval_every=max(1, steps // evals), **kw,
    )  # fmt: skip


PRESETS: dict[str, Preset] = {
    # A minute on a CPU, to exercise every cell.
    "smoke": Preset(
        sizes={
            "2L-32d": Size(_gpt(2, 32, 2, 16, 64), _train(60, 16, 64, 3e-3, 10, 6, eval_batches=2)),
            "2L-64d": Size(_gpt(2, 64, 4, 16, 64), _train(60, 16, 64, 3e-3, 10, 6, eval_batches=2)),
        },
        seeds=(0,),
        diag_sequences=8,
    ),
    # A 2-core laptop, about 20 minutes: two sizes, two seeds, trained until the loss curves flatten.
    "cpu": Preset(
        sizes={
            "2L-64d": Size(_gpt(2, 64, 4, 16, 128), _train(1500, 32, 128, 3e-3, 100, 30)),
            "4L-128d": Size(_gpt(4, 128, 4, 32, 128), _train(1000, 32, 128, 2e-3, 100, 25)),
        },
        seeds=(0, 1),
        diag_sequences=64,
    ),
    # One large GPU, about an hour.
    "gpu": Preset(
        sizes={
            "6L-384d": Size(_gpt(6, 384, 6, 64, 512), _train(5000, 64, 512, 1e-3, 200, 50)),
            "12L-768d": Size(_gpt(12, 768, 12, 64, 512), _train(5000, 64, 512, 6e-4, 200, 50)),
        },
        seeds=(0, 1, 2),
        diag_sequences=256,
    ),
    # The paper's Table 1 shapes, context, batch, schedule and LRs (byte tokens until a BPE corpus is wired).
    "paper": Preset(
        sizes={
            "0.7B": Size(_gpt(24, 1536, 6, 256, 2048), _train(200_000, 256, 2048, 5e-4, 2000, 400)),
            "1.3B": Size(_gpt(24, 2048, 24, 128, 2048), _train(200_000, 256, 2048, 4e-4, 2000, 400)),
            "2.7B": Size(_gpt(32, 2560, 24, 128, 2048), _train(200_000, 256, 2048, 3e-4, 2000, 400)),
        },
        seeds=(0,),
        diag_sequences=1024,
    ),
}


@dataclass(frozen=True)
class XSAExperiment:
    scale: str
    preset: Preset
    seeds: tuple[int, ...]
    sizes: tuple[str, ...]
    device: str

    @property
    def figures(self) -> Path:
        return paths.figures_dir() / self.scale / PAPER

    def spec(self, size: str, kind: str, seed: int) -> RunSpec:
        s = self.preset.sizes[size]
        return RunSpec(replace(s.model, attn=kind), replace(s.train, seed=seed), self.preset.corpus)

    def config_table(self) -> pd.DataFrame:
        """The model and training configuration of each size (parameters without embeddings)."""
        rows = []
        for name in self.sizes:
            m, t = self.preset.sizes[name].model, self.preset.sizes[name].train
            rows.append({
                "size": name, "layers": m.n_layer, "d_model": m.d_model, "heads": m.n_head,
                "head_dim": m.head_dim, "context": t.seq_len, "batch": t.batch_size, "steps": t.steps,
                "lr": t.lr, "params": _count_params(m), "tokens": t.steps * t.batch_size * t.seq_len,
            })  # fmt: skip
        return pd.DataFrame(rows).set_index("size")

    def train_all(self, progress: bool = True) -> dict[tuple[str, str, int], TrainResult]:
        """Train (or load from the results cache) SA and XSA for every size and seed."""
        runs = {}
        for size in self.sizes:
            for seed in self.seeds:
                for kind in KINDS:
                    label = f"{size} {kind.upper()} seed {seed}"
                    spec = self.spec(size, kind, seed)
                    runs[size, kind, seed] = train_cached(
                        spec, device=self.device, progress=progress, label=label
                    )
        return runs

    @staticmethod
    def loss_curves(runs: dict[tuple[str, str, int], TrainResult]) -> pd.DataFrame:
        """Tidy curves for Fig. 3: validation loss at each evaluation, and the mean training loss over the
        steps since the previous evaluation."""
        rows = []
        for (size, kind, seed), run in runs.items():
            h = run.history
            prev = 0
            for step, val in zip(h["val_step"], h["val_loss"], strict=True):
                rows.append((size, kind, seed, step, "validation", val))
                if step > 0:
                    rows.append(
                        (size, kind, seed, step, "train", statistics.fmean(h["train_loss"][prev:step]))
                    )
                prev = step
        return pd.DataFrame(rows, columns=["size", "kind", "seed", "step", "split", "loss"])

    @staticmethod
    def final_losses(curves: pd.DataFrame) -> pd.DataFrame:
        """Final train and validation loss per (size, kind, seed)."""
        last = curves[curves["step"] == curves.groupby(["size", "kind", "seed"])["step"].transform("max")]
        return last.pivot_table(index=["size", "seed"], columns=["split", "kind"], values="loss")

    def layer_diagnostics(self, runs: dict[tuple[str, str, int], TrainResult]) -> pd.DataFrame:
        """Fig. 1 diagnostics of the largest size, for SA and XSA, over validation sequences and all seeds."""
        size = self.sizes[-1]
        seq_len = self.preset.sizes[size].train.seq_len
        windows = validation_windows(
            load_tokens(self.preset.corpus)["validation"], self.preset.diag_sequences, seq_len
        )[:, :-1]
        frames = []
        for kind in KINDS:
            for seed in self.seeds:
                frame = similarity_bias_by_layer(runs[size, kind, seed].model, windows)
                frames.append(frame.assign(kind=kind, seed=seed, size=size))
        return pd.concat(frames, ignore_index=True)

    def claims(self, curves: pd.DataFrame, diag: pd.DataFrame) -> list[Claim]:
        """Verdicts for the claims of Fig. 1 and Fig. 3 from the measured numbers."""
        n_seeds = len(self.seeds)
        finals = self.final_losses(curves)
        sa = diag[diag["kind"] == "sa"].groupby("layer")[["cos_vv", "a_ii", "a_ii_uniform", "cos_yv"]].mean()
        cos_yv, cos_vv, a_ii = sa["cos_yv"].to_numpy(), sa["cos_vv"].to_numpy(), sa["a_ii"].to_numpy()
        uniform = sa["a_ii_uniform"].iloc[0]
        xsa = diag[diag["kind"] == "xsa"]
        residual, mean_cos_zv = xsa["zv_residual"].max(), xsa["cos_zv"].mean()

        def by_layer(values, digits: int = 2) -> str:
            return ", ".join(f"{x:.{digits}f}" for x in values)

        claims = [
            Claim(
                "Fig. 1", "SA output is aligned with the token's own value (similarity bias)",
                "cos(y_i, v_i) ~0.2-0.6 across layers (1.3B model)",
                f"SA cos(y_i, v_i) by layer: {by_layer(cos_yv)}, above the values' own mean "
                f"cos(v_i, v_j): {by_layer(cos_vv)} ({self.sizes[-1]})",
                "holds" if (cos_yv > cos_vv).all() and (cos_yv > 0).all() else "does not hold",
            ),
            Claim(
                "Fig. 1", "the similarity bias grows with depth",
                "cos(y_i, v_i) ~0.2 (first layers) -> ~0.6 (layer 23)",
                f"SA cos(y_i, v_i): first layer {cos_yv[0]:.2f}, last layer {cos_yv[-1]:.2f}",
                "holds" if cos_yv[-1] > cos_yv[0] else "does not hold",
            ),
            Claim(
                "Fig. 1", "values are positively correlated within a sequence",
                "mean cos(v_i, v_j) > 0", f"SA mean cos(v_i, v_j) by layer: {by_layer(cos_vv)}",
                "holds" if (cos_vv > 0).all() else "does not hold",
            ),
            Claim(
                "Fig. 1", "diagonal attention a_ii is relatively high",
                "high a_ii (no number given)",
                f"SA a_ii by layer: {by_layer(a_ii, 3)}; uniform causal attention: {uniform:.3f}",
                "holds" if (a_ii > uniform).all() else "does not hold",
            ),
            Claim(
                "Fig. 1", "a_ii grows with depth", "rising with depth (no number given)",
                f"SA a_ii: first layer {a_ii[0]:.3f}, last layer {a_ii[-1]:.3f}",
                "holds" if a_ii[-1] > a_ii[0] else "does not hold",
            ),
            Claim(
                "Alg. 1", "XSA output is orthogonal to the own value",
                "cos(z_i, v_i) = 0 up to rounding",
                f"max |z_i . v_i| / (|y_i| |v_i|) < {_power_of_ten_above(residual):.0e}; "
                f"|mean cos(z_i, v_i)| = {abs(mean_cos_zv):.3f}",
                "holds" if residual < 1e-5 else "does not hold",
            ),
        ]  # fmt: skip
        for size in self.sizes:
            # "throughout": every evaluation after warm-up, seeds averaged
            warmup = self.preset.sizes[size].train.warmup_steps
            val = curves[(curves["size"] == size) & (curves["split"] == "validation")]
            val = val[val["step"] > warmup].groupby(["step", "kind"])["loss"].mean().unstack("kind")
            below = int((val["xsa"] < val["sa"]).sum())
            claims.append(Claim(
                "Fig. 3", f"XSA's validation loss is below SA's throughout training ({size})",
                "XSA below SA throughout, at 0.7B, 1.3B and 2.7B",
                f"XSA below SA at {below} of {len(val)} evaluations after warm-up (mean of seeds)",
                "holds" if below == len(val) else "does not hold",
            ))  # fmt: skip
            for split in ("validation", "train"):
                gaps = (finals.loc[size, (split, "xsa")] - finals.loc[size, (split, "sa")]).tolist()
                spread = f" ± {statistics.stdev(gaps):.4f}" if n_seeds > 1 else ""
                claims.append(Claim(
                    "Fig. 3", f"XSA reaches a lower final {split} loss than SA ({size})",
                    "XSA below SA throughout, at 0.7B, 1.3B and 2.7B",
                    f"XSA - SA = {statistics.fmean(gaps):+.4f}{spread} nats/byte over {n_seeds} seed(s)",
                    verdict_below_zero(gaps),
                ))  # fmt: skip
        return claims

    def results_cached(self, runs: dict[tuple[str, str, int], TrainResult]) -> str:
        n = sum(r.cached for r in runs.values())
        return f"{n} of {len(runs)} training runs were loaded from the results cache."


def _power_of_ten_above(x: float) -> float:
    """The smallest power of ten above ``x``: a bound that does not change with rounding noise."""
    return 10.0 ** math.floor(math.log10(max(x, 1e-30)) + 1)


def _count_params(model: GPTConfig) -> int:
    with torch.device("meta"):
        return GPT(model).num_params()


def configure(
    scale: str = "smoke",
    seeds: list[int] | tuple[int, ...] = (),
    device: str = "auto",
    sizes: list[str] | tuple[str, ...] = (),
) -> XSAExperiment:
    """Validate the notebook's parameters and resolve them against the scale's preset."""
    scale = check_scale(scale)
    preset = PRESETS[scale]
    return XSAExperiment(
        scale=scale,
        preset=preset,
        seeds=check_seeds(seeds, preset.seeds),
        sizes=check_subset("sizes", sizes, preset.sizes),
        device=check_device(device),
    )
