"""The results site: the claims tables, the executed notebooks, the accounts of the papers in ``docs/`` and
the library's API reference, as the source of a static MkDocs site (mkdocs-material, mkdocs-jupyter for the
notebooks, mkdocstrings for the API).

    python -m attnlab.tools.site --scale cpu --out build/site-src          # the pages and their mkdocs.yml
    mkdocs build --strict -f build/site-src/mkdocs.yml -d "$PWD/build/site"  # the HTML (``make site``: both)

The verdict counts and the claims are read with :mod:`attnlab.runner.report`'s functions, as
``figures/<scale>/REPORT.md`` and the README's overview read them. A paper without a claims table at the scale
gets a page that says so, with whatever figures and executed notebook it has. Every link in the site is
relative (``use_directory_urls: false``) and nothing is loaded from elsewhere (no web fonts; MathJax is a
local copy from the ``jupyter-server-mathjax`` package; remote images in the notebooks become their alt text),
so the built folder works from ``file://`` and from any sub-path of a web server as it is (the search box
needs HTTP: browsers start no worker from ``file://``).
"""

from __future__ import annotations

import argparse
import html
import json
import posixpath
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from attnlab import paths
from attnlab.papers import PAPERS
from attnlab.runner import manifest, report
from attnlab.runner.claims import SMOKE_NOTE
from attnlab.runner.paper_figure import SUMMARY_DIR
from attnlab.tools.colab import repository_url

#: Where the local MathJax copy lands in the site, and how a page loads it.
MATHJAX_DIR = "assets/mathjax"
MATHJAX_QUERY = "?config=TeX-AMS-MML_HTMLorMML-full,Safe,attnlab"
#: MathJax's own configuration for the site (``config/attnlab.js`` of the copy): the STIX web fonts, the only
#: ones the copy has, and no progress messages.
MATHJAX_CONFIG = """\
MathJax.Hub.Config({
  "HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null},
  messageStyle: "none"
});
MathJax.Ajax.loadComplete("[MathJax]/config/attnlab.js");
"""
STYLESHEET = "assets/site.css"
NO_CLAIMS = "No claims table at this scale yet"

#: The site's stylesheet: verdict badges, the claims beside their figures, the overview's counts.
CSS = """\
.md-grid { max-width: 96rem; }
.verdict { padding: 0 .45em; border-radius: .3em; font-weight: 700; white-space: nowrap; }
.verdict.holds, .verdict-counts th:nth-child(2) { background: #d4f0da; color: #11551f; }
.verdict.does-not-hold, .verdict-counts th:nth-child(3) { background: #f9d6d3; color: #85180f; }
.verdict.inconclusive, .verdict-counts th:nth-child(4) { background: #fbedc2; color: #614600; }
.verdict.not-testable-here, .verdict-counts th:nth-child(5) { background: #e1e5ea; color: #343c48; }
.md-typeset .verdict-counts table:not([class]) td:nth-child(n+2):nth-child(-n+5) { text-align: center;
  font-variant-numeric: tabular-nums; }
.md-typeset .verdict-counts table:not([class]) { font-size: .8rem; }
.claims-group { display: grid; grid-template-columns: minmax(0, 4fr) minmax(0, 5fr); gap: 0 1.6rem;
  align-items: start; }
.claims-group > .figures { position: sticky; top: 3.6rem; }
.claims-group > .figures img { display: block; width: 100%; height: auto; margin-bottom: .6rem;
  border: 1px solid var(--md-default-fg-color--lightest); }
.claim { border-left: .25rem solid var(--md-default-fg-color--lightest); padding: 0 0 0 .8rem;
  margin-bottom: 1.4rem; }
.claim.holds { border-left-color: #2e9e4f; }
.claim.does-not-hold { border-left-color: #c9372c; }
.claim.inconclusive { border-left-color: #d9a400; }
.claim.not-testable-here { border-left-color: #8a93a0; }
.md-typeset .claim table:not([class]) { font-size: .7rem; }
.md-typeset .claim table:not([class]) td { padding: .35em .8em; }
.md-typeset .claim table:not([class]) td:first-child { white-space: nowrap;
  color: var(--md-default-fg-color--light); }
.md-typeset .claim table:not([class]) th:empty { display: none; }
.gallery img { max-width: 48%; height: auto; margin: 0 1% 1rem 0; vertical-align: top; }
@media screen and (max-width: 76.1875em) {
  .claims-group { grid-template-columns: minmax(0, 1fr); }
  .claims-group > .figures { position: static; }
  .gallery img { max-width: 100%; }
}
"""

_LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")
_REMOTE_IMAGE = re.compile(r"!\[([^\]]*)\]\((?:https?:)?//[^)]*\)")


def escape(text: object) -> str:
    """``text`` as literal Markdown: no emphasis, link, math, HTML or table cell break in it is interpreted,
    and a missing value (NaN, None) is the empty string."""
    if text is None or (isinstance(text, float) and pd.isna(text)):
        return ""
    literal = html.escape(str(text), quote=False).replace("\n", " ")
    return re.sub(r"([\\`*_\[\]|$#])", r"\\\1", literal)


def number(value: float | None) -> str:
    """A number of a claims row as the reports print it (4 significant digits), empty where it is missing."""
    if value is None or pd.isna(value):
        return ""
    return f"{float(value):.4g}"


def _verdict_class(word: str) -> str:
    return word.replace(" ", "-")


def doc_name(paper: str) -> str:
    """The page of ``paper`` in ``docs/papers/`` (``sd_routing`` -> ``sd-routing.md``)."""
    return paper.replace("_", "-") + ".md"


def page_title(markdown: Path) -> str:
    """The first heading of a Markdown file."""
    for line in markdown.read_text().splitlines():
        if line.startswith("# "):
            return line.removeprefix("# ").strip()
    return markdown.stem


# -- figures -----------------------------------------------------------------------------------------------


def _words(text: str, singular: bool = False) -> list[str]:
    words = re.findall(r"[a-z]+|\d+", text.lower())
    return [w.removesuffix("s") if singular and len(w) > 3 else w for w in words]


def _contains_run(words: list[str], run: list[str]) -> bool:
    return bool(run) and any(words[i : i + len(run)] == run for i in range(len(words) - len(run) + 1))


def figure_groups(labels: list[str], images: list[str]) -> dict[str, list[str]]:
    """The PNGs (file names) beside each figure label of a claims table. A label names the images whose file
    name contains its words in order ("Fig. 3" -> ``fig3_*.png``, "scale trend" -> ``scale_trend.png``,
    "collapse" -> ``filtering_collapse.png``); a label that names none takes those that contain its words
    without their plural s ("sinks" -> ``sink_*.png``), less the images another label names. Unlike
    :func:`attnlab.runner.report.figure_file`, which links one "Fig. N", a label may name several images."""
    stems = {image: _words(Path(image).stem) for image in images}
    exact = {label: [i for i in images if _contains_run(stems[i], _words(label))] for label in labels}
    taken = {i for named in exact.values() for i in named}
    for label, named in exact.items():
        if not named:
            run = _words(label, singular=True)
            loose = [i for i in images if _contains_run(_words(Path(i).stem, singular=True), run)]
            exact[label] = [i for i in loose if i not in taken]
    return exact


# -- links ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Links:
    """Where a repository path lands in the site (``targets``: repository path -> site path), and the
    repository's URL for every other path."""

    targets: dict[str, str]
    repo_url: str

    def rewrite(self, text: str, source: str, dest: str, html_pages: bool = False) -> str:
        """``text`` (Markdown of the repository file ``source``, placed at the site path ``dest``) with every
        relative link pointing where its target is in the site, relative to ``dest``: a page or file the site
        holds, else the file in the repository on the web. ``html_pages``: link a page by its ``.html`` (for
        notebooks, whose links MkDocs does not resolve)."""

        def replace(found: re.Match[str]) -> str:
            target = found.group(2)
            if re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target):
                return found.group(0)
            path, _, fragment = target.partition("#")
            repo_path = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
            site_path = self.targets.get(repo_path)
            if site_path is None:
                kind = "tree" if path.endswith("/") else "blob"
                new = f"{self.repo_url}/{kind}/main/{repo_path}"
            else:
                site_path, _, anchor = site_path.partition("#")
                fragment = fragment or anchor
                new = posixpath.relpath(site_path, posixpath.dirname(dest) or ".")
                if html_pages:
                    new = re.sub(r"\.(md|ipynb)$", ".html", new)
            return found.group(1) + new + (f"#{fragment}" if fragment else "") + found.group(3)

        return _LINK.sub(replace, text)


