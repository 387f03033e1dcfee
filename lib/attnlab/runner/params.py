"""Validation of notebook parameters, shared by the notebooks and the runner so that a bad value fails with a
clear message before any compute; and the ``key=value`` parser of the command lines (the runner's ``-p``,
the trainer's ``--model-config`` / ``--train-config``)."""

from __future__ import annotations

import ast
import json
import math
import os
import re
from collections.abc import Iterable, Sequence

import torch

from attnlab.errors import ParameterError
from attnlab.fields import is_int, is_number

SCALES = ("smoke", "cpu", "gpu", "paper")


def parse_assignment(text: str, *, json_values: bool = False) -> tuple[str, object]:
    """``key=value`` (``key`` an identifier) as ``(key, value)``: the value a Python literal (``[0, 1]``,
    ``3``, ``(0.9, 0.95)``), with ``json_values`` first tried as JSON (``true``, ``null``), failing that the
    plain string. Anything else raises :class:`attnlab.errors.ParameterError`."""
    key, sep, raw = text.partition("=")
    if not sep or not key.isidentifier():
        raise ParameterError(f"parameters are given as key=value; got {text!r}")
    if json_values:
        try:
            return key, json.loads(raw)
        except ValueError:
            pass
    try:
        return key, ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return key, raw


def split_assignments(text: str) -> list[str]:
    """Several ``key=value`` assignments in one string, separated by white space (make's ``PARAMS``): split
    before each ``key=``, so a value may hold spaces (``seeds=[0, 1] steps=100`` is two). Each part is then
    read by :func:`parse_assignment`."""
    return [part for part in re.split(r"\s+(?=[A-Za-z_]\w*=)", text.strip()) if part]


#: The environment variable the scale ``auto`` reads first (make test and store-notebooks: smoke).
SCALE_ENV = "ATTNLAB_SCALE"


def check_scale(scale: object) -> str:
    """A scale name. ``auto`` (the notebooks' default, and the Colab choice) resolves to ``$ATTNLAB_SCALE``
    when set, else to ``cpu``: the cpu-scale experiments, on whatever device is present (``device="auto"``
    picks a GPU where there is one)."""
    if scale == "auto":
        scale = os.environ.get(SCALE_ENV, "cpu")
        if scale not in SCALES:
            raise ParameterError(f"{SCALE_ENV} must be one of {', '.join(SCALES)}; got {scale!r}")
    if scale not in SCALES:
        raise ParameterError(f"scale must be auto or one of {', '.join(SCALES)}; got {scale!r}")
    return str(scale)


def check_seeds(seeds: object, default: Sequence[int]) -> tuple[int, ...]:
    """A list of distinct non-negative ints; empty means the preset's ``default``. A bare int is refused:
    ``seeds=3`` reads as "three seeds" as easily as "seed 3"."""
    if is_int(seeds):
        raise ParameterError(
            f"seeds must be a list of non-negative integers; got the integer {seeds!r}: write [{seeds}] for "
            f"seed {seeds} alone (a list such as [0, 1, 2] for several)"
        )
    if not isinstance(seeds, (list, tuple)) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds
    ):
        raise ParameterError(f"seeds must be a list of non-negative integers; got {seeds!r}")
    too_large = [s for s in seeds if s >= 2**63]
    if too_large:
        raise ParameterError(f"seeds must be below 2**63 (torch's seed range); got {too_large}")
    if len(set(seeds)) != len(seeds):
        raise ParameterError(f"seeds must be distinct; got {seeds!r}")
    return tuple(seeds) or tuple(default)


def check_device(device: object) -> str:
    """``"auto"`` or a torch device string that exists on this machine."""
    if not isinstance(device, str):
        raise ParameterError(f"device must be a string such as 'auto', 'cpu' or 'cuda'; got {device!r}")
    if device == "auto":
        return device
    try:
        dev = torch.device(device)
    except RuntimeError as err:
        raise ParameterError(f"device {device!r} is not a torch device: {err}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ParameterError(f"device {device!r} requested but CUDA is not available here")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ParameterError(f"device {device!r} requested but MPS is not available here")
    return device


def check_count(name: str, value: object) -> int:
    """A non-negative int, 0 meaning the preset's value (which the caller keeps)."""
    if not is_int(value) or value < 0:
        raise ParameterError(f"{name} must be a positive integer, or 0 for the preset's; got {value!r}")
    return value


def check_number(name: str, value: object, default: float, low: float = 0.0, high: float = math.inf) -> float:
    """A number in the open interval (``low``, ``high``); 0 means the preset's ``default``."""
    if not is_number(value) or not (value == 0 or low < value < high):
        raise ParameterError(
            f"{name} must be a number in ({low:g}, {high:g}), or 0 for the preset's ({default:g}); "
            f"got {value!r}"
        )
    return float(value) or default


def check_numbers(
    name: str, values: object, default: Sequence[float], low: float = 0.0, high: float = math.inf
) -> tuple[float, ...]:
    """A list of distinct numbers in the open interval (``low``, ``high``), returned in ascending order; empty
    means the preset's ``default``."""
    if not isinstance(values, (list, tuple)) or not all(is_number(v) and low < v < high for v in values):
        raise ParameterError(f"{name} must be a list of numbers in ({low:g}, {high:g}); got {values!r}")
    if len(set(values)) != len(values):
        raise ParameterError(f"{name} must be distinct; got {values!r}")
    return tuple(sorted(float(v) for v in values)) or tuple(default)


def check_subset(
    name: str, chosen: object, available: Iterable[str], default: Sequence[str] | None = None
) -> tuple[str, ...]:
    """A list drawn from ``available``; empty means ``default`` (all of them when None)."""
    available = tuple(available)
    if not isinstance(chosen, (list, tuple)) or not all(isinstance(c, str) for c in chosen):
        raise ParameterError(f"{name} must be a list of names from {list(available)}; got {chosen!r}")
    unknown = [c for c in chosen if c not in available]
    if unknown:
        raise ParameterError(f"{name}: unknown {unknown}; choose from {list(available)}")
    return tuple(chosen) or (available if default is None else tuple(default))


#: The first line of the cell papermill injects after a notebook's ``parameters`` cell.
INJECTED_HEADER = "# Parameters"


def _assigned(source: str) -> set[str]:
    """The names a cell's top-level assignments bind (``x = 1``, ``x: int = 1``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def unknown_injected(history: Sequence[str]) -> list[str]:
    """The names papermill injected that the notebook's ``parameters`` cell does not declare, read from a
    kernel's input history (IPython's ``In``): the last cell that starts with papermill's header
    (:data:`INJECTED_HEADER`) against the cell run just before it. Empty where nothing was injected."""
    for index in range(len(history) - 1, 0, -1):
        if history[index].startswith(INJECTED_HEADER + "\n"):
            return sorted(_assigned(history[index]) - _assigned(history[index - 1]))
    return []


def refuse_unknown_parameters() -> None:
    """In a notebook kernel, raise a :class:`ParameterError` naming each parameter papermill injected that
    the notebook does not take (``papermill -p seed 1`` where the notebook takes ``seeds``): papermill only
    warns, and the value would be ignored. Outside IPython, or with nothing injected, it does nothing."""
    from IPython import get_ipython

    shell = get_ipython()
    unknown = unknown_injected(shell.user_ns.get("In", [])) if shell is not None else []
    if unknown:
        raise ParameterError(
            f"unknown parameter(s) {unknown}: this notebook does not take them (its parameters cell lists "
            "what it takes)"
        )
