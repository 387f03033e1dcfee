"""A second floating-point realisation (``attnlab.realisation``) and the stability comparison
(``attnlab.runner.stability``): the realisation trains the same model to other last bits, keeps its own cache
and figures, and the comparison finds the verdicts that flip, refusing one realisation twice."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from attnlab import paths, realisation
from attnlab.errors import ParameterError
from attnlab.model import GPTConfig
from attnlab.runner import stability
from attnlab.training.trainer import TrainConfig, train

MODEL = GPTConfig(n_layer=2, d_model=32, n_head=2, head_dim=16, block_size=32, attn="sa")
CFG = TrainConfig(steps=6, batch_size=4, seq_len=32, lr=3e-3, warmup_steps=2, eval_every=3, eval_batches=2)


def _data() -> dict[str, torch.Tensor]:
    text = torch.randint(0, 40, (4000,), generator=torch.Generator().manual_seed(0), dtype=torch.uint8)
    return {"train": text[:3500], "validation": text[3500:]}


def test_an_unknown_realisation_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(realisation.ENV, "thirds")
    with pytest.raises(ParameterError, match="'thirds' is no realisation; use one of 'half-batches'"):
        realisation.name()


def test_half_batches_split_every_batch_in_two_and_refuse_an_odd_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert realisation.micro_batch(8) is None
    monkeypatch.setenv(realisation.ENV, "half-batches")
    assert realisation.micro_batch(8) == 4
    with pytest.raises(ParameterError, match="splits a batch in 2, but a batch has 5 rows"):
        realisation.micro_batch(5)


def test_the_second_realisation_keeps_its_own_cache_and_figures(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "b"))
    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path / "f"))
    assert paths.build_dir() == tmp_path / "b"
    monkeypatch.setenv(realisation.ENV, "half-batches")
    assert paths.build_dir() == tmp_path / "b" / "realisations" / "half-batches"
    assert paths.figures_dir() == tmp_path / "f" / "realisations" / "half-batches"


def test_half_batches_train_the_same_model_to_other_last_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    first = train(MODEL, CFG, _data(), device="cpu", progress=False)
    monkeypatch.setenv(realisation.ENV, "half-batches")
    second = train(MODEL, CFG, _data(), device="cpu", progress=False)
    a, b = first.history["train_loss"], second.history["train_loss"]
    assert a != b  # another realisation: the sums run in another order
    assert a == pytest.approx(b, rel=1e-4)  # of the same computation
    explicit = train(MODEL, CFG, _data(), device="cpu", progress=False, micro_batch=4)
    assert explicit.history["train_loss"] == a  # an explicit micro_batch is the caller's choice


def _table(verdicts: list[str], estimates: list[float], units: list[str] | None = None) -> pd.DataFrame:
    n = len(verdicts)
    return pd.DataFrame(
        {
            "figure": ["Fig. 1"] * n,
            "claim": ["c"] * (n - 1) + ["d"],
            "verdict": verdicts,
            "estimate": estimates,
            "unit": units or ["trained model"] * n,
        }
    )


def test_compare_finds_the_flipped_rows_of_repeated_claims_and_ignores_other_units() -> None:
    first = _table(
        ["holds", "inconclusive", "holds"], [1.0, 2.0, 3.0], ["trained model", "trained model", "layer"]
    )
    second = _table(
        ["holds", "holds", "does not hold"], [1.1, 2.1, 3.3], ["trained model", "trained model", "layer"]
    )
    out = stability.compare(first, second)
    assert list(out["flipped"]) == [False, True]  # the second "c" flipped; the layer row is not compared
    assert list(out["second"]) == ["holds", "holds"]
    s = stability.summary({"x": out})
    assert s.loc[0, "flipped"] == 1 and s.loc[0, "rows"] == 2 and s.loc[0, "high"] < 1
    text = stability.markdown({"x": out}, "cpu")
    assert "| x | 2 | 1 |" in text and "- x, Fig. 1: c — inconclusive / holds" in text


def test_compare_refuses_one_realisation_twice_and_different_tables() -> None:
    first = _table(["holds", "holds"], [1.0, 2.0])
    with pytest.raises(ValueError, match="one realisation"):
        stability.compare(first, first.copy())
    other = first.assign(claim=["e", "d"])
    with pytest.raises(ValueError, match="different trained-model rows"):
        stability.compare(first, other)
