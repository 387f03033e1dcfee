"""Independent jobs in worker processes (attnlab.training.workers): nothing starts for fewer than two workers
or jobs, every job runs once in a spawned process with its share of the threads, and a failing job's error
reaches the caller."""

import json
import os
from pathlib import Path

import pytest
import torch

from attnlab.training import workers


def _record(job: tuple[Path, int]) -> None:
    """A job: write this process's id and torch thread count into ``folder/<n>.json``."""
    folder, n = job
    (folder / f"{n}.json").write_text(json.dumps({"pid": os.getpid(), "threads": torch.get_num_threads()}))


def _fail_on_two(job: tuple[Path, int]) -> None:
    if job[1] == 2:
        raise ValueError("job 2 failed")
    _record(job)


def _must_not_run(job: object) -> None:
    raise AssertionError("no job should run")


def test_nothing_runs_for_fewer_than_two_workers_or_jobs():
    assert workers.run_in_workers(_must_not_run, [1, 2, 3], 1) is False
    assert workers.run_in_workers(_must_not_run, [1, 2, 3], 0) is False
    assert workers.run_in_workers(_must_not_run, [1], 4) is False
    assert workers.run_in_workers(_must_not_run, [], 4) is False


def test_every_job_runs_once_in_a_worker_with_its_share_of_the_threads(tmp_path, monkeypatch):
    monkeypatch.setattr(workers, "available_cores", lambda: 4)
    assert [workers.worker_threads(n) for n in (2, 8, 0)] == [2, 1, 4]
    assert workers.run_in_workers(_record, [(tmp_path, n) for n in range(5)], 2) is True
    records = [json.loads((tmp_path / f"{n}.json").read_text()) for n in range(5)]
    pids = {r["pid"] for r in records}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2
    assert {r["threads"] for r in records} == {2}  # 4 cores, 2 workers
    # an explicit count wins, and more workers than jobs start only one per job
    assert workers.run_in_workers(_record, [(tmp_path, n) for n in range(2)], 8, threads=1)
    assert {json.loads((tmp_path / f"{n}.json").read_text())["threads"] for n in range(2)} == {1}


def test_a_failing_job_raises_here(tmp_path):
    with pytest.raises(ValueError, match="job 2 failed"):
        workers.run_in_workers(_fail_on_two, [(tmp_path, n) for n in range(4)], 2, threads=1)
    assert (tmp_path / "0.json").is_file()  # ran before the failure


def test_available_cores_falls_back_to_the_cpu_count(monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert workers.available_cores() == 3
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert workers.available_cores() == 1
