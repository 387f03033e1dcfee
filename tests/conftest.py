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
def bigbench_files(tmp_path, monkeypatch):
    """Hand-written files in BIG-bench's layout, standing in for the ``bigbench`` extraction (its sdist was
    deleted from PyPI, attnlab.data.artifacts): ``install({member: json-able object or str})`` writes them as
    a complete extraction in a temporary folder that ``artifacts.extract("bigbench", ...)`` then returns, and
    returns that folder. Every member a loader asks for must be given (a missing one raises DataUnavailable,
    as on a machine without the sdist)."""
    import hashlib
    import json

    from attnlab.data import artifacts

    folder = tmp_path / "bigbench-fixture"
    original = artifacts.extract_dir
    monkeypatch.setattr(
        artifacts, "extract_dir", lambda name: folder if name == "bigbench" else original(name)
    )

    def install(files: dict) -> "os.PathLike[str]":
        digests = {}
        for member, content in files.items():
            text = content if isinstance(content, str) else json.dumps(content)
            path = folder / member
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode())
            digests[member] = hashlib.sha256(text.encode()).hexdigest()
        marker = {"sha256": artifacts.get("bigbench").sha256, "members": sorted(files), "files": digests}
        (folder / artifacts.MARKER).write_text(json.dumps(marker))
        return folder

    return install


def pytest_collection_modifyitems(config, items):
    """Tests marked ``needs_bigbench`` read BIG-bench's real tasks: skipped where neither the deleted sdist
    nor its extraction is on disk (``attnlab.data.artifacts.available``), with that reason."""
    from attnlab.data import artifacts

    if artifacts.available("bigbench"):
        return
    skip = pytest.mark.skip(reason=artifacts.unavailable_reason("bigbench"))
    for item in items:
        if "needs_bigbench" in item.keywords:
            item.add_marker(skip)