# -- pages ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Paper:
    """One paper's sources at a scale: its figures folder, its executed notebook and its account in
    ``docs/papers/`` (each may be missing)."""

    name: str
    folder: Path
    notebook: Path
    account: Path

    @property
    def incomplete(self) -> str:
        """Why its folder is not as publish left it ("" when it is, or when there is no folder):
        :func:`attnlab.runner.report.incomplete`."""
        published = (self.folder / "claims.csv").is_file() or (self.folder / manifest.MANIFEST).is_file()
        return report.incomplete(self.folder) if published else ""

    @property
    def has_claims(self) -> bool:
        """Whether the paper has a claims table at this scale, whole as publish wrote it."""
        return (self.folder / "claims.csv").is_file() and not self.incomplete

    @property
    def images(self) -> list[str]:
        """The file names of its figures (PNG) at this scale, sorted."""
        return sorted(p.name for p in self.folder.glob("*.png")) if self.folder.is_dir() else []

    @property
    def summary(self) -> Path:
        """Its summary figure, the paper's numbers beside ours (``figures/<scale>/summary/<name>.png``, which
        `attnlab.runner.report.write_summary_figures` writes; it may be missing)."""
        return self.folder.parent / SUMMARY_DIR / f"{self.name}.png"

    @property
    def title(self) -> str:
        """The title of its claims table, else of its account, else its name."""
        if self.has_claims and (self.folder / "claims.md").is_file():
            return page_title(self.folder / "claims.md")
        return page_title(self.account) if self.account.is_file() else self.name


def _links_line(paper: Paper, scale: str) -> str:
    parts = []
    if paper.account.is_file():
        parts.append(f"[the paper and this reproduction](../papers/{paper.account.name})")
    if paper.notebook.is_file():
        parts.append(f"[the executed notebook](../notebooks/{paper.name}.ipynb) (`{scale}` scale)")
    parts.append("[how a verdict is reached](../verdicts.md)")
    return "Read with " + ", ".join(parts) + "."


def _claim_card(index: int, row: pd.Series) -> str:
    word = report.verdict_word(row["verdict"])
    interval = ""
    if not (pd.isna(row["low"]) or pd.isna(row["high"])):
        interval = f"[{number(row['low'])}, {number(row['high'])}]"
    n = "" if pd.isna(row["n"]) else str(int(row["n"]))
    fields = [
        ("the paper", escape(row["paper"])),
        ("ours", escape(row["ours"])),
        ("estimate", number(row["estimate"])),
        ("95 % interval (low, high)", interval),
        ("n", n),
        ("unit", escape(row.get("unit", ""))),
        ("null", number(row["null"])),
        ("margin", number(row["margin"])),
        ("detectable effect", number(row["detectable"])),
        ("rule", escape(row["rule"])),
        ("p (one-sided)", number(row.get("p", float("nan")))),
        ("q (Benjamini-Hochberg, this table)", number(row.get("q", float("nan")))),
    ]
    table = ["|  |  |", "|---|---|"] + [f"| {name} | {value} |" for name, value in fields if value]
    return "\n".join(
        [
            f'<div class="claim {_verdict_class(word)}" markdown>',
            "",
            f"### {index}. {escape(row['claim'])} {{#claim-{index}}}",
            "",
            f"**{word}**{{ .verdict .{_verdict_class(word)} }} {escape(row['reason'])}",
            "",
            *table,
            "",
            "</div>",
        ]
    )


def _figures_section(title: str, images: list[str]) -> list[str]:
    """A section of images side by side, each linking its full-size file (nothing without images)."""
    if not images:
        return []
    gallery = ['<div class="gallery" markdown>', "", *(f"[![{i}]({i})]({i})" for i in images), "", "</div>"]
    return [f"## {title}", "", *gallery, ""]


