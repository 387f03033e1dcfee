"""The training entry point: the command line of ``python -m attnlab.training`` (one process, or one per
device under ``torchrun``), and :func:`launch`, which notebooks and scripts call to run it with several
processes.

    python -m attnlab.training --model-config n_layer=4 d_model=128 --train-config steps=2000 --corpus kjv
    torchrun --standalone --nproc_per_node 8 -m attnlab.training --config run.json --out runs/a
    torchrun --standalone --nproc_per_node 8 -m attnlab.training --config run.json --out runs/a --resume

``--config`` reads a run's ``config.json`` (``{"model": ..., "train": ..., "corpus": ...}``, as the results
cache writes it); ``--model-config`` and ``--train-config`` take JSON files of ``GPTConfig`` /
``TrainConfig`` fields and ``key=value`` overrides, applied in order. Without ``--out`` the run is kept in the
results cache (``build/runs/<key>/``), where the notebooks find it; with ``--out`` in that folder.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

import torch

from attnlab import paths
from attnlab.errors import ParameterError, TrainingDiverged
from attnlab.model import GPT, GPTConfig
from attnlab.runner.params import parse_assignment
from attnlab.training import distributed
from attnlab.training.cache import RunSpec, corpus_vocab_size, run_folder, spec_dict, train_cached
from attnlab.training.trainer import TrainConfig, TrainResult, resolve_device

NPROC_ENV = "ATTNLAB_NPROC"  # processes per node for :func:`launch` (``make reproduce NPROC=8``)
C = TypeVar("C", GPTConfig, TrainConfig)
DIVERGED = "diverged.txt"  # written into the run folder when training diverges, for :func:`launch`


def config_from(cls: type[C], base: dict, items: list[str]) -> C:
    """``cls(**fields)`` from ``base`` updated by each item in turn: a JSON file of fields or ``key=value``
    (the value JSON, else a Python literal, else the string). JSON lists become tuples (``betas``, per-layer
    ``attn``)."""
    if not isinstance(base, dict):
        raise ValueError(f"{cls.__name__}: the config's fields must be a JSON object; got {base!r:.80}")
    values = dict(base)
    for item in items:
        try:
            key, value = parse_assignment(item, json_values=True)
        except ParameterError:  # not key=value: a file
            values.update(fields_file(cls, item))
        else:
            values[key] = value
    unknown = sorted(set(values) - {f.name for f in fields(cls)})
    if unknown:
        raise ValueError(f"{cls.__name__} has no field(s) {unknown}")
    checked_at_runtime: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in values.items()
    }
    return cls(**checked_at_runtime)  # each field's type and value: the class's __post_init__


def fields_file(cls: type, item: str) -> dict:
    """The fields of a JSON file given to ``--model-config`` / ``--train-config``: a ValueError naming the
    file when it is missing, not JSON or not an object (``n_layer:4``, a ``key:value`` typo, is read as a
    file name: the message says how fields are given)."""
    path = Path(item)
    if not path.is_file():
        hint = f" (fields are given as key=value, e.g. {item.replace(':', '=', 1)})" if ":" in item else ""
        raise ValueError(f"{cls.__name__}: {item!r} is neither key=value nor a JSON file{hint}")
    try:
        values = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{path} is not JSON ({err}); give a JSON object of {cls.__name__} fields") from None
    if not isinstance(values, dict):
        raise ValueError(
            f"{path} must hold a JSON object of {cls.__name__} fields; got {type(values).__name__}"
        )
    return values


CONFIG_KEYS = ("model", "train", "corpus")  # the top-level keys of a run's config.json


def spec_from_args(args: argparse.Namespace) -> RunSpec:
    try:
        base = json.loads(args.config.read_text()) if args.config else {}
    except json.JSONDecodeError as err:
        raise ValueError(f"{args.config} is not JSON ({err}); give a run's config.json") from None
    if not isinstance(base, dict):
        raise ValueError(f"{args.config} must hold a JSON object with keys {list(CONFIG_KEYS)}")
    unknown = sorted(set(base) - set(CONFIG_KEYS))
    if unknown:
        raise ValueError(
            f"{args.config}: unknown key(s) {unknown}; a run's config.json has {list(CONFIG_KEYS)}"
        )
    for key, kind in (("model", dict), ("train", dict), ("corpus", str)):
        if key in base and not isinstance(base[key], kind):
            what = "a JSON object of fields" if kind is dict else "a corpus name or folder"
            raise ValueError(f"{args.config}: {key!r} must be {what}; got {base[key]!r:.80}")
    corpus = args.corpus or base.get("corpus", "shakespeare")
    spec = RunSpec(
        config_from(GPTConfig, base.get("model", {}), args.model_config),
        config_from(TrainConfig, base.get("train", {}), args.train_config),
        corpus,
    )
    if spec.train.seq_len > spec.model.block_size:
        raise ValueError(
            f"TrainConfig.seq_len={spec.train.seq_len} exceeds GPTConfig.block_size={spec.model.block_size}"
        )
    with torch.device("meta"):  # no memory: only the parameter names, to check lr_scale's groups
        groups = {model.param_group(n) for model in [GPT(spec.model)] for n, _ in model.named_parameters()}
    unknown = sorted(set(spec.train.lr_scale) - groups)
    if unknown:
        raise ValueError(
            f"lr_scale names unknown parameter group(s) {unknown}; this model has {sorted(groups)}"
        )
    vocab = corpus_vocab_size(corpus)
    if vocab > spec.model.vocab_size:
        raise ValueError(f"corpus {corpus!r} has {vocab} token ids; set --model-config vocab_size={vocab}")
    return spec


def check_out(out: Path, spec: RunSpec, resume: bool) -> None:
    """An ``--out`` folder that holds a run may only be resumed, and only with the same configuration; it is
    a folder (no file in its place or above it), outside the checkout's source."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; give a folder to keep the run in")
    blocking = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise ValueError(f"--out {out}: {blocking} is a file, not a folder; give a folder to keep the run in")
    root, where = paths.repo_root(), out.resolve()
    if root is not None and any(where.is_relative_to(root / f) for f in paths.SOURCE_FOLDERS):
        raise ValueError(f"--out {out} lies in the checkout's source ({where}); keep runs outside it")
    started = (out / "checkpoint.pt").exists() or (out / "result.pt").exists()
    if started and not resume:
        raise ValueError(f"{out} already holds a run: pass --resume to continue it, or choose another --out")
    config = out / "config.json"
    wanted = json.loads(json.dumps(spec_dict(spec)))  # as JSON reads it back: tuples become lists
    if started and not config.is_file():
        raise ValueError(f"{out} holds a run but no config.json: its configuration cannot be checked")
    if started and json.loads(config.read_text()) != wanted:
        raise ValueError(f"{out} holds a run of another configuration ({config})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnlab.training", description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, help="a run's config.json (model, train, corpus)")
    parser.add_argument("--model-config", nargs="+", action="extend", default=[], metavar="FILE|KEY=VALUE")
    parser.add_argument("--train-config", nargs="+", action="extend", default=[], metavar="FILE|KEY=VALUE")
    parser.add_argument("--corpus", help="an attnlab.data.corpora corpus or a folder of token shards")
    parser.add_argument("--out", type=Path, help="keep the run here (default: the results cache)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    parser.add_argument(
        "--device", default="auto", help="auto, cpu or cuda (under torchrun: one GPU per rank)"
    )
    parser.add_argument("--fsdp", action="store_true", help="shard the model with FSDP instead of DDP")
    parser.add_argument(
        "--micro-batch", type=int, help="rows per forward pass on each process (accumulation)"
    )
    parser.add_argument("--label", default="train", help="name shown in progress and log lines")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    ctx = distributed.context()
    try:
        if args.micro_batch is not None and args.micro_batch < 1:
            raise ValueError(f"--micro-batch must be a positive integer, got {args.micro_batch}")
        device = resolve_device(args.device)
        spec = spec_from_args(args)
        if args.out is not None:
            check_out(args.out, spec, args.resume)
    except (ValueError, TypeError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    folder = args.out or run_folder(spec, device)
    try:
        if ctx.is_main:
            print(f"{args.label}: {ctx.world_size} process(es), corpus {spec.corpus}", flush=True)
        result = train_cached(
            spec,
            device=device,
            progress=not args.quiet,
            label=args.label,
            fsdp=args.fsdp,
            micro_batch=args.micro_batch,
            folder=args.out,
        )
        if ctx.is_main:
            summary = {
                "final_val_loss": result.final_val_loss,
                "tokens_per_s": result.tokens_per_s,
                "timing": result.timing,
                "history": result.history,
            }
            (folder / "history.json").write_text(json.dumps(summary))
    except TrainingDiverged as err:  # every rank sees the same (averaged) loss, so all stop here
        if ctx.is_main:
            (folder / DIVERGED).write_text(str(err))
            print(f"error: {err}", file=sys.stderr)
        return 3
    finally:
        distributed.destroy()
    return 0


def nproc_default() -> int:
    """Processes per node for `launch`: ``ATTNLAB_NPROC`` (a positive integer), else 1."""
    text = os.environ.get(NPROC_ENV, "1")
    try:
        nproc = int(text)
    except ValueError:
        nproc = 0
    if nproc < 1:
        raise ParameterError(f"{NPROC_ENV}={text!r}: give a positive number of processes, or unset it for 1")
    return nproc


def micro_rows(seq_len: int, micro_tokens: int | None) -> int | None:
    """Rows per forward pass that hold at most ``micro_tokens`` tokens of ``seq_len`` (at least one row):
    a preset's memory budget per pass, the same whatever the context of a run. None: all rows at once."""
    if micro_tokens is None:
        return None
    if micro_tokens < 1:
        raise ValueError(f"micro_tokens must be positive, got {micro_tokens}")
    return max(1, micro_tokens // seq_len)


def launch(
    spec: RunSpec,
    *,
    nproc: int | None = None,
    device: str | torch.device = "auto",
    label: str = "run",
    progress: bool = True,
    fsdp: bool = False,
    micro_tokens: int | None = None,
) -> TrainResult:
    """Train ``spec`` through the results cache, as :func:`attnlab.training.cache.train_cached` does, with
    ``nproc`` processes on this node (default: :func:`nproc_default`). With more than one, and no cached
    result, it runs ``torchrun --standalone --nproc_per_node <nproc> -m attnlab.training`` and relays its
    output, then loads the run it stored; with one it trains in this process. ``fsdp``: as in
    :func:`attnlab.training.trainer.train`; ``micro_tokens``: tokens per forward pass on each process (see
    :func:`micro_rows`). A run that diverges raises :class:`attnlab.errors.TrainingDiverged` either way."""
    nproc = nproc_default() if nproc is None else nproc
    micro_batch = micro_rows(spec.train.seq_len, micro_tokens)
    if nproc < 1:
        raise ValueError(f"nproc must be at least 1, got {nproc}")
    dev = resolve_device(device)
    if nproc == 1 or (run_folder(spec, dev) / "result.pt").exists():
        return train_cached(
            spec, device=dev, label=label, progress=progress, fsdp=fsdp, micro_batch=micro_batch
        )
    if dev.type == "cuda" and nproc > torch.cuda.device_count():
        raise ValueError(f"nproc={nproc} processes, but this node has {torch.cuda.device_count()} GPU(s)")
    diverged = run_folder(spec, dev) / DIVERGED
    diverged.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.json"
        config.write_text(json.dumps(spec_dict(spec)))
        command = [
            sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
            "-m", "attnlab.training", "--config", str(config), "--device", dev.type, "--label", label,
            *(["--fsdp"] if fsdp else []), *([f"--micro-batch={micro_batch}"] if micro_batch else []),
            *([] if progress else ["--quiet"]),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        ) as proc:
            assert proc.stdout is not None  # stdout=PIPE
            for line in proc.stdout:
                print(line, end="", flush=True)
        if proc.returncode and diverged.is_file():
            raise TrainingDiverged(diverged.read_text())
        if proc.returncode:
            raise RuntimeError(f"{label}: torchrun with {nproc} processes failed (exit {proc.returncode})")
    result = train_cached(spec, device=dev, label=label, progress=progress)
    result.cached = False  # trained just now, by the torchrun processes
    return result
