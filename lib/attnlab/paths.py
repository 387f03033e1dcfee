"""Where attnlab keeps data, build outputs and figures.

Inside a checkout the folders are the repository's own ``data/``, ``build/`` and ``figures/``; an
installed copy uses ``/content/attnlab`` on Colab (the session's files, which the file browser shows and Drive
can hold) and ``~/.cache/attnlab`` elsewhere. ``ATTNLAB_DATA``, ``ATTNLAB_BUILD`` and ``ATTNLAB_FIGURES``
override each: a relative value is taken from the working directory, and a folder inside the checkout's source
(``lib/``, ``notebooks/``, ``tests/``, ``docs/``) is refused. The runner pins the three to absolute paths
(:func:`pin_environment`) before it starts a notebook kernel, whose working directory is ``notebooks/``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from attnlab.errors import ParameterError


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


#: The checkout's source folders: no output folder may point into them.
SOURCE_FOLDERS = ("lib", "notebooks", "tests", "docs", ".ci", ".git")
FOLDER_ENVS = ("ATTNLAB_DATA", "ATTNLAB_BUILD", "ATTNLAB_FIGURES")


def _folder(env: str, name: str) -> Path:
    if env in os.environ:
        path = Path(os.environ[env]).expanduser().absolute()
        root = repo_root()
        if root is not None:
            inside = [f for f in SOURCE_FOLDERS if path == root or path.is_relative_to(root / f)]
            if inside:
                raise ParameterError(
                    f"{env}={os.environ[env]!r} points into the checkout's source ({path}); give a folder "
                    "outside lib/, notebooks/, tests/ and docs/ (an absolute path is safest)"
                )
        return path
    root = repo_root()
    return root / name if root is not None else installed_root() / name


def pin_environment() -> None:
    """Set each of ``ATTNLAB_DATA``, ``ATTNLAB_BUILD`` and ``ATTNLAB_FIGURES`` that is given to its absolute
    path (checked by :func:`_folder`), so that a process started elsewhere (a notebook kernel runs in
    ``notebooks/``) finds the same folders."""
    for env, name in zip(FOLDER_ENVS, ("data", "build", "figures"), strict=True):
        if env in os.environ:
            os.environ[env] = str(_folder(env, name))


def data_dir() -> Path:
    """Downloaded artifacts and extracted corpora (``data/``)."""
    return _folder("ATTNLAB_DATA", "data")


def build_dir() -> Path:
    """Executed notebooks and the results cache (``build/``)."""
    return _folder("ATTNLAB_BUILD", "build")


FIGURES_ENV = FOLDER_ENVS[2]


def figures_dir() -> Path:
    """Figures and claims tables (``figures/<scale>/<paper>/``)."""
    return _folder(FIGURES_ENV, "figures")