def claims_page(paper: Paper, scale: str) -> str:
    """The Markdown of a paper's claims page: each claim, grouped by the figure it names, with its verdict,
    reason and evidence (estimate, 95 % interval, n, null, margin, detectable effect, rule) beside that
    figure; then the figures no claim names. Without a claims table: a notice, and the figures there are."""
    head = [
        "---",
        "hide:",
        "  - toc",
        "---",
        "",
        f"# {escape(paper.title)}",
        "",
        _links_line(paper, scale),
        "",
    ]
    if scale == "smoke":
        head += [f'!!! warning "Smoke scale"\n    {SMOKE_NOTE}', ""]
    images = paper.images
    if paper.incomplete:
        head += [f'!!! warning "Incomplete"\n    Not read: {escape(paper.incomplete)}.', ""]
        return "\n".join(head)
    if not paper.has_claims:
        where = f"figures/{scale}/{paper.name}/claims.csv"
        head += [
            f'!!! note "{NO_CLAIMS}"',
            f"    `{where}` is not there: this paper's claims have not been judged at `{scale}` scale yet",
            "    (or were withdrawn until they are). The figures below, if any, are from its last run at",
            "    this scale; read them with the paper's account.",
            "",
        ]
        return "\n".join(head + _figures_section("Figures at this scale", images))
    frame = pd.read_csv(paper.folder / "claims.csv")
    if not report.judged_by_the_rule(frame):
        head += [f'!!! warning "Not re-judged"\n    {report.NOT_REJUDGED}', ""]
        head += [f"- **{escape(r['verdict'])}**: {escape(r['claim'])}" for _, r in frame.iterrows()]
        return "\n".join(head + [""] + _figures_section("Figures at this scale", images))
    labels = list(dict.fromkeys(str(f) for f in frame["figure"]))
    groups = figure_groups(labels, images)
    body = []
    for label in labels:
        rows = frame[frame["figure"].astype(str) == label]
        cards = [_claim_card(int(i) + 1, row) for i, row in rows.iterrows()]
        figures = [f"[![{label}: {image}]({image})]({image})" for image in groups[label]]
        body += [f"## {escape(label)}", "", '<div class="claims-group" markdown>', ""]
        body += ['<div class="claims" markdown>', "", *cards, "", "</div>", ""]
        if figures:
            body += ['<div class="figures" markdown>', "", "\n\n".join(figures), "", "</div>", ""]
        body += ["</div>", ""]
    rest = [i for i in images if not any(i in named for named in groups.values())]
    return "\n".join(head + body + _figures_section("Figures no claim names", rest))


def overview_page(papers: list[Paper], scale: str) -> str:
    """The Markdown of the site's front page: the verdict counts per paper (:func:`report.overview`, with a
    row for each paper without a claims table at ``scale``), then where each paper's pages are."""
    table = report.overview(scale).rstrip("\n").splitlines()
    table += [
        f"| {p.name} | – | – | – | – | [no table yet]({p.name}/claims.md) | |"
        for p in papers
        if not p.has_claims and not p.incomplete
    ]
    lines = [
        "---",
        "hide:",
        "  - toc",
        "---",
        "",
        f"# Results at `{scale}` scale",
        "",
        "Reproductions of four 2026 papers on self-attention and a synthesis that applies every paper's",
        "measurement to every attention variant. Each paper's claims are judged by one decision rule",
        "against a visible null with a 95 % interval from seeds or windows",
        "([how a verdict is reached](verdicts.md)): *holds*, *does not hold*, *inconclusive* (with the",
        "smallest effect the test could have detected) or *not testable here*.",
        "",
    ]
    if scale == "smoke":
        lines += [f'!!! warning "Smoke scale"\n    {SMOKE_NOTE}', ""]
    lines += [
        "## Verdicts per paper",
        "",
        '<div class="verdict-counts" markdown>',
        "",
        *table,
        "",
        "</div>",
        "",
    ]
    lines += ["## The papers", "", "| paper | claims | account | executed notebook |", "|---|---|---|---|"]
    for p in papers:
        account = f"[{p.account.name}](papers/{p.account.name})" if p.account.is_file() else ""
        notebook = f"[{p.name}.ipynb](notebooks/{p.name}.ipynb)" if p.notebook.is_file() else ""
        lines.append(f"| {escape(p.title)} | [{p.name}]({p.name}/claims.md) | {account} | {notebook} |")
    lines += [
        "",
        f"Every number comes from `figures/{scale}/`, written by the notebooks",
        f"(`make reproduce SCALE={scale}`); the papers' accounts are `docs/papers/`, and the",
        "[API reference](api/index.md) is the library's docstrings.",
        "",
    ]
    return "\n".join(lines + _summary_section(papers))


