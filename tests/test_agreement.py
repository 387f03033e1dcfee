"""The subject-verb agreement set from the tagged Brown corpus (``attnlab.data.agreement``), on hand-written
tagged files standing in for the artifact's extraction (nothing is downloaded)."""

import pytest
from extractions import mark_extraction

from attnlab.data import agreement as ag
from attnlab.data import artifacts

# Brown's layout: one sentence a line, ``word/tag`` tokens, blank lines between paragraphs.
_CA01 = """
\tThe/at keys/nns to/in the/at cabinet/nn are/ber on/in the/at table/nn ./.
\tThe/at man/nn who/wps owns/vbz the/at dogs/nns is/bez here/rb ./.


\tHe/pps said/vbd that/cs the/at dogs/nns of/in the/at farmer/nn have/hv eaten/vbn ./.
\tThey/ppss will/md not/* have/hv to/to go/vb ./.
\tThere/ex are/ber three/cd dogs/nns ./.
\tIf/cs he/pps were/bed-hl here/rb ./.
"""
_CA02 = """
\tThe/at boys/nns do/do not/* know/vb ./.
\tIs/bez it/pps ?/.
\tThe/at bank/nn accounts/nns are/ber safe/jj ,/, as/cs are/ber the/at stocks/nns ./.
\tIt/pps does/doz n't/* ./.
\tThe/at course/nn we/ppss have/hv taken/vbn isn't/bez* long/jj ./.
"""


@pytest.fixture
def brown(tmp_path, monkeypatch):
    """Two tagged documents in the extracted artifact's layout (``package/ca01``, ``package/ca02``), a
    complete extraction in a data folder of its own."""
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "data"))
    folder = artifacts.extract_dir("brown")
    package = folder / "package"
    package.mkdir(parents=True)
    (package / "ca01").write_text(_CA01)
    (package / "ca02").write_text(_CA02)
    (package / "README").write_text("not a document")
    return mark_extraction(folder, "brown")


def _by_verb(items):
    return {(item.doc, item.sentence, item.verb): item for item in items}


def test_items_have_the_prefix_label_subject_and_attractors(brown):
    items = _by_verb(ag.brown_items())
    keys = items[("ca01", 0, "are")]
    assert keys.prefix == ("The", "keys", "to", "the", "cabinet")
    assert keys.label == ag.PLURAL
    assert keys.prefix[keys.subject] == "keys"
    assert keys.attractors == 1  # cabinet
    man = items[("ca01", 1, "is")]  # the relative clause's verb does not hide the subject
    assert man.prefix[man.subject] == "man"
    assert (man.label, man.attractors) == (ag.SINGULAR, 1)  # dogs
    owns = items[("ca01", 1, "owns")]
    assert (owns.prefix[owns.subject], owns.label, owns.attractors) == ("man", ag.SINGULAR, 0)
    dogs = items[("ca01", 2, "have")]  # the clause after "that"
    assert (dogs.prefix[dogs.subject], dogs.label, dogs.attractors) == ("dogs", ag.PLURAL, 1)
    assert dogs.prefix == ("He", "said", "that", "the", "dogs", "of", "the", "farmer")
    accounts = items[("ca02", 2, "are")]  # a run of nouns: its last; "as are the stocks" dropped
    assert (accounts.prefix[accounts.subject], accounts.attractors) == ("accounts", 0)
    assert accounts.prefix == ("The", "bank", "accounts")
    isnt = items[("ca02", 4, "isn't")]  # negated form; "we have" inside: a pronoun right before its verb
    assert (isnt.label, isnt.prefix[isnt.subject], isnt.attractors) == (ag.SINGULAR, "course", 0)
    we = items[("ca02", 4, "have")]
    assert (we.label, we.prefix[we.subject], we.attractors) == (ag.PLURAL, "we", 0)
    assert items[("ca02", 0, "do")].label == ag.PLURAL
    assert items[("ca02", 3, "does")].label == ag.SINGULAR


def test_infinitives_expletives_subjunctives_inversions_and_empty_prefixes_give_no_item(brown):
    items = _by_verb(ag.brown_items())
    assert ("ca01", 3, "have") not in items  # will not have
    assert ("ca01", 4, "are") not in items  # there are
    assert ("ca01", 5, "were") not in items  # if he were
    assert ("ca02", 1, "Is") not in items  # nothing before it
    assert ("ca02", 2, "are") in items and len([k for k in items if k[:2] == ("ca02", 2)]) == 1
    assert len(items) == 9


def test_tags_lose_their_suffixes_and_negation():
    assert ag.base_tag("bez*-hl") == "bez"
    assert ag.base_tag("nns-tl") == "nns"
    assert ag.base_tag("--") == "--"
    assert ag.base_tag("*") == "*"
    assert ag.parse_sentence("Atlanta's/np$ 1/2/cd") == [("Atlanta's", "np$"), ("1/2", "cd")]


def test_the_split_is_by_document_and_each_side_is_balanced(brown):
    train, test = ag.agreement_set(train_fraction=0.5)
    assert {i.doc for i in train}.isdisjoint({i.doc for i in test})
    assert train and test
    for part in (train, test):
        labels = [i.label for i in part]
        assert labels.count(ag.SINGULAR) == labels.count(ag.PLURAL)
    assert ag.agreement_set(train_fraction=0.5) == (train, test)  # deterministic


def test_balance_keeps_every_minority_item_and_a_seeded_share_of_the_majority():
    def item(n, label):
        return ag.AgreementItem("d", n, ("x",), "is", label, 0, 0, label)

    items = [item(n, ag.SINGULAR) for n in range(8)] + [item(8, ag.PLURAL), item(9, ag.PLURAL)]
    kept = ag.balance(items, seed=3)
    assert [i.label for i in kept].count(ag.SINGULAR) == 2
    assert [i for i in kept if i.label == ag.PLURAL] == items[8:]
    assert kept == sorted(kept, key=lambda i: i.sentence)  # original order
    assert ag.balance(items, seed=3) == kept
    assert {tuple(i.sentence for i in ag.balance(items, seed=s)) for s in range(10)} != {
        tuple(i.sentence for i in kept)
    }


def test_train_documents_is_a_fixed_share_and_never_every_document():
    docs = [f"c{n:03d}" for n in range(500)]
    train = ag.train_documents(docs, 0.1)
    assert len(train) == 50 and ag.train_documents(docs, 0.1) == train
    assert ag.train_documents(docs, 0.1, seed=1) != train
    assert len(ag.train_documents(["a", "b"], 0.9)) == 1
    with pytest.raises(ValueError):
        ag.train_documents(docs, 1.0)


def test_summary_counts_classes_attractors_and_subject_agreement(brown):
    s = ag.summary(ag.brown_items())
    assert s["items"] == 9 and s["documents"] == 2
    assert s["classes"] == {"singular": 4, "plural": 5}
    assert s["attractors"] == {0: 6, 1: 3}
