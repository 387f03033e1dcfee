"""What every paper's experiment shares: where its figures go, which device it runs on, and how a ``steps``
parameter rescales a training schedule.

Where the figures go is decided here, from the experiment alone, so that every route (``make reproduce``, the
runner, papermill, Jupyter) writes to the same folder: the scale's defaults (given or not) write
``figures/<scale>/<paper>/``; any other parameters write ``figures/<scale>/<paper>--<slug>-<hash8>/``, named
by the settings that differ from the defaults (:attr:`PaperExperiment.changed`). Each folder holds a
``params.json`` saying which run it is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import re
from collections.abc import Mapping
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import ClassVar

import torch

from attnlab import paths
from attnlab.papers import PAPERS
from attnlab.training.trainer import TrainConfig, resolve_device

#: Between a paper's name and the settings of a run with other parameters (``xsa--seeds-0-1-<hash8>``).
RUN_SEPARATOR = "--"
#: The record of its run in every figures folder.
PARAMS_FILE = "params.json"


def with_steps(train: TrainConfig, steps: int) -> TrainConfig:
    """``train`` lasting ``steps`` steps, its warmup and evaluation interval scaled in proportion (the same
    warmup share and number of evaluations): a notebook's ``steps`` parameter."""
    scale = steps / train.steps
    return replace(
        train,
        steps=steps,
        warmup_steps=round(train.warmup_steps * scale),
        eval_every=max(1, round(train.eval_every * scale)),
    )


def flatten(value: object, path: str = "") -> dict[str, object]:
    """The leaves of a resolved setting, by dotted path: a dataclass's compared fields and a dict's items
    recursively, a tuple or list of plain values as one list (one holding dataclasses, dicts or lists item by
    item), anything else as itself (the presets hold numbers, strings, booleans and None)."""
    prefix = f"{path}." if path else ""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value) if f.compare]
    elif isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, (list, tuple)):
        if not any(dataclasses.is_dataclass(v) or isinstance(v, (dict, list, tuple)) for v in value):
            return {path: list(value)}
        items = [(str(i), v) for i, v in enumerate(value)]
    else:
        return {path: value}
    out: dict[str, object] = {}
    for key, item in items:
        out.update(flatten(item, prefix + key))
    return out


def slug(changed: dict[str, object], names: Mapping[str, str] | None = None, limit: int = 48) -> str:
    """A short readable name for ``changed`` settings: ``<key>-<value>`` per setting (the notebook parameter
    that sets it, where ``names`` maps the end of its path to one, else the last part of its path; list items
    joined by ``-``; a pair repeated across sizes once), joined by ``--``, reduced to letters, digits, ``.``,
    ``_`` and ``-`` and cut at ``limit`` characters (the run name's hash tells cut names apart)."""
    parts: list[str] = []
    for path, value in changed.items():
        text = "-".join(map(str, value)) if isinstance(value, list) else str(value)
        key = next((n for end, n in (names or {}).items() if path.endswith(end)), path.rsplit(".", 1)[-1])
        part = re.sub(r"[^A-Za-z0-9._]+", "-", f"{key}-{text}").strip("-")
        if part not in parts:
            parts.append(part)
    return RUN_SEPARATOR.join(parts)[:limit].rstrip("-.")


class PaperExperiment:
    """Base of the paper experiments (frozen dataclasses with ``scale`` and ``device`` fields, made by their
    paper module's ``configure``)."""

    paper: ClassVar[str]  # the paper's name in attnlab.papers.PAPERS, and its folder under figures/<scale>/
    #: Fields that choose how fast a run goes, not what it computes: left out of its settings and folder name.
    execution_fields: ClassVar[tuple[str, ...]] = ("workers",)
    #: The notebook parameter that sets a setting whose name differs from it (the end of the setting's path ->
    #: the parameter), so that a run folder's name says what the user changed (:func:`slug`).
    parameter_names: ClassVar[dict[str, str]] = {}
    scale: str
    device: str

    def settings(self) -> dict[str, object]:
        """Every setting this experiment resolved its parameters to, flattened (:func:`flatten`): its
        compared fields and their presets, the device as the type it resolves to here (``cpu``, ``cuda``),
        without ``scale`` (the folder above) and :attr:`execution_fields`."""
        compared = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)  # type: ignore[arg-type]  # every subclass is a dataclass
            if f.compare and f.name not in ("scale", *self.execution_fields)
        }
        return flatten(compared | {"device": self.torch_device.type})

    @cached_property
    def default_settings(self) -> dict[str, object]:
        """The :meth:`settings` of this scale's defaults: ``configure(scale=...)`` of this paper."""
        return importlib.import_module(PAPERS[self.paper]).configure(scale=self.scale).settings()

    @cached_property
    def changed(self) -> dict[str, object]:
        """The settings that differ from :attr:`default_settings`: path -> value (None for one the defaults
        have and this run lacks); empty for a default run, the defaults given explicitly included."""
        ours, default = self.settings(), self.default_settings
        keys = [*ours, *(k for k in default if k not in ours)]
        return {k: ours.get(k) for k in keys if ours.get(k) != default.get(k)}

    @property
    def is_default(self) -> bool:
        """Whether this run has its scale's default settings (and so writes ``figures/<scale>/<paper>/``)."""
        return not self.changed

    @property
    def run_name(self) -> str:
        """The name of this run's folders: the paper's name for a default run, else
        ``<paper>--<slug>-<hash8>`` (:func:`slug` of :attr:`changed`; the hash, of the changed settings as
        sorted JSON, keeps the name stable and tells apart runs whose slugs were cut alike)."""
        if self.is_default:
            return self.paper
        digest = hashlib.sha256(json.dumps(self.changed, sort_keys=True).encode()).hexdigest()[:8]
        return f"{self.paper}{RUN_SEPARATOR}{slug(self.changed, self.parameter_names)}-{digest}"

    def run_record(self) -> dict[str, object]:
        """What ``params.json`` holds: the paper, scale and run name, whether the run is the scale's default,
        each changed setting with its default, and every setting it ran with."""
        return {
            "paper": self.paper,
            "scale": self.scale,
            "run": self.run_name,
            "default": self.is_default,
            "changed": {
                k: {"value": v, "default": self.default_settings.get(k)} for k, v in self.changed.items()
            },
            "settings": self.settings(),
        }

    @property
    def figures(self) -> Path:
        """This run's figures folder, ``figures/<scale>/<run_name>/`` (see :attr:`run_name`), created on first
        use with its ``params.json`` (:meth:`run_record`)."""
        folder = paths.figures_dir() / self.scale / self.run_name
        record = folder / PARAMS_FILE
        text = json.dumps(self.run_record(), indent=1) + "\n"
        if not record.is_file() or record.read_text() != text:
            folder.mkdir(parents=True, exist_ok=True)
            record.write_text(text)
        return folder

    @property
    def torch_device(self) -> torch.device:
        """The device the ``device`` parameter resolves to on this machine (``auto``: CUDA if available)."""
        return resolve_device(self.device)

    def circuit_steps(self) -> int:
        """Training steps the experiment runs on CPU cores outside the GPU plan (QK-speed's circuits), at
        most; 0 for the others."""
        return 0

    def circuit_stacks(self) -> list[tuple[int, int]]:
        """The batched circuit program among ``circuit_steps``: (circuits, batched steps at most) per stack
        (QK-speed's); none for the others."""
        return []

    def check_data(self) -> None:
        """Fail with a clear message, before any compute, when data the experiment trains on is missing
        (the runner calls it for every notebook before running any; training calls it first)."""