def _summary_section(papers: list[Paper]) -> list[str]:
    """The front page's figures: each paper's numbers beside ours (`Paper.summary`), for the papers
    whose claims table has one."""
    shown = [p for p in papers if p.has_claims and p.summary.is_file()]
    if not shown:
        return []
    lines = [
        "## The papers' numbers beside ours",
        "",
        "For each claim whose paper gives a number in the units of our estimate: ours with its 95 %",
        "interval, coloured by its verdict, the paper's number (a black diamond) or range (a black bar)",
        "above it, and the verdict's null dashed; one panel per quantity (which rows are comparable:",
        "`attnlab.runner.paper_figure`).",
        "",
    ]
    for p in shown:
        image = f"{SUMMARY_DIR}/{p.summary.name}"
        lines += [
            f"### {escape(p.title)}",
            "",
            f"[![{escape(p.title)}: the paper's numbers beside ours]({image})]({image})",
            "",
        ]
    return lines


# -- API reference -------------------------------------------------------------------------------------------


def modules(package: Path) -> list[str]:
    """The dotted names of the modules of the package folder ``package`` (``lib/attnlab``), sorted;
    ``__main__`` and private modules are left out."""
    names = []
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        elif parts[-1].startswith("_"):
            continue
        names.append(".".join(parts))
    return sorted(names)


def api_pages(names: list[str]) -> dict[str, list[str]]:
    """The API reference's pages and the modules on each: one page per top-level module and per subpackage
    (``attnlab.runner`` holds all of the runner's modules; each paper's package is a page of its own)."""
    pages: dict[str, list[str]] = {}
    for name in names:
        parts = name.split(".")
        depth = 3 if parts[1:2] == ["papers"] else 2
        pages.setdefault(".".join(parts[:depth]), []).append(name)
    return pages


def api_page(page: str, members: list[str]) -> str:
    """The Markdown of one API page: the docstrings of each of its modules, through mkdocstrings (each under
    a heading whose anchor is the module's dotted name; the page's own package under the page's title)."""
    own = "\n    options:\n      show_root_heading: false"
    return f"# `{page}`\n\n" + "\n\n".join(f"::: {m}" + (own if m == page else "") for m in members) + "\n"


def api_link(page: str, module: str) -> str:
    """Where ``module`` is documented: its page, at its heading unless it is the page's own package."""
    return f"api/{page}.md" + ("" if module == page else f"#{module}")


def api_index(pages: dict[str, list[str]], package: Path) -> str:
    """The API reference's front page: every module with the first paragraph of its docstring."""
    import ast

    lines = [
        "# API reference",
        "",
        "The library's modules, from their docstrings.",
        "",
        "| module | |",
        "|---|---|",
    ]
    for page, members in pages.items():
        for name in members:
            parts = name.split(".")[1:]
            file = package.joinpath(*parts, "__init__.py")
            if not file.is_file():
                file = package.joinpath(*parts[:-1], parts[-1] + ".py")
            doc = ast.get_docstring(ast.parse(file.read_text())) or ""
            first = escape(doc.split("\n\n")[0])
            lines.append(f"| [`{name}`]({api_link(page, name).removeprefix('api/')}) | {first} |")
    return "\n".join(lines) + "\n"


# -- the whole source ----------------------------------------------------------------------------------------


def mathjax_source() -> Path:
    """The MathJax 2 copy that the ``jupyter-server-mathjax`` package ships."""
    import jupyter_server_mathjax

    return Path(jupyter_server_mathjax.__file__).parent / "static"


