"""attnlab: attention variants, metrics, data, training and plotting for four 2026 papers on self-attention.

Modules hold one concern each: ``attention`` (the variants), ``model`` (the GPT), ``data`` / ``artifacts``
(corpora fetched from package registries), ``shards`` (large corpora as memory-mapped token shards), ``train``
(the trainer), ``distributed`` and ``launch`` (training under ``torchrun``, ``python -m attnlab.training``),
``cache`` (results cache), ``metrics``, ``faithfulness`` / ``sinks`` (contribution-weight interventions and
sink analyses), ``routing`` (S-D truncations and head statistics), ``hf`` (Hugging Face models: capture and
intervention), ``plotting``, ``claims``, ``papers`` (per-paper presets and experiments), ``run`` (the
papermill runner) and ``gpu_check`` / ``trainer_bench`` (throughput checks).
"""

__version__ = "0.1.0"
