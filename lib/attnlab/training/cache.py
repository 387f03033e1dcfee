"""Results cache: a training run is identified by its model config, train config, data fingerprint, device
type and the source of every module its computation imports (:mod:`attnlab.codekeys`); an identical run is
loaded, not retrained.

Layout: ``build/runs/<key>/`` holds ``config.json``, ``checkpoint.pt`` while training (so an interrupted run
resumes) and ``result.pt`` (weights and loss history) once finished. Under ``torchrun`` every rank trains and
rank 0 alone writes these files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch

from attnlab import paths, verified
from attnlab.codekeys import code_digest, defining_module, run_checked
from attnlab.data import corpora as data
from attnlab.data import shards
from attnlab.data.tokenizer import ByteTokenizer, Tokenizer
from attnlab.errors import CorruptFile, ParameterError
from attnlab.locks import exclusive
from attnlab.model import GPT, GPTConfig
from attnlab.training import distributed
from attnlab.training.trainer import Tokens, TrainConfig, TrainResult, resolve_device, train

AGAIN = "computing it again"  # what happens to a stored result that fails its check

# The modules whose import closure defines what a training run computes (attnlab.codekeys): the trainer, and
# through its imports the model, attention kinds and optimiser; and the token shards it may read batches from.
TRAINING_ROOTS = ("attnlab.training.trainer", "attnlab.data.shards")


def code_version() -> str:
    """Digest of the source of every module a training run's computation imports (:mod:`attnlab.codekeys`)."""
    return code_digest(TRAINING_ROOTS)


def corpus_tokens(corpus: str) -> Mapping[str, Tokens]:
    """The train and validation tokens of ``corpus``: an :mod:`attnlab.data.corpora` corpus name (byte tokens
    in memory) or the path of a folder of token shards (memory-mapped, :mod:`attnlab.data.shards`)."""
    if corpus in data.corpus_names():
        return data.load_tokens(corpus)
    return shards.open_shards(Path(corpus))


def corpus_fingerprint(corpus: str) -> str:
    """What identifies the tokens of ``corpus`` (see :func:`corpus_tokens`)."""
    if corpus in data.corpus_names():
        return data.fingerprint(corpus)
    return shards.read_meta(Path(corpus))["fingerprint"]


def corpus_vocab_size(corpus: str) -> int:
    """The vocabulary size of ``corpus``'s tokenizer (256 for byte tokens)."""
    if corpus in data.corpus_names():
        return ByteTokenizer.vocab_size
    return int(shards.read_meta(Path(corpus))["vocab_size"])


def resolve_corpus(corpus: str) -> str:
    """A corpus name as it is; a folder of token shards as an absolute path: taken as given when it exists
    (absolute, or relative to the working directory), else inside the data folder (``data/``), where
    ``python -m attnlab.data.shards ... --out data/shards/<name>`` writes."""
    if corpus in data.corpus_names():
        return corpus
    path = Path(corpus).expanduser()
    if path.is_absolute() or path.exists():
        return str(path.resolve())
    return str(paths.data_dir() / path)


def corpus_parameter(corpus: object, default: str) -> str:
    """A notebook's ``corpus`` parameter, resolved (:func:`resolve_corpus`); empty means ``default``."""
    if not isinstance(corpus, str):
        raise ParameterError(f"corpus must be a corpus name or a folder of token shards; got {corpus!r}")
    return resolve_corpus(corpus or default)


def corpus_tokenizer(corpus: str) -> Tokenizer:
    """The tokenizer of ``corpus``'s tokens, to encode evaluation text as its models read text."""
    if corpus in data.corpus_names():
        return ByteTokenizer()
    return shards.shard_tokenizer(shards.read_meta(Path(corpus)))


