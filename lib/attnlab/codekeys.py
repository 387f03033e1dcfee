"""Cache keys derived from the code itself: the digest of every ``attnlab`` module a computation imports.

A cached result (a training run, a circuit, a classifier) is keyed by the source of the module that defines
its computation and of every ``attnlab`` module that module imports at import time, transitively (its import
closure, read from the modules' syntax trees, so nothing is imported to compute it). No list of files is
written by hand: editing any module a computation can reach computes it afresh.

Imports inside functions count too (an optional dependency loaded only where it is used). Left out on purpose,
and checked instead: ``if TYPE_CHECKING:`` blocks, an import whose line ends with :data:`AFTER_COMPUTING`
(the claims a notebook judges once the results exist, imported by an experiment's ``claims`` method), and the
``__init__.py`` of the packages on the way (their re-exports compute nothing). With
``ATTNLAB_CHECK_CODE_KEYS=1`` (the test suite and ``make test`` set it) every computation runs under a
profiler that records the ``attnlab`` source files it executes, and :class:`CodeKeyIncomplete` is raised when
one lies outside its key's closure: a wrong exclusion fails the tests, it never leaves a result stale.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

PACKAGE = Path(__file__).resolve().parent  # lib/attnlab
CHECK_ENV = "ATTNLAB_CHECK_CODE_KEYS"
AFTER_COMPUTING = "# judged after computing"  # marks an import that no cached computation runs

T = TypeVar("T")


class CodeKeyIncomplete(RuntimeError):
    """A computation executed ``attnlab`` code that its cache key does not cover."""


def module_file(name: str) -> Path | None:
    """The source file of the ``attnlab`` module ``name`` (``attnlab.papers.xsa.claims``), or None when it is
    not a module of this package (a class or function imported from one, another package)."""
    if name != "attnlab" and not name.startswith("attnlab."):
        return None
    parts = name.split(".")[1:]
    base = PACKAGE.joinpath(*parts)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def module_name(path: Path) -> str:
    """The dotted name of an ``attnlab`` source file."""
    rel = path.resolve().relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(body: Iterable[ast.stmt | ast.ExceptHandler]) -> Iterable[ast.Import | ast.ImportFrom]:
    """Every import statement of a module, in functions and classes too, but not in ``if TYPE_CHECKING:``
    blocks (annotations only)."""
    for node in body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _import_nodes(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            children = getattr(node, field, None)
            if isinstance(children, list):
                yield from _import_nodes(c for c in children if isinstance(c, ast.stmt | ast.ExceptHandler))


def direct_imports(name: str) -> frozenset[str]:
    """The ``attnlab`` modules that module ``name`` imports, anywhere in its code (see the module docstring
    for what is left out)."""
    path = module_file(name)
    if path is None:
        raise ValueError(f"{name!r} is not a module of attnlab")
    stat = path.stat()
    return _parsed_imports(path, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _parsed_imports(path: Path, _mtime_ns: int, _size: int) -> frozenset[str]:
    """:func:`direct_imports` of the file at ``path``, parsed once per version of the file."""
    source = path.read_text()
    lines = source.splitlines()
    found: set[str] = set()
    for node in _import_nodes(ast.parse(source, str(path)).body):
        if lines[node.lineno - 1].rstrip().endswith(AFTER_COMPUTING):
            continue
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from P import m`` needs module P.m where m is one, else P itself (a name P defines)
            subs = [f"{node.module}.{alias.name}" for alias in node.names]
            candidates = [sub if module_file(sub) is not None else node.module for sub in subs]
        else:
            continue
        found.update(c for c in candidates if module_file(c) is not None and c != "attnlab")
    return frozenset(found)


def closure(roots: Iterable[str]) -> frozenset[str]:
    """Every ``attnlab`` module ``roots`` reach through their imports, the roots included."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if module_file(name) is None:
            raise ValueError(f"{name!r} is not a module of attnlab")
        seen.add(name)
        todo.extend(direct_imports(name) - seen)
    return frozenset(seen)


def code_digest(roots: Iterable[str]) -> str:
    """Digest of the source of every module in the :func:`closure` of ``roots`` (names and bytes)."""
    h = hashlib.sha256()
    for name in sorted(closure(roots)):
        h.update(name.encode() + b"\0")
        path = module_file(name)
        assert path is not None  # closure() holds modules of this package only
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def defining_module(compute: Callable[..., Any]) -> str:
    """The module that defines ``compute`` (through ``functools.partial`` and bound methods)."""
    fn: Any = compute
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = getattr(fn, "__func__", fn)
    name = getattr(fn, "__module__", None)
    if not name or module_file(name) is None:
        raise ValueError(f"{compute!r} is not defined in an attnlab module; name its module with code=")
    return name


# --- the check: what a computation executes lies inside its key --------------------------------------------

_active: list[set[str]] = []  # the files seen by each computation being checked (nested ones included)
_lock = threading.Lock()
_PREFIX = str(PACKAGE) + os.sep


def _profile(frame: FrameType, event: str, _arg: object) -> None:
    if event == "call":
        filename = frame.f_code.co_filename
        if filename.startswith(_PREFIX):
            for seen in _active:
                seen.add(filename)


def checking() -> bool:
    """Whether computations are checked against their keys (``ATTNLAB_CHECK_CODE_KEYS=1``)."""
    return os.environ.get(CHECK_ENV, "") not in ("", "0")


def run_checked(compute: Callable[[], T], roots: Iterable[str], what: str) -> T:
    """``compute()``; when :func:`checking`, under a profiler, raising :class:`CodeKeyIncomplete` if it
    executed an ``attnlab`` module outside the closure of ``roots`` (its key would not see that module's
    edits)."""
    if not checking():
        return compute()
    seen: set[str] = set()
    with _lock:
        _active.append(seen)
        previous = sys.getprofile()
        sys.setprofile(_profile)
    try:
        result = compute()
    finally:
        with _lock:
            _active.remove(seen)
            sys.setprofile(previous if _active or previous is not _profile else None)
    covered = closure(roots)
    outside = sorted({module_name(Path(f)) for f in seen} - covered)
    if outside:
        raise CodeKeyIncomplete(
            f"{what}: the computation ran code from {outside}, which its cache key (the import closure of "
            f"{sorted(roots)}) does not cover: import it from a module of the closure, without the "
            f"{AFTER_COMPUTING!r} mark"
        )
    return result
