"""XSA Table 2's scoring and gate (attnlab.papers.xsa.zero_shot): length-normalised and unconditional-
normalised likelihoods pick the answers the summed likelihood's preference for short answers hides, and a
task is judged only where a model beats its best trivial baseline, not merely chance (the gate,
attnlab.papers.xsa.claims.above_baseline)."""

import math

import pandas as pd
import pytest
import torch

from attnlab.data import artifacts
from attnlab.data.tasks import TASKS, MultipleChoice, choice_logprobs
from attnlab.data.tasks import accuracy as summed_accuracy
from attnlab.model import GPT, GPTConfig
from attnlab.papers.xsa import claims as xc
from attnlab.papers.xsa import experiment as xsa_experiment
from attnlab.papers.xsa import zero_shot as zs
from attnlab.runner.verdicts import NOT_TESTABLE, above_chance


def _item(choices: tuple[str, ...], answer: int, prompt: str = "Q:") -> MultipleChoice:
    return MultipleChoice(prompt, choices, answer)


def test_per_byte_picks_the_long_correct_answer_the_summed_score_misses():
    """A long correct answer with the higher likelihood per byte but the lower summed one."""
    items = [_item((" a", " abcdefgh"), 1)]
    conditional = [[-4.0, -9.0]]  # per byte: -2.0 vs -1.0
    unconditional = [[-1.0, -1.0]]
    assert zs.accuracy(items, conditional, unconditional, "sum") == 0.0
    assert zs.accuracy(items, conditional, unconditional, "per_byte") == 1.0
    assert zs.scores([-4.0, -9.0], [0.0, 0.0], zs.choice_bytes(items[0]), "per_byte") == [-2.0, -1.0]


def test_unconditional_scoring_removes_the_answers_prior():
    """A common answer that is likely whatever the prompt says, and a rare one that the prompt makes much more
    likely: only the unconditional-normalised score prefers the rare, correct one."""
    items = [_item((" yes", " nope"), 1)]
    conditional, unconditional = [[-3.0, -5.0]], [[-1.0, -9.0]]
    assert zs.accuracy(items, conditional, unconditional, "sum") == 0.0
    assert zs.accuracy(items, conditional, unconditional, "per_byte") == 0.0
    assert zs.accuracy(items, conditional, unconditional, "unconditional") == 1.0
    with pytest.raises(ValueError, match="unknown scoring"):
        zs.scores([0.0], [0.0], [1], "mean")


def test_a_tie_earns_fractional_credit_under_every_scoring():
    items = [_item((" ab", " cd"), 0)]
    for scoring in zs.SCORINGS:
        assert zs.accuracy(items, [[-2.0, -2.0]], [[-1.0, -1.0]], scoring) == 0.5


def _yes_no(no_answers: int, n: int = 300) -> list[MultipleChoice]:
    """strategyqa-like items: " Yes" / " No", the answer " No" in ``no_answers`` of ``n``."""
    return [_item((" Yes", " No"), 1 if k < no_answers else 0) for k in range(n)]


def test_trivial_baselines_of_a_yes_no_task():
    items = _yes_no(167)
    b = zs.trivial_baselines(items)
    assert b["chance"] == 0.5
    assert b["shortest"] == pytest.approx(167 / 300) and b["longest"] == pytest.approx(133 / 300)
    assert b["majority_answer"] == pytest.approx(167 / 300)
    # equal lengths: the shortest-answer strategy is a coin flip
    assert zs.trivial_baselines([_item((" ab", " cd"), 0)])["shortest"] == 0.5
    # the most frequent answer where it is offered, at random elsewhere
    mixed = [_item((" A", " B"), 0), _item((" A", " C"), 0), _item((" D", " E", " F"), 2)]
    assert zs.trivial_baselines(mixed)["majority_answer"] == pytest.approx((1 + 1 + 1 / 3) / 3)


