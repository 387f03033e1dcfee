"""attnlab: attention variants, metrics, data, training and plotting for four 2026 papers on self-attention.

Modules hold one concern each: ``attention`` (the variants), ``model`` (the GPT), ``data`` / ``artifacts``
(corpora fetched from package registries), ``train`` (the trainer), ``cache`` (results cache), ``metrics``,
``plotting``, ``claims``, ``scales`` (per-paper presets) and ``run`` (the papermill runner).
"""

__version__ = "0.1.0"
