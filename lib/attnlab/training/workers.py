"""Independent runs trained at once in worker processes, each on its share of the CPU cores: on a CPU several
small runs of few threads each use the cores better than one run after another on all of them.

:func:`run_in_workers` hands picklable jobs to a module-level function in ``spawn``-started processes (no fork
of a process that holds OpenMP threads), each set to an equal share of the cores with
``torch.set_num_threads``, with a progress bar over the jobs completed. The jobs store what they compute
(a results cache), so the caller's own calls that follow load it.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from typing import TypeVar

import torch
from tqdm import tqdm

from attnlab.errors import ParameterError

J = TypeVar("J")
T = TypeVar("T")

_memo: dict[str, object] = {}  # what this worker process loaded once: the last key's value only


def loaded_once(key: str, load: Callable[[], T]) -> T:
    """``load()``'s value, computed once per process for ``key`` (e.g. a setup's ``repr``) and kept while the
    jobs a worker runs share it: a worker's data, encoded once for all the runs it trains. A new key drops
    the old value."""
    if key not in _memo:
        _memo.clear()
        _memo[key] = load()
    return _memo[key]  # type: ignore[return-value]  # stored by this function from load() for this key


def available_cores() -> int:
    """The CPU cores this process may run on: its affinity set where the platform has one (Linux), else
    ``os.cpu_count()`` (macOS, Windows), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def check_workers(workers: object) -> int:
    """The ``workers`` parameter of a notebook, checked: 0 (one per available core) or a positive count of at
    most the available cores (more processes than cores would only share them, each run slower)."""
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 0:
        raise ParameterError(f"workers must be a non-negative integer; got {workers!r}")
    cores = available_cores()
    if workers > cores:
        raise ParameterError(
            f"workers={workers}: this process may use {cores} CPU core(s); give at most {cores}, or 0 for "
            "one per core"
        )
    return workers


def worker_threads(workers: int) -> int:
    """Each of ``workers`` processes' share of the available cores, at least one thread."""
    return max(1, available_cores() // max(1, workers))


def _die_with(parent: int) -> None:
    """End this process when ``parent`` dies (Linux: ``prctl(PR_SET_PDEATHSIG, SIGTERM)``), so that workers
    never outlive a killed notebook kernel or runner as orphans that hold the cores; elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the call above: nothing would signal us
        os._exit(1)


def _start_worker(threads: int, parent: int) -> None:
    """Initialise a worker process: it dies with ``parent`` (:func:`_die_with`) and runs every job on
    ``threads`` torch threads."""
    _die_with(parent)
    torch.set_num_threads(threads)


def _terminate(pool: ProcessPoolExecutor) -> None:
    """End ``pool``'s worker processes now, what they run included (the executor has no public call)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()


def run_in_workers(
    fn: Callable[[J], object],
    jobs: Sequence[J],
    workers: int,
    *,
    threads: int | None = None,
    desc: str = "runs",
) -> bool:
    """Call ``fn(job)`` for every job of ``jobs`` in ``min(workers, len(jobs))`` worker processes, each with
    ``threads`` torch threads (None: an equal share of the available cores, :func:`worker_threads`), showing
    a progress bar over the jobs completed; what ``fn`` returns is dropped (it stores its result). ``fn``
    must be a module-level function and the jobs picklable: the workers import ``fn``'s module afresh and see
    nothing this process changed at run time (a monkeypatch, say). With fewer than two workers or two jobs
    nothing runs and False is returned: the caller computes the jobs itself.

    A job that raises cancels the jobs not started yet; those running finish (storing their results), then
    its exception is raised here. An interrupt (or any error here) ends the worker processes at once: what
    they ran resumes from its checkpoints, if it keeps any."""
    workers = min(workers, len(jobs))
    if workers < 2:
        return False
    threads = worker_threads(workers) if threads is None else threads
    context = multiprocessing.get_context("spawn")  # no fork of a process that holds OpenMP threads
    pool = ProcessPoolExecutor(
        workers, mp_context=context, initializer=_start_worker, initargs=(threads, os.getpid())
    )
    failed: Future[object] | None = None
    try:
        futures = [pool.submit(fn, job) for job in jobs]
        label = f"{desc}: {len(jobs)} in {workers} processes x {threads} thread(s)"
        with tqdm(total=len(jobs), desc=label, unit="run") as bar:
            for future in as_completed(futures):
                bar.update()
                if future.exception() is not None:
                    failed = future
                    break
        pool.shutdown(cancel_futures=True)
    except BaseException:
        _terminate(pool)
        raise
    if failed is not None:
        failed.result()
    return True
