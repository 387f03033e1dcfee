"""Results cache: an unchanged run is loaded, a changed one retrained."""

from dataclasses import replace

import pytest
import torch

from attnlab.model import GPTConfig
from attnlab.training import cache
from attnlab.training.trainer import TrainConfig

SPEC = cache.RunSpec(
    GPTConfig(n_layer=1, d_model=16, n_head=2, head_dim=8, block_size=16),
    TrainConfig(steps=4, batch_size=2, seq_len=16, warmup_steps=1, eval_every=2, eval_batches=1),
    corpus="shakespeare",
)


@pytest.fixture
def fake_corpus(monkeypatch, tmp_path):
    calls = []

    def load_tokens(name):
        calls.append(name)
        text = torch.arange(2000, dtype=torch.int64).remainder(50).to(torch.uint8)
        return {"train": text, "validation": text[:500]}

    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path))
    monkeypatch.setattr(cache.data, "load_tokens", load_tokens)
    monkeypatch.setattr(cache.data, "fingerprint", lambda name: "fixed")
    return calls


def test_second_run_is_loaded_not_retrained(fake_corpus, tmp_path, capsys):
    first = cache.train_cached(SPEC, device="cpu", progress=False)
    assert not first.cached and "trained 4 steps" in capsys.readouterr().out
    second = cache.train_cached(SPEC, device="cpu", progress=False)
    assert second.cached and "loaded from cache" in capsys.readouterr().out
    assert len(fake_corpus) == 1  # the data was not even read the second time
    assert second.history == first.history
    for p, q in zip(first.model.parameters(), second.model.parameters(), strict=True):
        assert torch.equal(p, q)
    run_dirs = list((tmp_path / "runs").iterdir())
    assert len(run_dirs) == 1 and not (run_dirs[0] / "checkpoint.pt").exists()


def test_key_changes_with_config_data_and_code(fake_corpus, monkeypatch):
    cpu = torch.device("cpu")
    key = SPEC.key(cpu)
    assert replace(SPEC, train=replace(SPEC.train, seed=1)).key(cpu) != key
    assert replace(SPEC, model=replace(SPEC.model, attn="xsa")).key(cpu) != key
    monkeypatch.setattr(cache.data, "fingerprint", lambda name: "other data")
    assert SPEC.key(cpu) != key
    monkeypatch.setattr(cache.data, "fingerprint", lambda name: "fixed")
    monkeypatch.setattr(cache, "code_version", lambda: "edited")
    assert SPEC.key(cpu) != key
