"""Where attnlab keeps data, build outputs and figures.

Inside a checkout the folders are the repository's own ``data/``, ``build/`` and ``figures/``; an
installed copy uses ``/content/attnlab`` on Colab (the session's files, which the file browser shows and Drive
can hold) and ``~/.cache/attnlab`` elsewhere. ``ATTNLAB_DATA``, ``ATTNLAB_BUILD`` and ``ATTNLAB_FIGURES``
override each: a relative value is taken from the working directory, an empty one is refused, and a folder
that leads into the checkout's source (``lib/``, ``notebooks/``, ``tests/``, ``docs/``), through ``..`` or a
symlink, is refused. The runner pins the three to absolute paths
(:func:`pin_environment`) before it starts a notebook kernel, whose working directory is ``notebooks/``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from attnlab import realisation
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
        if not os.environ[env].strip():
            raise ParameterError(f"{env} is set but empty; give a folder, or unset it for the default")
        # resolved first: "..", and symlinks into the source, are judged by where they lead
        try:
            path = Path(os.environ[env]).expanduser().resolve()
        except RuntimeError as err:  # "~user" of no such user
            raise ParameterError(f"{env}={os.environ[env]!r}: {err}; give an absolute folder") from None
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
    path (checked by :func:`_folder`, refused when it, or the nearest folder above it that exists, is a file
    or not writable, and created: at launch, not inside a notebook), so that a process started elsewhere (a
    kernel runs in ``notebooks/``) finds the same folders."""
    for env, name in zip(FOLDER_ENVS, ("data", "build", "figures"), strict=True):
        if env in os.environ:
            path = _folder(env, name)
            existing = next((p for p in (path, *path.parents) if p.exists()), path)
            if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
                what = (
                    "a file, not a folder" if existing.exists() and not existing.is_dir() else "not writable"
                )
                raise ParameterError(
                    f"{env}={os.environ[env]!r}: {existing} is {what}; give a writable folder"
                )
            try:  # created at launch: a folder that cannot exist there (/proc/x) fails now, not mid-run
                path.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise ParameterError(
                    f"{env}={os.environ[env]!r}: cannot create {path} ({err.strerror}); give a writable "
                    "folder"
                ) from None
            os.environ[env] = str(path)


def data_dir() -> Path:
    """Downloaded artifacts and extracted corpora (``data/``)."""
    return _folder("ATTNLAB_DATA", "data")


def build_dir() -> Path:
    """Executed notebooks and the results cache (``build/``; a second floating-point realisation keeps its own
    below it, :mod:`attnlab.realisation`)."""
    return _folder("ATTNLAB_BUILD", "build") / realisation.folder()


FIGURES_ENV = FOLDER_ENVS[2]


def figures_dir() -> Path:
    """Figures and claims tables (``figures/<scale>/<paper>/``; a second floating-point realisation writes
    its own below it, :mod:`attnlab.realisation`)."""
    return _folder(FIGURES_ENV, "figures") / realisation.folder()
