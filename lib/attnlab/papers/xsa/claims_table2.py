"""XSA Table 2 (arXiv 2603.09078): the zero-shot claims rows, per task and scoring and averaged, each gated
on SA alone having learned the task (its accuracy above the task's best trivial baseline,
:func:`attnlab.papers.xsa.rules.above_baseline`); the measurements are those of
:mod:`attnlab.papers.xsa.zero_shot`."""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import pandas as pd

from attnlab.papers.xsa import rules
from attnlab.papers.xsa.presets import PAPER_TABLE2_AVG, paper_task_text
from attnlab.papers.xsa.zero_shot import (
    BASELINES,
    CLAIM_SCORINGS,
    GREEDY,
    SCORING_LABELS,
    baseline_label,
    best_baseline,
)
from attnlab.runner.claims import Claim
from attnlab.runner.claims import interval as _ci
from attnlab.runner.stats import estimate
from attnlab.runner.verdicts import Verdict, paired


def _by_seed(series: pd.Series) -> dict[Hashable, float]:
    """``{seed: value}`` of a Series indexed by seed."""
    return {seed: float(v) for seed, v in series.items()}


def task_gates(task: pd.DataFrame) -> dict[str, Verdict | None]:
    """Table 2's gate of each model (SA, XSA) on one task under one scoring (the rows of ``zero_shot`` for
    them): its items answered correctly (seed mean, rounded) above the best of the task's trivial baselines
    and its own no-prompt baseline (seed mean), by :func:`~attnlab.papers.xsa.rules.above_baseline`. Only
    SA's gates a claim (the baseline must have learned the task); XSA's is shown, never a gate."""
    n = int(task["n"].iloc[0])
    gates = {}
    for kind in ("sa", "xsa"):
        rows = task[task["kind"] == kind]
        baselines = {b: float(rows[b].mean()) for b in BASELINES}
        gates[kind] = rules.above_baseline(round(rows["correct"].mean()), n, baselines)
    return gates


def _baseline_text(task: pd.DataFrame) -> str:
    """The task's best trivial baseline (the no-prompt one: the higher model's seed mean), named, in
    percent."""
    baselines = {b: float(task.groupby("kind")[b].mean().max()) for b in BASELINES}
    _, value = best_baseline(baselines)
    return f"best trivial baseline {100 * value:.1f} %: {baseline_label(baselines, value)}"


def table2_rows(zero_shot: pd.DataFrame) -> list[Claim]:
    """Table 2's rows: LAMBADA's (a task scored ``greedy``) once, then under each scoring of
    :data:`~attnlab.papers.xsa.zero_shot.CLAIM_SCORINGS` a row per multiple-choice task and the average over
    the tasks where SA passes its gate (:func:`task_gates`), LAMBADA's greedy accuracy among them (the
    paper's average, too, takes LAMBADA's one accuracy beside the others' choice scores). Each row gives the
    paper's numbers on its task beside ours."""
    greedy = {task: _task_claim(task, t) for task, t in _by_task(zero_shot, GREEDY)}
    rows = [claim for claim, _ in greedy.values()]
    for scoring in CLAIM_SCORINGS:
        scored = {task: _task_claim(task, t) for task, t in _by_task(zero_shot, scoring)}
        rows += [claim for claim, _ in scored.values()]
        rows.append(_average_claim(scoring, scored | greedy))
    return rows


def _by_task(zero_shot: pd.DataFrame, scoring: str) -> list[tuple[str, pd.DataFrame]]:
    """The rows of ``zero_shot`` under ``scoring``, per task, in the table's order."""
    scored = zero_shot[zero_shot["scoring"] == scoring]
    return [(str(task), t) for task, t in scored.groupby("task", sort=False)]


def _task_claim(task: str, t: pd.DataFrame) -> tuple[Claim, pd.DataFrame | None]:
    """One task's claims row under one scoring (``t``: its rows of ``zero_shot``), and each model's accuracy
    (points) per seed where SA passes its gate, for the average (else None)."""
    n = int(t["n"].iloc[0])
    how = SCORING_LABELS[str(t["scoring"].iloc[0])]
    gates = task_gates(t)
    points = 100 * t.pivot_table(index="seed", columns="kind", values="accuracy")
    xsa, sa = _by_seed(points["xsa"]), _by_seed(points["sa"])
    verdict = rules.verdict_zero_shot_task(xsa, sa, gates["sa"])
    above = "above" if gates["xsa"] is None else "not above"
    claim = Claim(
        "Table 2", f"XSA improves zero-shot accuracy ({task}, {how})", f"SA -> XSA: {paper_task_text(task)}",
        f"SA {points['sa'].mean():.1f} %, XSA {points['xsa'].mean():.1f} % ({above} its baselines); "
        f"{_baseline_text(t)}, chance {100 * t['chance'].iloc[0]:.1f} %, {n} items; gain "
        f"{_ci(estimate(paired(xsa, sa)), 2)} points over {len(xsa)} seed(s)",
        verdict, unit="trained model",
    )  # fmt: skip
    return claim, points if gates["sa"] is None else None


def _average_claim(scoring: str, tasks: Mapping[str, tuple[Claim, pd.DataFrame | None]]) -> Claim:
    """The average row under ``scoring``: the gain averaged, per seed, over the ``tasks`` (task -> its claims
    row and points, :func:`_task_claim`) where SA passes its gate."""
    testable = {task: points for task, (_, points) in tasks.items() if points is not None}
    if testable:
        average = sum(testable.values()) / len(testable)  # per seed, the mean over the testable tasks
        xsa, sa = _by_seed(average["xsa"]), _by_seed(average["sa"])
    else:
        xsa, sa = {}, {}
    verdict = rules.verdict_zero_shot_average(xsa, sa, len(testable))
    paper = ", ".join(f"{k} {b:.2f} -> {x:.2f} ({x - b:+.2f})" for k, (b, x) in PAPER_TABLE2_AVG.items())
    which = f" ({', '.join(testable)}): {_ci(verdict, 2)} points" if testable else ": none"
    ours = f"gain averaged over the {len(testable)} of {len(tasks)} tasks where SA is above its trivial "
    ours += f"baselines{which}"
    claim = f"XSA improves average zero-shot accuracy ({SCORING_LABELS[scoring]})"
    return Claim("Table 2", claim, f"avg: {paper}", ours, verdict, unit="trained model")
