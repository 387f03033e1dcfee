"""The downstream tasks read from OLMo's evaluation wheel (attnlab.data.tasks, attnlab.data.olmo_eval): each
parser writes an item as lm-eval-harness does, on hand-made rows in the wheel's own columns (the fixture
``olmo_files`` writes them as the wheel's Arrow and request files; nothing is downloaded)."""

from __future__ import annotations

import dataclasses

import pytest

from attnlab.data import olmo_eval, tasks
from attnlab.data.tasks import MultipleChoice
from attnlab.errors import CorruptFile

ROWS = {
    "arc_easy": {
        "id": "x1",
        "question": "Which is a gas?",
        "choices": "{'text': ['ice', 'steam', 'rock'], 'label': ['1', '2', '3']}",
        "answerKey": "2",
    },
    "boolq": {"question": "is water wet", "answer": True, "passage": "Water is a liquid."},
    "hellaswag": {
        "ind": "1",
        "activity_label": "Cooking",
        "ctx_a": "A man cuts onions.",
        "ctx_b": "he",
        "ctx": "",
        "endings": "['puts them [header] in a pan.', 'sings.']",
        "source_id": "",
        "split": "val",
        "split_type": "indomain",
        "label": "0",
    },
    "openbookqa": {
        "id": "7",
        "question_stem": "The sun is a",
        "choices": "{'text': ['star', 'planet'], 'label': ['A', 'B']}",
        "answerKey": "A",
    },
    "piqa": {"goal": "Open a jar", "sol1": "Twist the lid.", "sol2": "Eat the lid.", "label": "0"},
    "social_iqa": {
        "context": "Ann gave Bo a gift.",
        "question": "How does Bo feel?",
        "answerA": "sad",
        "answerB": "grateful",
        "answerC": "angry",
        "label": "2",
    },
    "winogrande": {
        "sentence": "The cup fell off the table because _ was tilted.",
        "option1": "the cup",
        "option2": "the table",
        "answer": "2",
    },
    "copa": {
        "premise": "The girl was hungry.",
        "choice1": "She ate lunch.",
        "choice2": "She slept.",
        "question": "effect",
        "idx": "0",
        "label": "0",
    },
}

EXPECTED = {
    "arc_easy": MultipleChoice("Question: Which is a gas?\nAnswer:", (" ice", " steam", " rock"), 1),
    "boolq": MultipleChoice("Water is a liquid.\nQuestion: is water wet?\nAnswer:", (" no", " yes"), 1),
    "hellaswag": MultipleChoice("Cooking: A man cuts onions. He", (" puts them in a pan.", " sings."), 0),
    "openbookqa": MultipleChoice("The sun is a", (" star", " planet"), 0),
    "piqa": MultipleChoice("Question: Open a jar\nAnswer:", (" Twist the lid.", " Eat the lid."), 0),
    "social_iqa": MultipleChoice(
        "Q: Ann gave Bo a gift. How does Bo feel?\nA:", (" sad", " grateful", " angry"), 1
    ),
    "winogrande": MultipleChoice(
        "The cup fell off the table because _",
        (" was tilted.", " was tilted."),
        1,
        contexts=(
            "The cup fell off the table because the cup",
            "The cup fell off the table because the table",
        ),
    ),
    "copa": MultipleChoice("The girl was hungry therefore", (" she ate lunch.", " she slept."), 0),
}


@pytest.fixture
def one_row_tasks(olmo_files, monkeypatch):
    """Every task's split holds the one hand-made row of ROWS."""
    for name in tasks.TASKS:
        monkeypatch.setitem(tasks.TASKS, name, dataclasses.replace(tasks.TASKS[name], items=1))
    olmo_files(tables={tasks.TASKS[name].path: [row] for name, row in ROWS.items()})


def test_every_task_has_a_hand_made_case():
    assert set(ROWS) == set(tasks.TASKS) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_each_task_reads_its_row_as_lm_eval_harness_writes_it(one_row_tasks, name):
    assert tasks.load_task(name) == [EXPECTED[name]]


def test_winogrande_scores_the_rest_of_the_sentence_after_each_filled_blank(one_row_tasks):
    (item,) = tasks.load_task("winogrande")
    assert [item.context(k) + item.choices[k] for k in range(2)] == [
        "The cup fell off the table because the cup was tilted.",
        "The cup fell off the table because the table was tilted.",
    ]
    plain = EXPECTED["piqa"]
    assert plain.context(1) == plain.prompt  # no contexts: every choice follows the prompt


