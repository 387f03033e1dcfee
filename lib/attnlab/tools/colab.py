"""Colab: each notebook's badge and install cell, written from the one repository URL in ``pyproject.toml``.

    python -m attnlab.tools.colab            # rewrite every badge and install cell from pyproject's URL
    python -m attnlab.tools.colab --check    # write nothing; exit 1 naming what disagrees with pyproject
    python -m attnlab.tools.colab --repo https://github.com/me/attnlab   # a fork: set its URL, then rewrite

The URL is set in one place, ``[project.urls] Repository`` of ``pyproject.toml``. Everything else that names
it is generated from there: the badge in each notebook's first cell, each notebook's install cell (its second
cell), the README's badges and CITATION.cff's ``repository-code``. A fork changes that one line and runs the
first command (or runs the third, which also changes the line); ``tests/test_colab.py`` fails while anything
disagrees with pyproject.

The install cell installs attnlab from the repository without the ``notebooks`` extra, so Colab's own torch,
Jupyter and ipykernel stay as they are (upgrading Colab's ipykernel is a known way to break its runtime); a
notebook that loads pretrained Hugging Face models adds the ``hf`` extra. pip runs without ``-q``, so its
"restart the runtime" notice, when a package it upgraded was already imported, stays visible. Its
``KEEP_ON_DRIVE`` (off by default) mounts Google Drive and points ``ATTNLAB_BUILD`` (the results cache and the
executed notebooks) and ``ATTNLAB_FIGURES`` (``attnlab.paths``) into ``MyDrive/attnlab``, since a Colab
runtime's own files vanish with it. Nothing in the cell runs outside Colab (``"google.colab"`` not in
``sys.modules``), so the stored outputs do not depend on it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from attnlab import paths
from attnlab.papers import PAPERS
from attnlab.tools.examples import EXAMPLES

#: The extras each notebook needs beyond the core package on Colab: pretrained models need ``hf``.
EXTRAS: dict[str, tuple[str, ...]] = {
    "xsa": ("hf",),  # Fig. 1 on pretrained models
    "qk_speed": (),
    "contribution_weights": ("hf",),
    "sd_routing": ("hf",),
    "synthesis": ("hf",),
    "reuse_any_model": ("hf",),
}

#: Every notebook with a badge and an install cell: the papers', then the examples.
NOTEBOOKS: tuple[str, ...] = (*PAPERS, *EXAMPLES)

#: Where ``KEEP_ON_DRIVE`` keeps the project's output folders on Colab.
DRIVE_MOUNT = "/content/drive"
DRIVE_FOLDER = f"{DRIVE_MOUNT}/MyDrive/attnlab"

BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
_REPO_LINE = re.compile(r'^Repository = "([^"]+)"$', re.MULTILINE)
_GITHUB = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+$")
#: A Colab link to a notebook of some repository, whatever its owner and name.
_COLAB_LINK = re.compile(r"https://colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/main/notebooks/")
_CITATION_LINE = re.compile(r'^repository-code: "[^"]*"$', re.MULTILINE)


def badge(repo_url: str, notebook: str) -> str:
    """The Markdown "Open in Colab" badge of ``notebooks/<notebook>.ipynb`` in the repository ``repo_url``."""
    return f"[![Open In Colab]({BADGE_IMAGE})]({colab_prefix(repo_url)}{notebook}.ipynb)"


def colab_prefix(repo_url: str) -> str:
    """The Colab link of the repository's ``notebooks/`` folder on ``main``, without the notebook's name."""
    repo = repo_url.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{repo}/blob/main/notebooks/"


def install_cell(repo_url: str, notebook: str) -> str:
    """The source of ``notebook``'s install cell: on Colab, pip-install attnlab (with the notebook's
    ``EXTRAS``) from ``repo_url``, and with ``KEEP_ON_DRIVE`` keep the outputs on Google Drive; anywhere else,
    nothing (``make env`` has installed it)."""
    extras = EXTRAS[notebook]
    target = f"attnlab[{','.join(extras)}] @ git+{repo_url}" if extras else f"attnlab @ git+{repo_url}"
    return (
        "# On Colab: install attnlab, leaving Colab's own torch, Jupyter and ipykernel as they are. If\n"
        "# pip asks to restart the runtime, do so, then run on from the next cell (with KEEP_ON_DRIVE, from\n"
        "# this one). Elsewhere: make env. The URL is pyproject.toml's (python -m attnlab.tools.colab).\n"
        "import os\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        "KEEP_ON_DRIVE = False  # True: keep the results cache and figures in Google Drive, MyDrive/attnlab\n"
        "# (a Colab runtime's files vanish with it; downloaded data stays in /content/attnlab/data)\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        "    subprocess.run(\n"
        f'        [sys.executable, "-m", "pip", "install", "{target}"],\n'
        "        check=True,\n"
        "    )\n"
        "    if KEEP_ON_DRIVE:\n"
        "        from google.colab import drive\n"
        "\n"
        f'        drive.mount("{DRIVE_MOUNT}")\n'
        f'        os.environ["ATTNLAB_BUILD"] = "{DRIVE_FOLDER}/build"\n'
        f'        os.environ["ATTNLAB_FIGURES"] = "{DRIVE_FOLDER}/figures"'
    )


def repository_url(pyproject: Path) -> str:
    """The repository URL, set once: ``[project.urls] Repository`` of ``pyproject``."""
    found = _REPO_LINE.search(pyproject.read_text())
    if found is None:
        raise SystemExit(f"{pyproject}: no [project.urls] Repository line")
    return found.group(1)


def set_repository(root: Path, new_url: str) -> None:
    """Point the checkout at ``new_url`` (a GitHub repository): pyproject's ``Repository`` line, then
    everything generated from it (:func:`sync`)."""
    if not _GITHUB.match(new_url):
        raise SystemExit(f"--repo must look like https://github.com/<owner>/<name>; got {new_url!r}")
    pyproject = root / "pyproject.toml"
    repository_url(pyproject)  # the line must be there
    pyproject.write_text(_REPO_LINE.sub(f'Repository = "{new_url}"', pyproject.read_text(), count=1))
    sync(root)


def _notebook_cells(nb: dict, name: str, repo_url: str) -> tuple[str, str]:
    """The first cell's source with its badge line regenerated, and the install cell's source."""
    lines = "".join(nb["cells"][0]["source"]).split("\n")
    lines = [badge(repo_url, name) if BADGE_IMAGE in line else line for line in lines]
    return "\n".join(lines), install_cell(repo_url, name)


def rewrite_notebook(path: Path, repo_url: str, write: bool = True) -> bool:
    """Set the badge (the first cell's line with the badge image) and the install cell (the second cell) of
    the notebook at ``path``, read and written back at once (indent 1, as the runner stores notebooks); True
    if anything changed (with ``write=False``: would change, nothing written)."""
    nb = json.loads(path.read_text())
    first, second = nb["cells"][0], nb["cells"][1]
    new_first, new_second = _notebook_cells(nb, path.stem, repo_url)
    if BADGE_IMAGE not in new_first:
        raise SystemExit(f"{path}: the first cell has no Colab badge line to rewrite")
    if "".join(first["source"]) == new_first and "".join(second["source"]) == new_second:
        return False
    if write:
        first["source"] = new_first.splitlines(keepends=True)
        second["source"] = new_second.splitlines(keepends=True)
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return True


def _rewrite_text(path: Path, pattern: re.Pattern[str], replacement: str, write: bool) -> bool:
    """Replace every match of ``pattern`` in the file at ``path`` (if it exists); True if that changes it."""
    if not path.is_file():
        return False
    text = path.read_text()
    new = pattern.sub(replacement, text)
    if new != text and write:
        path.write_text(new)
    return new != text


def sync(root: Path, write: bool = True) -> list[str]:
    """Make everything that names the repository agree with pyproject's URL: every notebook's badge and
    install cell (:data:`NOTEBOOKS`), the README's Colab links and CITATION.cff's ``repository-code``. Returns
    the files that changed (with ``write=False``: that disagree; nothing is written)."""
    url = repository_url(root / "pyproject.toml")
    changed = [
        f"notebooks/{name}.ipynb"
        for name in NOTEBOOKS
        if rewrite_notebook(root / "notebooks" / f"{name}.ipynb", url, write)
    ]
    if _rewrite_text(root / "README.md", _COLAB_LINK, colab_prefix(url), write):
        changed.append("README.md")
    if _rewrite_text(root / "CITATION.cff", _CITATION_LINE, f'repository-code: "{url}"', write):
        changed.append("CITATION.cff")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnlab.tools.colab", description=__doc__.split("\n")[0])
    parser.add_argument("--repo", help="a fork's URL, https://github.com/<owner>/<name>, to set everywhere")
    parser.add_argument("--write", action="store_true", help="rewrite what disagrees (the default)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything disagrees")
    args = parser.parse_args(argv)
    if args.check and (args.write or args.repo):
        parser.error("--check writes nothing: it takes neither --write nor --repo")
    root = paths.repo_root()
    if root is None:
        raise SystemExit("attnlab.tools.colab rewrites a checkout (pyproject.toml not found)")
    if args.repo:
        set_repository(root, args.repo)
    url = repository_url(root / "pyproject.toml")
    changed = sync(root, write=not args.check)
    if args.check:
        for name in changed:
            print(f"{name}: not as generated from pyproject's Repository ({url}); run {parser.prog}")
        return 1 if changed else 0
    for name in changed:
        print(f"{name}: rewritten ({url})")
    print(f"every badge and install cell points at {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