def mkdocs_config(
    scale: str, papers: list[Paper], api: dict[str, list[str]], lib: Path, cache: Path
) -> dict[str, object]:
    """The site's ``mkdocs.yml``: theme, plugins, Markdown extensions and the navigation; mkdocs-jupyter keeps
    its converted notebooks in ``cache`` (it would write ``.cache/`` into the working directory)."""
    nav: list[object] = [{"Overview": "index.md"}]
    for p in papers:
        pages: list[object] = [{"Claims": f"{p.name}/claims.md"}]
        if p.account.is_file():
            pages.append({"The paper and this reproduction": f"papers/{p.account.name}"})
        if p.notebook.is_file():
            pages.append({"Executed notebook": f"notebooks/{p.name}.ipynb"})
        nav.append({p.name: pages})
    nav += [
        {"How a verdict is reached": "verdicts.md"},
        {"Which rows judge each claim": "coverage.md"},
        {"Data sources": "data-sources.md"},
        {"Where each table comes from": "provenance.md"},
        {"Guide": "guide.md"},
        {"About the papers": "papers/index.md"},
        {"API reference": [{"Modules": "api/index.md"}] + [{page: f"api/{page}.md"} for page in api]},
    ]
    return {
        "site_name": f"attnlab: results at {scale} scale",
        "site_description": "Reproductions of four 2026 papers on self-attention: claims and verdicts.",
        "docs_dir": "docs",
        "use_directory_urls": False,
        "theme": {
            "name": "material",
            "font": False,
            "palette": {"scheme": "default", "primary": "indigo", "accent": "indigo"},
            "features": ["navigation.sections", "navigation.top", "toc.follow"],
        },
        "extra_css": [STYLESHEET],
        "markdown_extensions": [
            "tables",
            "attr_list",
            "md_in_html",
            "admonition",
            {"toc": {"permalink": True}},
            {"pymdownx.arithmatex": {"generic": True}},
        ],
        "plugins": [
            "search",
            {
                "mkdocs-jupyter": {
                    "include_source": True,
                    "ignore_h1_titles": True,
                    "execute": False,
                    "cache_dir": str(cache),
                    "custom_mathjax_url": f"../{MATHJAX_DIR}/MathJax.js{MATHJAX_QUERY}",
                }
            },
            {
                "mkdocstrings": {
                    "handlers": {
                        "python": {
                            "paths": [str(lib)],
                            "options": {
                                "show_source": False,
                                "show_root_heading": True,
                                "show_root_full_path": True,
                                "members_order": "source",
                                "filters": ["!^_"],
                                "heading_level": 2,
                                "show_signature_annotations": True,
                                "extensions": ["attnlab.tools.docstrings:SphinxRoles"],
                            },
                        }
                    }
                }
            },
        ],
        "nav": nav,
    }


def _notebook_copy(source: Path, name: str, links: Links) -> str:
    """An executed notebook with its Markdown cells' links pointing into the site and its remote images (the
    Colab badge) replaced by their alt text."""
    notebook = json.loads(source.read_text())
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            text = _REMOTE_IMAGE.sub(r"\1", "".join(cell["source"]))
            cell["source"] = links.rewrite(text, f"notebooks/{name}.ipynb", f"notebooks/{name}.ipynb", True)
    return json.dumps(notebook, indent=1)


def site_targets(scale: str, papers: list[Paper], api: dict[str, list[str]]) -> dict[str, str]:
    """Where each repository path the site holds lands in it: the docs, the claims tables and figures at
    ``scale``, the notebooks (as their executed copies) and the library's modules (as their API pages)."""
    targets = {
        "docs/verdicts.md": "verdicts.md",
        "docs/coverage.md": "coverage.md",
        "docs/provenance.md": "provenance.md",
        "docs/guide.md": "guide.md",
        "docs/data-sources.md": "data-sources.md",
        "docs/papers/README.md": "papers/index.md",
    }
    targets[f"figures/{scale}/REPORT.md"] = "index.md"
    for p in papers:
        targets[f"docs/papers/{p.account.name}"] = f"papers/{p.account.name}"
        targets[f"figures/{scale}/{p.name}/claims.md"] = f"{p.name}/claims.md"
        targets.update({f"figures/{scale}/{p.name}/{i}": f"{p.name}/{i}" for i in p.images})
        targets[f"figures/{scale}/{SUMMARY_DIR}/{p.summary.name}"] = f"{SUMMARY_DIR}/{p.summary.name}"
        if p.notebook.is_file():
            targets[f"notebooks/{p.name}.ipynb"] = f"notebooks/{p.name}.ipynb"
            targets[f"figures/{scale}/notebooks/{p.name}.ipynb"] = f"notebooks/{p.name}.ipynb"
    for page, members in api.items():
        for name in members:
            where = api_link(page, name)
            folder = "lib/" + name.replace(".", "/")
            targets.update({folder: where, f"{folder}/__init__.py": where, f"{folder}.py": where})
    return targets