def test_the_gate_refuses_accuracy_at_the_shortest_choice_rate():
    """The issue's strategyqa: 167 of 300 right is the shortest-choice rate. The old gate (chance) let it
    through by 1e-4; the best trivial baseline refuses it and says which baseline it is."""
    baselines = {**zs.trivial_baselines(_yes_no(167)), "no_prompt": 0.5}
    assert above_chance(167, 300, 0.5) is None  # the old gate: "above chance"
    gate = xc.above_baseline(167, 300, baselines)
    assert gate is not None and gate.word == "not testable here"
    assert gate.null == pytest.approx(167 / 300) and "shortest" in gate.why and gate.rule.startswith("gate")
    assert xc.above_baseline(215, 300, baselines) is None  # well above every baseline
    # the sva_linzen: 63-65 % against a shortest-choice rate of 68 %
    assert xc.above_baseline(195, 300, {"chance": 0.5, "shortest": 0.68}) is not None


def test_the_gate_names_the_no_prompt_baseline_and_refuses_a_perfect_baseline():
    gate = xc.above_baseline(200, 300, {"chance": 0.5, "shortest": 0.5, "no_prompt": 0.7})
    assert gate is not None and "without the prompt" in gate.why
    perfect = xc.above_baseline(300, 300, {"chance": 0.5, "longest": 1.0})
    assert perfect is not None and perfect.word == "not testable here" and "every item" in perfect.why


def test_best_baseline_breaks_ties_in_the_listed_order():
    assert zs.best_baseline({"shortest": 0.55, "chance": 0.5, "majority_answer": 0.55}) == (
        "majority_answer",
        0.55,
    )


def test_no_prompt_baseline_is_the_models_prior_preference():
    """A model that, without the prompt, already prefers the correct (longer) answer per byte but not summed:
    the baseline takes the better of the two."""
    items = [_item((" a", " abcdefgh"), 1), _item((" b", " bcdefghi"), 1)]
    assert zs.no_prompt_accuracy(items, [[-2.0, -8.0], [-2.0, -8.0]]) == 1.0  # per byte: -1 vs -8/9
    assert zs.no_prompt_accuracy(items, [[-1.0, -80.0], [-1.0, -80.0]]) == 0.0


def test_sample_items_is_a_fixed_random_sample_in_file_order():
    items = [_item((f" {k}", " x"), 0) for k in range(100)]
    a, b = zs.sample_items(items, 10), zs.sample_items(items, 10)
    assert a == b and len(a) == 10 and len(set(a)) == 10
    order = [items.index(i) for i in a]
    assert order == sorted(order) and order != list(range(10))  # not the first ten
    assert zs.sample_items(items, 10, seed=1) != a
    assert zs.sample_items(items, None) == items and zs.sample_items(items, 500) == items


def _tiny_model() -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=256, n_layer=1, d_model=16, n_head=2, head_dim=8, block_size=64))


def test_scores_from_a_model_agree_with_the_summed_scorer_and_the_empty_prompt():
    """On a real (random) model: the summed scoring is the old accuracy, and the unconditional scores are the
    choices' likelihoods with an empty prompt, computed once per distinct choice set."""
    model = _tiny_model()
    items = [_item((" Yes", " No"), k % 2, f"Question {k}?") for k in range(6)] + [
        _item((" a", " bb", " ccc"), 2, "Pick")
    ]
    conditional = choice_logprobs(model, items)
    unconditional = xsa_experiment._unconditional_logprobs(model, items, None)
    assert zs.accuracy(items, conditional, unconditional, "sum") == pytest.approx(
        summed_accuracy(model, items)
    )
    empty = choice_logprobs(model, [MultipleChoice("", i.choices, i.answer) for i in items])
    for ours, direct in zip(unconditional, empty, strict=True):
        assert ours == pytest.approx(direct, abs=1e-5)
    assert unconditional[0] == unconditional[2]  # the same choices: the same prior
    for scoring in zs.SCORINGS:
        assert 0.0 <= zs.accuracy(items, conditional, unconditional, scoring) <= 1.0
    assert not math.isnan(zs.no_prompt_accuracy(items, unconditional))


