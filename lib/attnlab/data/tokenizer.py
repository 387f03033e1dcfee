"""The project's two tokenizers behind one interface: UTF-8 bytes (vocabulary 256, no files needed) and
GPT-2's byte-level BPE.

Both have a ``name`` (recorded in a shard folder's ``shards.json``), a ``vocab_size``, a ``separator`` (the
tokens written between two documents) and ``encode_batch(texts)`` (one integer array per text); the byte
tokenizer also encodes one text to a tensor and decodes tokens back to text.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch


class ByteTokenizer:
    """UTF-8 bytes as tokens; documents separated by a blank line, as
    :func:`attnlab.data.corpora.load_tokens` joins them."""

    name = "byte"
    vocab_size = 256
    separator = np.frombuffer(b"\n\n", dtype=np.uint8)

    def encode(self, text: str) -> torch.Tensor:
        """The UTF-8 bytes of ``text`` as a 1-D uint8 tensor."""
        import torch

        return torch.from_numpy(np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy())

    def encode_batch(self, texts: list[str]) -> list[np.ndarray]:
        """The UTF-8 bytes of each text, as uint8 arrays."""
        return [np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy() for text in texts]

    def decode(self, tokens: Any) -> str:
        """Text from byte tokens (tensor, array or list of ints); invalid UTF-8 becomes U+FFFD."""
        import torch

        t = torch.as_tensor(tokens).detach().cpu().flatten()
        data = t.numpy().tobytes() if t.dtype == torch.uint8 else bytes(t.tolist())
        return data.decode("utf-8", errors="replace")


class GPT2Tokenizer:
    """GPT-2's byte-level BPE (``transformers.GPT2TokenizerFast``); documents separated by
    ``<|endoftext|>``."""

    def __init__(self, name_or_path: str = "gpt2", local_files_only: bool = False) -> None:
        # the ignore: transformers 5 resolves the *TokenizerFast names lazily, out of the type checker's sight
        from transformers import GPT2TokenizerFast  # type: ignore[attr-defined]

        tok = GPT2TokenizerFast.from_pretrained(name_or_path, local_files_only=local_files_only)
        if tok.backend_tokenizer.get_vocab_size(with_added_tokens=False) == 0:  # files missing: an empty BPE
            raise OSError(f"no GPT-2 tokenizer files (vocab.json, merges.txt) found for {name_or_path!r}")
        self.name = f"gpt2:{name_or_path}"
        self.vocab_size = len(tok)
        self.separator = np.array([tok.eos_token_id])
        self._backend = tok.backend_tokenizer

    def encode_batch(self, texts: list[str]) -> list[np.ndarray]:
        """The token ids of each text (no special tokens added)."""
        return [np.array(e.ids) for e in self._backend.encode_batch(texts, add_special_tokens=False)]


Tokenizer = ByteTokenizer | GPT2Tokenizer


def load_tokenizer(spec: str = "auto") -> Tokenizer:
    """``"byte"``; ``"gpt2"`` (from the hub or its cache) or a folder with GPT-2 tokenizer files, an error
    if they cannot be loaded; ``"auto"``: GPT-2's tokenizer if it is in the local Hugging Face cache, else
    bytes."""
    if spec == "byte":
        return ByteTokenizer()
    if spec != "auto":
        return GPT2Tokenizer(spec)
    try:
        return GPT2Tokenizer("gpt2", local_files_only=True)
    except (ImportError, OSError, ValueError) as err:
        print(
            f"shards: GPT-2 tokenizer unavailable ({type(err).__name__}); using byte tokens", file=sys.stderr
        )
        return ByteTokenizer()