def _with_mathjax(text: str, dest: str) -> str:
    """A Markdown page with MathJax loaded at its end when it has ``$...$`` math (only pages that need it)."""
    if not re.search(r"(?<![\\$])\$[^\s$][^$\n]*\$", text):
        return text
    src = posixpath.relpath(f"{MATHJAX_DIR}/MathJax.js", posixpath.dirname(dest) or ".") + MATHJAX_QUERY
    return f'{text.rstrip()}\n\n<script src="{src}"></script>\n'


def write_source(scale: str, out: Path) -> Path:
    """Write the site's source for ``scale`` into ``out``: ``out/mkdocs.yml`` and the pages in ``out/docs/``
    (replaced whole). Returns the ``mkdocs.yml``."""
    root = paths.repo_root()
    if root is None:
        raise SystemExit("the site is built from a checkout (its docs/ and lib/); pyproject.toml not found")
    figures = paths.figures_dir() / scale
    accounts = root / "docs" / "papers"
    papers = [
        Paper(name, figures / name, figures / "notebooks" / f"{name}.ipynb", accounts / doc_name(name))
        for name in PAPERS
    ]
    package = root / "lib" / "attnlab"
    api = api_pages(modules(package))
    links = Links(site_targets(scale, papers, api), repository_url(root / "pyproject.toml"))
    docs = out / "docs"
    if docs.exists():
        shutil.rmtree(docs)
    for folder in ("papers", "notebooks", "api", "assets", SUMMARY_DIR, *PAPERS):
        (docs / folder).mkdir(parents=True)

    (docs / "index.md").write_text(overview_page(papers, scale))
    for p in papers:
        (docs / p.name / "claims.md").write_text(claims_page(p, scale))
        for image in p.images:
            shutil.copy2(p.folder / image, docs / p.name / image)
        if p.has_claims and p.summary.is_file():
            shutil.copy2(p.summary, docs / SUMMARY_DIR / p.summary.name)
        if p.notebook.is_file():
            (docs / "notebooks" / f"{p.name}.ipynb").write_text(_notebook_copy(p.notebook, p.name, links))
    sources = sorted(accounts.glob("*.md")) + [
        root / "docs" / "verdicts.md",
        root / "docs" / "coverage.md",
        root / "docs" / "data-sources.md",
        root / "docs" / "provenance.md",
        root / "docs" / "guide.md",
    ]
    for source in sources:
        repo_path = source.relative_to(root).as_posix()
        dest = links.targets.get(repo_path, "papers/" + source.name)
        text = links.rewrite(source.read_text(), repo_path, dest)
        (docs / dest).write_text(_with_mathjax(text, dest))
    (docs / "api" / "index.md").write_text(api_index(api, package))
    for page, members in api.items():
        (docs / "api" / f"{page}.md").write_text(api_page(page, members))
    (docs / STYLESHEET).write_text(CSS)
    shutil.copytree(mathjax_source(), docs / MATHJAX_DIR, ignore=_mathjax_ignore)
    (docs / MATHJAX_DIR / "config" / "attnlab.js").write_text(MATHJAX_CONFIG)

    config = out / "mkdocs.yml"
    settings = mkdocs_config(scale, papers, api, package.parent, out.absolute() / ".cache" / "mkdocs-jupyter")
    config.write_text(yaml.safe_dump(settings, sort_keys=False))
    return config


def _mathjax_ignore(folder: str, names: list[str]) -> list[str]:
    """What the site leaves out of MathJax: the translations other than English."""
    return [n for n in names if n != "en"] if Path(folder).name == "localization" else []


def main(argv: list[str] | None = None) -> int:
    """Write the site's source (``--scale``, ``--out``) and say how to build it."""
    parser = argparse.ArgumentParser(prog="python -m attnlab.tools.site", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", default="cpu", help="which figures/<scale>/ to publish (default cpu)")
    parser.add_argument("--out", type=Path, default=Path("build/site-src"), help="the source folder to write")
    args = parser.parse_args(argv)
    config = write_source(args.scale, args.out)
    print(f"{config}: build with mkdocs build -f {config} -d <site folder>")
    return 0


if __name__ == "__main__":
    sys.exit(main())