def test_without_bigbench_table2_is_skipped_with_its_reason(tmp_path, monkeypatch, capsys):
    """BIG-bench's sdist was deleted from PyPI: with no copy on disk every zero-shot task is skipped, with one
    line saying why (no path in it), an empty table with the usual columns, and every Table 2 claims row (each
    task and the average, per judged scoring) not testable with that reason."""
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "data"))  # no copy of BIG-bench here
    assert not artifacts.available("bigbench")
    reason = artifacts.unavailable_reason("bigbench")
    exp = xsa_experiment.configure(scale="smoke", device="cpu")
    table = exp.zero_shot({})  # no task's items load, so no model is read
    out = capsys.readouterr().out
    assert out == f"zero-shot tasks: skipped: {reason}\n" and str(tmp_path) not in out
    assert table.empty and tuple(table.columns) == zs.ZERO_SHOT_COLUMNS
    assert zs.skipped_tasks(table) == dict.fromkeys(TASKS, reason)
    summary = exp.zero_shot_table(table)
    assert summary.empty and list(summary.index.names) == ["task", "scoring", "kind"]
    assert {"n", "baseline", "accuracy", "low", "high"} <= set(summary.columns)
    rows = xc._claims_table2(table)
    assert len(rows) == len(zs.CLAIM_SCORINGS) * (len(TASKS) + 1)  # every task and the average
    assert all(r.figure == "Table 2" for r in rows)
    assert [(r.verdict.word, r.verdict.why) for r in rows] == [(NOT_TESTABLE, reason)] * len(rows)
    assert {task for task in TASKS if any(f"({task}, " in r.claim for r in rows)} == set(TASKS)


def test_a_skipped_task_is_not_testable_beside_the_measured_ones(capsys):
    """One task skipped, one measured: the measured task and the average are judged as before (the average
    over the measured tasks, saying how many were skipped), the skipped task's rows are not testable with its
    reason; the note names the skipped tasks by reason."""
    rows = [
        {"task": "strategyqa", "n": 300, "kind": kind, "seed": seed, "scoring": scoring, "accuracy": acc,
         "correct": round(acc * 300), "chance": 0.5, "majority_answer": 0.5, "shortest": 0.5, "longest": 0.5,
         "no_prompt": 0.5}
        for scoring in zs.SCORINGS
        for kind, accs in (("sa", [0.70, 0.71, 0.69]), ("xsa", [0.72, 0.735, 0.71]))
        for seed, acc in enumerate(accs)
    ]  # fmt: skip
    table = pd.DataFrame(rows, columns=list(zs.ZERO_SHOT_COLUMNS))
    table.attrs[zs.SKIPPED] = {"math_qa": "gone"}
    claims = {r.claim: r for r in xc._claims_table2(table)}
    skipped = claims["XSA improves zero-shot accuracy (math_qa, log-likelihood per byte)"]
    assert (skipped.verdict.word, skipped.verdict.why) == (NOT_TESTABLE, "gone")
    measured = claims["XSA improves zero-shot accuracy (strategyqa, log-likelihood per byte)"]
    assert measured.verdict.word == "holds"
    average = claims["XSA improves average zero-shot accuracy (log-likelihood per byte)"]
    assert average.verdict.word == "holds"
    assert "1 of 1 tasks" in average.ours and "1 more skipped" in average.ours
    note = xsa_experiment.skipped_note({"a": "gone", "b": "gone", "c": "lost"}, 6)
    assert note.splitlines() == ["zero-shot tasks a, b: skipped: gone", "zero-shot tasks c: skipped: lost"]
    assert xsa_experiment.skipped_note({"a": "gone", "b": "gone"}, 2) == "zero-shot tasks: skipped: gone"
