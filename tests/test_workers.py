"""Independent jobs in worker processes (attnlab.training.workers): nothing starts for fewer than two workers
or jobs, every job runs once in a spawned process with its share of the threads, and a failing job's error
reaches the caller."""

import json
import os
import sys
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


_PARENT = """
import sys, time
sys.path.insert(0, {tests!r})
from attnlab.training import workers
import test_workers
workers.run_in_workers(test_workers.sleep_and_record, [{folder!r} + "/a", {folder!r} + "/b"], 2, threads=1)
"""


def sleep_and_record(path: str) -> None:
    """A job that records its process id, then runs far longer than the test waits."""
    import time

    Path(path).write_text(str(os.getpid()))
    time.sleep(120)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_workers_die_with_a_killed_parent(tmp_path):
    import signal
    import subprocess
    import time

    script = _PARENT.format(tests=str(Path(__file__).parent), folder=str(tmp_path))
    parent = subprocess.Popen([sys.executable, "-c", script])
    files = [tmp_path / "a", tmp_path / "b"]
    deadline = time.monotonic() + 120
    while not all(f.is_file() and f.read_text() for f in files):
        assert time.monotonic() < deadline and parent.poll() is None, "the workers never started"
        time.sleep(0.2)
    pids = [int(f.read_text()) for f in files]
    parent.send_signal(signal.SIGKILL)  # as when a notebook kernel is killed: no clean-up code runs
    parent.wait()
    deadline = time.monotonic() + 20
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in _state(p)]
    assert alive == [], f"workers {alive} outlived their parent"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return "Z"
