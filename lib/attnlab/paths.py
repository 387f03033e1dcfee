"""Where attnlab keeps data, build outputs and figures.

Inside a checkout the folders are the repository's own ``data/``, ``build/`` and ``figures/``; an
installed copy uses ``/content/attnlab`` on Colab (the session's files, which the file browser shows and Drive
can hold) and ``~/.cache/attnlab`` elsewhere. ``ATTNLAB_DATA``, ``ATTNLAB_BUILD`` and ``ATTNLAB_FIGURES``
override each.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def repo_root() -> Path | None:
    """The checkout that holds this package (the folder with ``pyproject.toml`` above ``lib/``), if any."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "lib").is_dir() else None


def on_colab() -> bool:
    """True inside a Google Colab runtime (its ``google.colab`` module is loaded)."""
    return "google.colab" in sys.modules


def installed_root() -> Path:
    """Where an installed copy (no checkout) keeps its folders: ``/content/attnlab`` on Colab, else
    ``~/.cache/attnlab``."""
    return Path("/content/attnlab") if on_colab() else Path.home() / ".cache" / "attnlab"


def _folder(env: str, name: str) -> Path:
    if env in os.environ:
        return Path(os.environ[env]).expanduser()
    root = repo_root()
    return root / name if root is not None else installed_root() / name


def data_dir() -> Path:
    """Downloaded artifacts and extracted corpora (``data/``)."""
    return _folder("ATTNLAB_DATA", "data")


def build_dir() -> Path:
    """Executed notebooks and the results cache (``build/``)."""
    return _folder("ATTNLAB_BUILD", "build")


FIGURES_ENV = "ATTNLAB_FIGURES"


def figures_dir() -> Path:
    """Figures and claims tables (``figures/<scale>/<paper>/``)."""
    return _folder(FIGURES_ENV, "figures")
