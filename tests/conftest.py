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
