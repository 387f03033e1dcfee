"""Files written through attnlab.verified are never read back corrupt: flipped bytes, truncation, a missing
or edited record and unparseable content all raise CorruptFile naming the file."""

import numpy as np
import pytest
import torch

from attnlab import verified
from attnlab.errors import CorruptFile


def flip(path, offset=-20, n=4):
    data = bytearray(path.read_bytes())
    for i in range(n):
        data[offset + i] ^= 0xFF
    path.write_bytes(bytes(data))


def test_round_trips_of_every_kind(tmp_path):
    state = {"w": torch.arange(6.0).reshape(2, 3), "history": [1.0, 0.5]}
    verified.save(state, tmp_path / "r.pt")
    loaded = verified.load(tmp_path / "r.pt")
    assert torch.equal(loaded["w"], state["w"]) and loaded["history"] == [1.0, 0.5]
    verified.save_array(np.arange(10, dtype=np.uint16), tmp_path / "t.npy")
    assert verified.load_array(tmp_path / "t.npy").tolist() == list(range(10))
    verified.write_text(tmp_path / "s.jsonl", "héllo\n")
    assert verified.read_text(tmp_path / "s.jsonl") == "héllo\n"
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*"))


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: flip(p),
        lambda p: flip(p, offset=0, n=1),
        lambda p: p.write_bytes(p.read_bytes()[:-7]),  # truncated
        lambda p: p.write_bytes(p.read_bytes() + b"\0"),  # extended
        lambda p: verified.record_path(p).unlink(),  # no record (older version or interrupted write)
        lambda p: verified.record_path(p).write_text("0" * 64 + " 10\n"),  # edited record
        lambda p: verified.record_path(p).write_text("garbage"),
        lambda p: p.unlink(),
    ],
    ids=["flipped", "first-byte", "truncated", "extended", "no-record", "edited-rec", "bad-rec", "missing"],
)
def test_any_damage_is_detected_and_names_the_file(tmp_path, damage):
    path = tmp_path / "result.pt"
    verified.save({"w": torch.randn(64)}, path)
    damage(path)
    with pytest.raises(CorruptFile, match="result.pt"):
        verified.load(path)


def test_content_that_matches_its_record_but_does_not_parse_is_corrupt(tmp_path):
    path = tmp_path / "x.pt"
    verified.write_bytes(path, b"not a torch file")
    with pytest.raises(CorruptFile, match="torch.load"):
        verified.load(path)
    verified.write_bytes(tmp_path / "a.npy", b"\x93NUMPY garbage")
    with pytest.raises(CorruptFile, match="npy"):
        verified.load_array(tmp_path / "a.npy")


def test_a_rewrite_never_leaves_the_old_record_beside_new_bytes(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    verified.write_bytes(path, b"old")

    def crash(*args):
        raise KeyboardInterrupt  # interrupted after the data was replaced, before its record was written

    real = verified.atomic
    monkeypatch.setattr(verified, "atomic", lambda p, d: real(p, d) if p == path else crash())
    with pytest.raises(KeyboardInterrupt):
        verified.write_bytes(path, b"new")
    assert path.read_bytes() == b"new"
    with pytest.raises(CorruptFile, match="no valid checksum record"):
        verified.read_bytes(path)  # the old record would have matched nothing, and is gone


def test_discard_removes_the_file_and_its_record(tmp_path):
    path = tmp_path / "f.bin"
    verified.write_bytes(path, b"data")
    assert path.is_file() and verified.record_path(path).is_file()
    verified.discard(path)
    assert not path.exists() and not verified.record_path(path).exists()
