"""Provenance records (``attnlab.runner.provenance``): what the runner writes per published run, and the page
built from them, which marks a run on shared cores as an upper bound and reports a damaged record."""

from __future__ import annotations

import datetime as dt
import json
import time

import pytest

from attnlab.runner import provenance


def test_the_load_sampler_samples_at_entry_exit_and_between() -> None:
    with provenance.LoadSampler(every=0.05) as load:
        time.sleep(0.2)
    assert len(load.samples) >= 3
    assert load.peak is not None and load.mean is not None and load.peak >= load.mean >= 0


def _record(tmp_path, monkeypatch: pytest.MonkeyPatch, mean: float) -> dict:
    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    load = provenance.LoadSampler()
    load.samples = [mean, mean]
    path = provenance.write_record(
        "cpu", "xsa", dt.datetime(2026, 12, 7, 21, 0, tzinfo=dt.UTC), 12.34, load, "x"
    )
    assert path == tmp_path / "cpu" / "provenance" / "xsa.json"
    return json.loads(path.read_text())


def test_a_record_names_the_commit_machine_minutes_and_load(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = _record(tmp_path, monkeypatch, 1.0)
    assert record["minutes"] == 12.3 and record["started"] == "2026-12-07 21:00 UTC"
    assert record["commit"] and len(record["commit"]) == 7  # the tests run in the checkout
    assert record["cores"] >= 1 and record["cpu"] and record["realisation"] == "default"
    row = provenance.page(("cpu",))
    assert "| xsa | `" in row and "12.3" in row


def test_a_run_on_shared_cores_is_marked_an_upper_bound(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    cores = _record(tmp_path, monkeypatch, 0.0)["cores"]
    _record(tmp_path, monkeypatch, cores + 3.0)
    assert "an upper bound" in provenance.page(("cpu",))
    _record(tmp_path, monkeypatch, cores * 1.0)
    assert "free cores" in provenance.page(("cpu",))


def test_a_damaged_record_is_reported_not_dropped(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    _record(tmp_path, monkeypatch, 1.0)
    (tmp_path / "cpu" / "provenance" / "qk_speed.json").write_text("{not json")
    text = provenance.page(("cpu",))
    assert "| qk_speed | unreadable" in text and "| xsa |" in text


def test_a_run_without_a_record_gets_one_from_its_log_values(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    argv = [
        "--record",
        "qk_speed",
        "--commit",
        "86beff6",
        "--started",
        "2026-12-07T21:02",
        "--minutes",
        "70.5",
    ]
    with pytest.raises(SystemExit):  # the load it ran under is required
        provenance.main(argv)
    assert provenance.main([*argv, "--load", "2.1", "4.0"]) == 0
    record = json.loads((tmp_path / "cpu" / "provenance" / "qk_speed.json").read_text())
    assert record["commit"] == "86beff6" and record["load_mean"] == 3.05 and record["load_peak"] == 4.0
