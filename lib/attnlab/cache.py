"""Results cache: a training run is identified by its model config, train config, data fingerprint, device
type and the source of the modules that define the computation; an identical run is loaded, not retrained.

Layout: ``build/runs/<key>/`` holds ``config.json``, ``checkpoint.pt`` while training (so an interrupted run
resumes) and ``result.pt`` (weights and loss history) once finished.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from attnlab import data, paths
from attnlab.model import GPT, GPTConfig
from attnlab.train import TrainConfig, TrainResult, atomic_save, resolve_device, train

# Modules whose source defines what a training run computes; editing any of them invalidates the cache.
_CODE_MODULES = ("attention.py", "model.py", "train.py")


def code_version() -> str:
    """Digest of the source of the modules that define the model and its training."""
    h = hashlib.sha256()
    for name in _CODE_MODULES:
        h.update((Path(__file__).parent / name).read_bytes())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class RunSpec:
    """Everything that determines a training run's result."""

    model: GPTConfig
    train: TrainConfig
    corpus: str = "shakespeare"

    def key(self, device: torch.device) -> str:
        blob = json.dumps(
            {
                "model": self.model.to_dict(),
                "train": self.train.to_dict(),
                "data": data.fingerprint(self.corpus),
                "device": device.type,
                "code": code_version(),
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:20]


def train_cached(
    spec: RunSpec, *, device: str = "auto", progress: bool = True, label: str = "run"
) -> TrainResult:
    """Load the finished run from the cache, or train it (resuming an interrupted attempt) and store it."""
    dev = resolve_device(device)
    run_dir = paths.build_dir() / "runs" / spec.key(dev)
    result_path = run_dir / "result.pt"
    if result_path.exists():
        state = torch.load(result_path, map_location=dev, weights_only=True)
        model = GPT(spec.model).to(dev)
        model.load_state_dict(state["model"])
        print(f"{label}: loaded from cache ({run_dir.name})")
        return TrainResult(model, state["history"], state["timing"], cached=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(
        json.dumps({"model": spec.model.to_dict(), "train": spec.train.to_dict(), "corpus": spec.corpus})
    )
    result = train(
        spec.model,
        spec.train,
        data.load_tokens(spec.corpus),
        device=str(dev),
        run_dir=run_dir,
        progress=progress,
        desc=label,
    )
    atomic_save(
        {"model": result.model.state_dict(), "history": result.history, "timing": result.timing},
        result_path,
    )
    (run_dir / "checkpoint.pt").unlink(missing_ok=True)
    print(
        f"{label}: trained {spec.train.steps} steps, {result.tokens_per_s:,.0f} tokens/s, "
        f"final val loss {result.final_val_loss:.3f}"
    )
    return result
