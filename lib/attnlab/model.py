"""A GPT-style causal language model (pre-LayerNorm, nanoGPT shape) whose attention kind is set per layer.

``GPT.run_with_cache`` returns, from the same forward pass that produced the logits, each layer's attention
intermediates (q, k, v, pattern, y, z): the metrics read these instead of re-implementing the model.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal, cast, overload

import torch
import torch.nn.functional as F
from torch import nn

from attnlab import fields
from attnlab.attention import ATTENTION_KINDS
from attnlab.errors import ConfigError


@dataclass(frozen=True)
class GPTConfig:
    """Model shape. ``attn`` is one kind for every layer or a tuple with one kind per layer; ``head_dim`` is
    one head dim for every layer or a tuple with one per layer. ``norm=False`` removes every LayerNorm (S-D
    attention, arXiv 2605.18826, trains without it)."""

    vocab_size: int = 256
    block_size: int = 256  # longest context
    n_layer: int = 4
    d_model: int = 128
    n_head: int = 4
    head_dim: int | tuple[int, ...] = 32  # set independently of d_model / n_head (XSA paper, Table 1)
    n_kv_head: int | None = None  # grouped-query attention; None = n_head
    d_ff: int | None = None  # None = 4 * d_model
    pos: Literal["rope", "learned"] = "rope"
    embed_norm: bool = False  # LayerNorm right after the token embedding (XSA paper setup)
    attn: str | tuple[str, ...] = "sa"
    n_sink: int = 0  # learned attention-sink tokens prepended to every sequence (XSA paper, Fig. 6)
    n_classes: int = 0  # > 0: a classification head on the last token's final state (``GPT.classify``)
    bias: bool = False
    tie_embeddings: bool = True
    norm: bool = True  # False: ln_1, ln_2, ln_f and ln_emb are identities

    def __post_init__(self) -> None:
        fields.positive_ints(self, "vocab_size", "block_size", "n_layer", "d_model", "n_head")
        fields.optional_positive_ints(self, "n_kv_head", "d_ff")
        fields.non_negative_ints(self, "n_sink", "n_classes")
        fields.bools(self, "embed_norm", "bias", "tie_embeddings", "norm")
        fields.one_of(self, "pos", ("rope", "learned"))
        if not isinstance(self.attn, (str, tuple, list)):
            raise ConfigError(f"GPTConfig.attn must be a kind or one kind per layer, got {self.attn!r}")
        kinds = self.layer_kinds
        unknown = sorted(set(kinds) - set(ATTENTION_KINDS))
        if unknown:
            raise ConfigError(f"GPTConfig.attn: unknown kind(s) {unknown}; known: {sorted(ATTENTION_KINDS)}")
        if len(kinds) != self.n_layer:
            raise ConfigError(
                f"GPTConfig.attn names {len(kinds)} layers, the model has n_layer={self.n_layer}"
            )
        if not isinstance(self.head_dim, (int, tuple, list)) or isinstance(self.head_dim, bool):
            raise ConfigError(
                f"GPTConfig.head_dim must be a positive integer or one per layer, got {self.head_dim!r}"
            )
        dims = self.layer_head_dims
        if len(dims) != self.n_layer:
            raise ConfigError(
                f"GPTConfig.head_dim names {len(dims)} layers, the model has n_layer={self.n_layer}"
            )
        if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
            raise ConfigError(f"GPTConfig.head_dim must be positive integers, got {self.head_dim!r}")
        if self.pos == "rope" and any(d % 2 for d in dims):
            raise ConfigError(
                f"GPTConfig.head_dim must be even with RoPE (pos='rope'), got {self.head_dim!r}"
            )
        if self.n_head % self.kv_heads:
            raise ConfigError(
                f"GPTConfig.n_head={self.n_head} is not a multiple of n_kv_head={self.kv_heads}"
            )

    @property
    def layer_kinds(self) -> tuple[str, ...]:
        return (self.attn,) * self.n_layer if isinstance(self.attn, str) else tuple(self.attn)

    @property
    def layer_head_dims(self) -> tuple[int, ...]:
        return (self.head_dim,) * self.n_layer if isinstance(self.head_dim, int) else tuple(self.head_dim)

    @property
    def kv_heads(self) -> int:
        return self.n_kv_head or self.n_head

    def to_dict(self) -> dict:
        return asdict(self)


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        d_ff = cfg.d_ff or 4 * cfg.d_model
        self.up = nn.Linear(cfg.d_model, d_ff, bias=cfg.bias)
        self.down = nn.Linear(d_ff, cfg.d_model, bias=cfg.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


def layer_norm(cfg: GPTConfig) -> nn.Module:
    """A LayerNorm over d_model, or the identity when ``cfg.norm`` is False."""
    return nn.LayerNorm(cfg.d_model, bias=cfg.bias) if cfg.norm else nn.Identity()


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig, kind: str, layer: int = 0) -> None:
        super().__init__()
        self.ln_1 = layer_norm(cfg)
        self.attn = ATTENTION_KINDS[kind](cfg, layer)
        self.ln_2 = layer_norm(cfg)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor, capture: dict | None = None) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), capture)
        return x + self.mlp(self.ln_2(x))


if TYPE_CHECKING:

    class _Blocks(nn.ModuleList):
        """``GPT.blocks`` as the type checker sees it: an ``nn.ModuleList`` whose items are :class:`Block`."""

        def __iter__(self) -> Iterator[Block]: ...

        @overload
        def __getitem__(self, idx: slice) -> nn.ModuleList: ...
        @overload
        def __getitem__(self, idx: int) -> Block: ...
        def __getitem__(self, idx: int | slice) -> Block | nn.ModuleList: ...


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.wpe = nn.Embedding(cfg.block_size, cfg.d_model) if cfg.pos == "learned" else None
        self.ln_emb = layer_norm(cfg) if cfg.embed_norm else None
        self.blocks = cast(
            "_Blocks", nn.ModuleList(Block(cfg, kind, layer) for layer, kind in enumerate(cfg.layer_kinds))
        )
        self.ln_f = layer_norm(cfg)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.cls_head = nn.Linear(cfg.d_model, cfg.n_classes) if cfg.n_classes else None
        if cfg.tie_embeddings:
            self.lm_head.weight = self.wte.weight
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2: scale the residual projections by depth
            if name.endswith(("o_proj.weight", "down.weight")):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))
        # Sinks are drawn last, so every sink count starts from the same shared weights (XSA paper, Fig. 6).
        self.sink = nn.Parameter(0.02 * torch.randn(cfg.n_sink, cfg.d_model)) if cfg.n_sink else None

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def hidden(self, idx: torch.Tensor, cache: list[dict] | None = None) -> torch.Tensor:
        """Final-LayerNorm states (``norm=False``: final states) of the real tokens, (B, T, D). If ``cache``
        is a list, one dict of attention intermediates per layer is appended to it; with learned sink tokens,
        these occupy the first ``n_sink`` positions of every captured tensor (T + n_sink long)."""
        B, T = idx.shape
        if T > self.cfg.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.cfg.block_size}")
        x = self.wte(idx)  # (B, T, D)
        if self.wpe is not None:
            x = x + self.wpe(torch.arange(T, device=idx.device))
        if self.ln_emb is not None:
            x = self.ln_emb(x)
        if self.sink is not None:
            x = torch.cat((self.sink.expand(B, -1, -1), x), dim=1)  # (B, n_sink + T, D)
        for block in self.blocks:
            capture: dict | None = None
            if cache is not None:
                capture = {}
                cache.append(capture)
            x = block(x, capture)
        return self.ln_f(x[:, self.cfg.n_sink :])

    def forward(
        self,
        idx: torch.Tensor,
        targets: torch.Tensor | None = None,
        cache: list[dict] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """idx (B, T) token ids -> next-token logits (B, T, V) and, given targets (B, T), the mean
        cross-entropy. ``cache``: as in ``hidden``."""
        logits = self.lm_head(self.hidden(idx, cache))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())
        return logits, loss

    def classify(
        self, idx: torch.Tensor, last: torch.Tensor | None = None, cache: list[dict] | None = None
    ) -> torch.Tensor:
        """Class logits (B, n_classes) from the final state of each sequence's last token: position
        ``last[b]`` (for right-padded batches) or T - 1. ``cache``: as in ``hidden``."""
        if self.cls_head is None:
            raise ValueError("this model has no classification head (GPTConfig.n_classes = 0)")
        h = self.hidden(idx, cache)  # (B, T, D)
        if last is None:
            return self.cls_head(h[:, -1])
        return self.cls_head(h[torch.arange(len(idx), device=idx.device), last])

    def run_with_cache(self, idx: torch.Tensor) -> tuple[torch.Tensor, list[dict]]:
        """Logits and the per-layer intermediates (q, k, v, pattern, y, z) of the same forward pass."""
        cache: list[dict] = []
        logits, _ = self(idx, cache=cache)
        return logits, cache

    def param_group(self, name: str) -> str:
        """The learning-rate group of a parameter: embed, mlp, norm or head here; an attention layer's
        parameters are in the group its variant declares (``CausalSelfAttention.param_group``: qk, ov, or
        e.g. S-D's interaction)."""
        if name.startswith(("wte", "wpe", "sink")):
            return "embed"
        block, _, rest = name.partition(".attn.")
        if rest and block.startswith("blocks."):
            return self.blocks[int(block.removeprefix("blocks."))].attn.param_group(rest)
        if ".mlp." in name:
            return "mlp"
        if name.startswith(("lm_head", "cls_head")):
            return "head"
        return "norm"

    def num_params(self, non_embedding: bool = True) -> int:
        """Parameter count; by default without the embeddings (token, position, sinks). A tied head counts
        once."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= sum(p.numel() for name, p in self.named_parameters() if self.param_group(name) == "embed")
        return n