def test_a_split_of_another_size_than_registered_is_refused(olmo_files):
    olmo_files(tables={tasks.TASKS["piqa"].path: [ROWS["piqa"]] * 2})
    with pytest.raises(ValueError, match="piqa: items in .*: 2, expected 1838"):
        tasks.load_task("piqa")


def test_an_unknown_task_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown task 'sva_linzen'; known: .*'winogrande'"):
        tasks.load_task("sva_linzen")


def test_items_with_a_bad_answer_or_mismatched_contexts_are_refused():
    with pytest.raises(ValueError, match="answer 2"):
        MultipleChoice("q", (" a", " b"), 2)
    with pytest.raises(ValueError, match="1 contexts for 2 choices"):
        MultipleChoice("q", (" a", " b"), 0, contexts=("c",))


def test_gsm8k_and_lambada_from_their_request_files(olmo_files, monkeypatch):
    monkeypatch.setattr(tasks, "GSM8K_ITEMS", 2)
    monkeypatch.setattr(tasks, "LAMBADA_ITEMS", 1)
    gsm = [
        {"question": "2 + 3?", "answer": "Add: 2 + 3 = <<2+3=5>>5.\n#### 5", "id": 0},
        {"question": "4 * 2?", "answer": "4 * 2 = <<4*2=8>>8\n#### 8", "id": 1},
    ]
    olmo_files(
        requests={
            tasks.GSM8K_PATH: gsm,
            tasks.LAMBADA_PATH: [{"id": "0", "query": "He opened the", "answers_text": "['door']"}],
        }
    )
    assert tasks.load_gsm8k() == [("2 + 3?", "Add: 2 + 3 = 5.\n#### 5"), ("4 * 2?", "4 * 2 = 8\n#### 8")]
    assert tasks.gsm8k_text(1) == "Question: 2 + 3?\nAnswer: Add: 2 + 3 = 5.\n#### 5"
    assert tasks.load_lambada() == [("He opened the", "door")]


def test_a_damaged_split_names_its_file(olmo_files, monkeypatch):
    folder = olmo_files(tables={tasks.TASKS["copa"].path: [ROWS["copa"]]})
    monkeypatch.setitem(tasks.TASKS, "copa", dataclasses.replace(tasks.TASKS["copa"], items=1))
    member = folder / olmo_eval.arrow_member(tasks.TASKS["copa"].path)
    # written after extraction: the marker's digest no longer matches, so extract() would re-extract from the
    # wheel; here the marker is rewritten to match, so the reader itself meets the damaged file
    member.write_bytes(b"not arrow")
    import hashlib
    import json

    from attnlab.data import artifacts

    marker = json.loads((folder / artifacts.MARKER).read_text())
    marker["files"][olmo_eval.arrow_member(tasks.TASKS["copa"].path)] = hashlib.sha256(
        b"not arrow"
    ).hexdigest()
    (folder / artifacts.MARKER).write_text(json.dumps(marker))
    olmo_eval.arrow_rows.cache_clear()
    with pytest.raises(CorruptFile, match="data-00000-of-00001.arrow: not a readable Arrow stream"):
        tasks.load_task("copa")


def test_every_registry_artifact_and_task_is_in_the_list_of_sources():
    from attnlab.data import artifacts, sources

    assert set(artifacts.ARTIFACTS) <= sources.covered_artifacts()
    assert set(artifacts.JOINED) <= sources.covered_artifacts()
    listed = "".join(s.file for s in sources.SOURCES)
    for task in tasks.TASKS.values():
        assert task.path in listed
    assert tasks.GSM8K_PATH in listed and tasks.LAMBADA_PATH in listed


def test_a_source_outside_the_registry_is_caught(monkeypatch):
    from attnlab.data import artifacts, sources

    fake = artifacts.Artifact("fake", "1", "pypi-wheel", "fake", "fake-1.whl", "0" * 64)
    monkeypatch.setitem(artifacts.ARTIFACTS, "fake", fake)
    assert not set(artifacts.ARTIFACTS) <= sources.covered_artifacts()


def test_the_data_sources_page_is_generated_from_the_registry():
    from pathlib import Path

    from attnlab.data import sources

    page = Path(__file__).resolve().parents[1] / "docs" / "data-sources.md"
    assert page.read_text() == sources.markdown(), (
        "run: python -m attnlab.data.sources --write docs/data-sources.md"
    )
    assert "61b08ab60ca5b4d175f78c8da95c362c1d745b1502b87de01f437fac768e1cbe" in page.read_text()
