"""Colab: each notebook's badge and install cell, written from the one repository URL in ``pyproject.toml``.

    python -m attnlab.tools.colab                     # badges and install cells from pyproject's URL
    python -m attnlab.tools.colab --repo https://github.com/me/attnlab   # a fork: that URL everywhere

The install cell installs attnlab from the repository without the ``notebooks`` extra, so Colab's own torch,
Jupyter and ipykernel stay as they are (upgrading Colab's ipykernel is a known way to break its runtime); a
notebook that loads pretrained Hugging Face models adds the ``hf`` extra. pip runs without ``-q``, so its
"restart the runtime" notice, when a package it upgraded was already imported, stays visible.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from attnlab import paths
from attnlab.papers import PAPERS

#: The extras each notebook needs beyond the core package on Colab: pretrained models need ``hf``.
EXTRAS: dict[str, tuple[str, ...]] = {
    "xsa": (),
    "qk_speed": (),
    "contribution_weights": ("hf",),
    "sd_routing": ("hf",),
    "synthesis": ("hf",),
}

BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
_REPO_LINE = re.compile(r'^Repository = "([^"]+)"$', re.MULTILINE)
_GITHUB = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+$")


def badge(repo_url: str, notebook: str) -> str:
    """The Markdown "Open in Colab" badge of ``notebooks/<notebook>.ipynb`` in the repository ``repo_url``."""
    repo = repo_url.removeprefix("https://github.com/")
    link = f"https://colab.research.google.com/github/{repo}/blob/main/notebooks/{notebook}.ipynb"
    return f"[![Open In Colab]({BADGE_IMAGE})]({link})"


def install_cell(repo_url: str, notebook: str) -> str:
    """The source of ``notebook``'s install cell: on Colab, pip-install attnlab (with the notebook's
    ``EXTRAS``) from ``repo_url``; anywhere else, nothing (``make env`` has installed it)."""
    extras = EXTRAS[notebook]
    target = f"attnlab[{','.join(extras)}] @ git+{repo_url}" if extras else f"attnlab @ git+{repo_url}"
    return (
        "# On Colab: install attnlab, leaving Colab's own torch, Jupyter and ipykernel as they are. If\n"
        "# pip asks to restart the runtime, do so, then run on from the next cell. (Elsewhere: make env.)\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        "    subprocess.run(\n"
        f'        [sys.executable, "-m", "pip", "install", "{target}"],\n'
        "        check=True,\n"
        "    )"
    )


def repository_url(pyproject: Path) -> str:
    """The repository URL, set once: ``[project.urls] Repository`` of ``pyproject``."""
    found = _REPO_LINE.search(pyproject.read_text())
    if found is None:
        raise SystemExit(f"{pyproject}: no [project.urls] Repository line")
    return found.group(1)


def set_repository(root: Path, new_url: str) -> None:
    """Point the checkout at ``new_url`` (a GitHub repository): pyproject, CITATION.cff and the README's
    links, each by replacing the old URL."""
    if not _GITHUB.match(new_url):
        raise SystemExit(f"--repo must look like https://github.com/<owner>/<name>; got {new_url!r}")
    old = repository_url(root / "pyproject.toml")
    old_path, new_path = (u.removeprefix("https://github.com/") for u in (old, new_url))
    for name in ("pyproject.toml", "CITATION.cff", "README.md"):
        path = root / name
        if path.is_file():
            text = path.read_text().replace(old, new_url)
            path.write_text(text.replace(f"/github/{old_path}/", f"/github/{new_path}/"))


def rewrite_notebook(path: Path, repo_url: str) -> bool:
    """Set the badge (the first cell's line with the badge image) and the install cell (the second cell) of
    the notebook at ``path``; True if anything changed."""
    nb = json.loads(path.read_text())
    name = path.stem
    first, second = nb["cells"][0], nb["cells"][1]
    lines = "".join(first["source"]).split("\n")
    lines = [badge(repo_url, name) if BADGE_IMAGE in line else line for line in lines]
    new_first = "\n".join(lines)
    new_second = install_cell(repo_url, name)
    if "".join(first["source"]) == new_first and "".join(second["source"]) == new_second:
        return False
    first["source"] = new_first.splitlines(keepends=True)
    second["source"] = new_second.splitlines(keepends=True)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnlab.tools.colab", description=__doc__.split("\n")[0])
    parser.add_argument("--repo", help="a fork's URL, https://github.com/<owner>/<name>, to set everywhere")
    args = parser.parse_args(argv)
    root = paths.repo_root()
    if root is None:
        raise SystemExit("attnlab.tools.colab rewrites a checkout (pyproject.toml not found)")
    if args.repo:
        set_repository(root, args.repo)
    url = repository_url(root / "pyproject.toml")
    for name in PAPERS:
        changed = rewrite_notebook(root / "notebooks" / f"{name}.ipynb", url)
        print(f"{name}: {'rewritten' if changed else 'up to date'} ({url})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