def check_corpus(corpus: str, vocab_size: int) -> None:
    """Fail with a :class:`attnlab.errors.ParameterError` that says what to do, before any training, when
    ``corpus`` is neither a corpus name nor a complete shard folder, or has more token ids than the models'
    ``vocab_size``."""
    if corpus in data.corpus_names():
        return
    if not (Path(corpus) / shards.META).is_file():
        raise ParameterError(
            f"corpus {corpus!r} is neither a corpus name ({', '.join(data.corpus_names())}) nor a folder of "
            f"token shards ({shards.META} missing). Build them once with "
            f"python -m attnlab.data.shards SOURCE --out {corpus} --tokenizer gpt2 "
            f"(SOURCE: {', '.join(shards.SOURCES)}; needs the Hugging Face "
            "hub), or pass a corpus name as the corpus parameter."
        )
    have = corpus_vocab_size(corpus)
    if have > vocab_size:
        raise ParameterError(
            f"corpus {corpus!r} has {have} token ids, the models' vocabulary only {vocab_size}: use this "
            "scale with a byte-token corpus, or a scale whose models have that vocabulary (paper)"
        )


@dataclass(frozen=True)
class RunSpec:
    """Everything that determines a training run's result; :meth:`key` identifies it (stored inside the
    result too, so a result copied into another run's folder is not taken for it)."""

    model: GPTConfig
    train: TrainConfig
    # an attnlab.data.corpora corpus name, or a folder of token shards (attnlab.data.shards)
    corpus: str = "shakespeare"

    def key(self, device: torch.device) -> str:
        blob = json.dumps(
            {
                "model": self.model.to_dict(),
                "train": self.train.to_dict(),
                "data": corpus_fingerprint(self.corpus),
                "device": device.type,
                "code": code_version(),
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:20]


def run_folder(spec: RunSpec, device: torch.device) -> Path:
    """Where the cache keeps the run ``spec`` on a device of ``device``'s type."""
    return paths.build_dir() / "runs" / spec.key(device)


def train_cached(
    spec: RunSpec,
    *,
    device: str | torch.device = "auto",
    progress: bool = True,
    label: str = "run",
    fsdp: bool = False,
    micro_batch: int | None = None,
    folder: Path | None = None,
) -> TrainResult:
    """Load the finished run from the cache, or train it (resuming an interrupted attempt) and store it.

    ``folder`` keeps the run somewhere other than its cache folder (the command line's ``--out``); ``fsdp``
    and ``micro_batch`` choose how it is computed (see :func:`attnlab.training.trainer.train`), not what."""
    ctx, dev = distributed.setup(resolve_device(device))  # under torchrun: this rank's device
    key = spec.key(dev)
    run_dir = folder if folder is not None else run_folder(spec, dev)
    result_path = run_dir / "result.pt"
    # one process at a time per run (a second identical run waits, then loads); under torchrun every rank
    # trains together, so the ranks do not lock against each other
    with exclusive(run_dir, label) if not ctx.enabled else nullcontext(False):
        is_main = ctx.is_main
        state = verified.load_or_discard(
            result_path, f"{label}: cached result not used", AGAIN, map_location=dev
        )
        if state is not None and state.get("key") != key:
            print(f"{label}: {result_path} holds another run's result (its key differs); {AGAIN}")
            verified.discard(result_path)
            state = None
        if state is not None:
            model = GPT(spec.model).to(dev)
            model.load_state_dict(state["model"])
            if is_main:
                print(f"{label}: loaded from cache ({run_dir.name})")
            return TrainResult(model, state["history"], state["timing"], cached=True)
        run_dir.mkdir(parents=True, exist_ok=True)
        if is_main:
            (run_dir / "config.json").write_text(json.dumps(spec_dict(spec)))
        with distributed.main_first():  # rank 0 prepares a corpus's files, the others then read them
            tokens = corpus_tokens(spec.corpus)
        result = run_checked(
            partial(
                train,
                spec.model,
                spec.train,
                tokens,
                device=dev,
                run_dir=run_dir,
                progress=progress,
                desc=label,
                fsdp=fsdp,
                micro_batch=micro_batch,
            ),  # a partial, not a lambda: no frame of this module runs inside the checked computation
            TRAINING_ROOTS,
            label,
        )
        if is_main:
            verified.save(
                {
                    "key": key,
                    "model": result.model.state_dict(),
                    "history": result.history,
                    "timing": result.timing,
                },  # fmt: skip
                result_path,
            )
            verified.discard(run_dir / "checkpoint.pt")
            print(
                f"{label}: trained {spec.train.steps} steps, {result.tokens_per_s:,.0f} tokens/s, "
                f"final val loss {result.final_val_loss:.3f}"
            )
        distributed.barrier()  # every rank returns once the result is stored
        return result


def spec_dict(spec: RunSpec) -> dict:
    """``spec`` as the JSON object written to ``config.json``."""
    return {"model": spec.model.to_dict(), "train": spec.train.to_dict(), "corpus": spec.corpus}


# --- a generic results cache (circuits, classifiers: anything that is not a ``train_cached`` LM run) ------


Roots = tuple[str, ...]  # module names whose import closure a result's key covers (attnlab.codekeys)


def result_key(kind: str, config: dict, data: str, code: Roots) -> str:
    """The cache key of a result: its kind, its config (JSON-serialisable), a data fingerprint and the digest
    of the import closure of the ``code`` modules that compute it."""
    if not code:
        raise ValueError(f"{kind}: a result's key needs the modules that compute it")
    blob = json.dumps(
        {"kind": kind, "config": config, "data": data, "code": code_digest(code)}, sort_keys=True
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def result_path(kind: str, config: dict, data: str = "", *, code: Roots) -> Path:
    """Where ``cached_result`` keeps a result: ``build/results/<kind>/<key>.pt``."""
    return paths.build_dir() / "results" / kind / f"{result_key(kind, config, data, code)}.pt"


def checkpoint_path(kind: str, config: dict, data: str = "", *, code: Roots) -> Path:
    """Where a long computation of ``cached_result`` keeps its checkpoint while it runs, beside its result
    (same key: a change of code or config never resumes another computation's state); removed once the
    result is stored."""
    return result_path(kind, config, data, code=code).with_suffix(".checkpoint.pt")


def cached_result(
    kind: str,
    config: dict,
    compute: Callable[[], dict],
    *,
    data: str = "",
    code: Roots | None = None,
) -> tuple[dict, bool]:
    """Load the result of ``compute()`` from ``build/results/<kind>/<key>.pt``, or compute and store it.

    The key covers ``kind``, ``config`` (a JSON-serialisable dict of everything that determines the result),
    ``data`` (a fingerprint of the input data) and the source of every module in the import closure of
    ``code`` (default: the module that defines ``compute``), so a change to any of them computes afresh; the
    key is stored inside the result and checked on loading. ``compute()`` must return a dict that
    ``torch.load(weights_only=True)`` can read back (tensors, state dicts, numbers, strings, lists and dicts
    of them); it is written atomically, so an interrupted run never leaves a half-written result. A fresh
    result is returned as read back from the file, so a first run and a cached re-run see identical objects.
    Returns ``(result, loaded_from_cache)``.
    """
    roots = code or (defining_module(compute),)
    key = result_key(kind, config, data, roots)
    path = paths.build_dir() / "results" / kind / f"{key}.pt"
    # a second identical computation waits, then loads (not under torchrun, where ranks compute together)
    with exclusive(path, kind) if not distributed.context().enabled else nullcontext(False):
        stored = verified.load_or_discard(path, f"{kind}: cached result not used", AGAIN, map_location="cpu")
        if stored is not None and stored.get("key") != key:
            print(f"{kind}: {path} holds another result (its key differs); {AGAIN}")
            verified.discard(path)
            stored = None
        if stored is not None:
            return stored["result"], True
        verified.save({"key": key, "result": run_checked(compute, roots, kind)}, path)
        verified.discard(path.with_suffix(".checkpoint.pt"))  # the computation's checkpoint, if it kept one
        # Read it back as a later run will: a result weights_only cannot load fails now, not on the re-run.
        try:
            return verified.load(path, map_location="cpu")["result"], False
        except CorruptFile:
            verified.discard(path)
            raise
