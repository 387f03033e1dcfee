"""The results site (``make site``, ``attnlab.tools.site``): the page generator's parts, then the whole site
built from the committed ``figures/cpu`` results into a temporary folder, served on 127.0.0.1 under a sub-path
and loaded page by page in Debian's headless Chromium over the DevTools protocol: every page loads with no
failed request (nothing from elsewhere either: other hosts do not resolve), every image has a size, every
internal link lands on a file of the site, the overview's screenshot shows the verdict counts, and the site
works from ``file://``. The browser tests skip when no Chromium binary is found (.ci/run installs
Debian's)."""

import base64
import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pandas as pd
import pytest

from attnlab.papers import PAPERS
from attnlab.runner import report
from attnlab.tools import site

ROOT = Path(__file__).resolve().parents[1]
SCALE = "cpu"
CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
NO_CHROMIUM = "no chromium binary on PATH (Debian: apt-get install chromium; .ci/run installs it)"
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
VIEWPORT = (1280, 900)

# What a page reports once loaded: its images with their natural sizes, its links, scripts and stylesheets.
PAGE_FACTS = """(async () => {
  const images = [...document.images];
  await Promise.all(images.map(i => i.complete ? null : new Promise(r => {
    i.addEventListener('load', r); i.addEventListener('error', r); })));
  return {
    images: images.map(i => [i.currentSrc || i.src, i.naturalWidth, i.naturalHeight]),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    assets: [...document.querySelectorAll('script[src]')].map(s => s.src)
      .concat([...document.querySelectorAll('link[href]')].map(l => l.href)),
  };
})()"""


# -- the generator's parts ---------------------------------------------------------------------------------


def test_figure_groups_name_the_images_of_each_label():
    images = [
        "fig1_attention_vs_contribution.png", "fig3_a.png", "fig3_b.png", "fig10_x.png", "scale_trend.png",
        "filtering_collapse.png", "sink_decomposition.png", "sink_value_cosines.png", "sink_rate.png",
        "cost.png",
    ]  # fmt: skip
    labels = ["Fig. 1", "Fig. 3", "scale trend", "collapse", "decomposition", "sinks", "S-D"]
    groups = site.figure_groups(labels, images)
    assert groups["Fig. 1"] == ["fig1_attention_vs_contribution.png"]  # not fig10_x.png
    assert groups["Fig. 3"] == ["fig3_a.png", "fig3_b.png"]
    assert groups["scale trend"] == ["scale_trend.png"] and groups["collapse"] == ["filtering_collapse.png"]
    assert groups["sinks"] == ["sink_value_cosines.png", "sink_rate.png"]  # less decomposition's own image
    assert groups["S-D"] == []


def test_links_point_into_the_site_or_at_the_repository():
    links = site.Links(
        {"docs/verdicts.md": "verdicts.md", "notebooks/xsa.ipynb": "notebooks/xsa.ipynb"},
        "https://github.com/o/r",
    )
    text = "[v](../verdicts.md#rules) [nb](../../notebooks/xsa.ipynb) [t](../../tests/) "
    text += "[x](https://a.b/c) [s](#s)"
    assert links.rewrite(text, "docs/papers/xsa.md", "papers/xsa.md") == (
        "[v](../verdicts.md#rules) [nb](../notebooks/xsa.ipynb) [t](https://github.com/o/r/tree/main/tests) "
        "[x](https://a.b/c) [s](#s)"
    )
    notebook = links.rewrite("[v](../docs/verdicts.md)", "notebooks/xsa.ipynb", "notebooks/xsa.ipynb", True)
    assert notebook == "[v](../verdicts.html)"


def test_escape_keeps_claim_text_literal():
    assert site.escape("a < b_i * c | $x$ [y]") == r"a &lt; b\_i \* c \| \$x\$ \[y\]"
    assert site.escape(float("nan")) == "" and site.number(float("nan")) == ""
    assert site.number(0.123456) == "0.1235"


def test_a_paper_without_a_claims_table_gets_a_notice(tmp_path):
    folder = tmp_path / "xsa"
    folder.mkdir()
    paper = site.Paper("xsa", folder, tmp_path / "none.ipynb", ROOT / "docs" / "papers" / "xsa.md")
    page = site.claims_page(paper, SCALE)
    assert site.NO_CLAIMS in page and "executed notebook" not in page
    assert "Exclusive Self Attention" in page  # the title from the paper's account


def test_overview_page_shows_the_summary_figure_of_each_paper_with_a_table(tmp_path, monkeypatch):
    from attnlab.runner import manifest
    from attnlab.runner.claims import Claim, write_claims
    from attnlab.runner.verdicts import HOLDS, Verdict

    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    root = tmp_path / SCALE
    write_claims([Claim("Fig. 1", "c", "p", "o", Verdict(HOLDS))], root / "xsa", "XSA")
    manifest.write(root / "xsa")
    (root / "summary").mkdir()
    for name in ("xsa", "synthesis"):  # synthesis: a figure left without its table is not shown
        (root / "summary" / f"{name}.png").write_bytes(b"png")
    papers = [
        site.Paper(n, root / n, tmp_path / "none.ipynb", tmp_path / "none.md") for n in ("xsa", "synthesis")
    ]
    page = site.overview_page(papers, SCALE)
    assert "[![XSA: the paper's numbers beside ours](summary/xsa.png)](summary/xsa.png)" in page
    assert "summary/synthesis.png" not in page
    assert page.index("## Verdicts per paper") < page.index("## The papers' numbers beside ours")


def test_claims_page_shows_every_claim_with_its_evidence(monkeypatch):
    monkeypatch.setenv("ATTNLAB_FIGURES", str(ROOT / "figures"))
    folder = report.paper_folders(SCALE)[0]
    frame = pd.read_csv(folder / "claims.csv")
    notebook = folder.parent / "notebooks" / f"{folder.name}.ipynb"
    paper = site.Paper(folder.name, folder, notebook, Path("none.md"))
    page = site.claims_page(paper, SCALE)
    assert page.count('<div class="claim ') == len(frame)
    for field in ("95 % interval (low, high)", "| n |", "detectable effect"):
        assert field in page
    for word in set(frame["verdict"]):
        assert f"**{word}**{{ .verdict" in page


# -- the built site in a browser ---------------------------------------------------------------------------


class Chromium:
    """Headless Chromium driven over the DevTools protocol: one page, its load event, its failed requests."""

    def __init__(self, binary: str, profile: Path):
        import websocket  # websocket-client

        args = [
            binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--hide-scrollbars", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", f"--user-data-dir={profile}",
            "about:blank",
        ]  # fmt: skip
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.is_file() and port_file.read_text().count("\n")):
            assert time.monotonic() < deadline and self.process.poll() is None, "chromium did not start"
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            target = next(t for t in json.load(answer) if t["type"] == "page")
        self.socket = websocket.create_connection(
            target["webSocketDebuggerUrl"], timeout=60, suppress_origin=True
        )
        self.next_id = 0
        self.events: list[dict] = []
        for domain in ("Page", "Network", "Runtime"):
            self.call(f"{domain}.enable")
        width, height = VIEWPORT
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                assert "error" not in message, (method, message["error"])
                return message["result"]
            self.events.append(message)

    def open(self, url: str) -> list[str]:
        """Load ``url`` until its load event; the requests that failed or answered an error on the way."""
        self.events = []
        self.call("Page.navigate", url=url)
        while not any(e["method"] == "Page.loadEventFired" for e in self.events):
            self.events.append(json.loads(self.socket.recv()))
        events = [(e["method"], e["params"]) for e in self.events]
        sent = {p["requestId"]: p["request"]["url"] for m, p in events if m == "Network.requestWillBeSent"}
        failed = [
            f"{sent[p['requestId']]}: {p['errorText']}"
            for m, p in events
            if m == "Network.loadingFailed"
            and sent.get(p["requestId"], "about:").startswith(("http", "file"))
        ]
        responses = [p["response"] for m, p in events if m == "Network.responseReceived"]
        return failed + [f"{r['url']}: HTTP {r['status']}" for r in responses if r["status"] >= 400]

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])

    def close(self) -> None:
        self.socket.close()
        self.process.terminate()
        self.process.wait(timeout=30)


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The site of the committed cpu results, with the summary figures the report draws from them (a copy of
    ``figures/cpu``, so the checkout is left as it is), built into ``<tmp>/served/attnlab`` (so it is served
    under a sub-path)."""
    tmp = tmp_path_factory.mktemp("site")
    out = tmp / "served" / "attnlab"
    shutil.copytree(ROOT / "figures" / SCALE, tmp / "figures" / SCALE)
    env = {**os.environ, "ATTNLAB_FIGURES": str(tmp / "figures"), "NO_MKDOCS_2_WARNING": "1"}
    draw = f"from attnlab.runner import report; report.write_summary_figures({SCALE!r})"
    commands = [
        [sys.executable, "-c", draw],
        [sys.executable, "-m", "attnlab.tools.site", "--scale", SCALE, "--out", str(tmp / "src")],
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
         "-f", str(tmp / "src" / "mkdocs.yml"), "-d", str(out)],
    ]  # fmt: skip
    for command in commands:  # as `make site` runs them
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope="module")
def served(built):
    """The base URL of the site on a local static server (loopback only), under the sub-path ``/attnlab/``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(built.parent)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/{built.name}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip(NO_CHROMIUM)
    chromium = Chromium(CHROMIUM, tmp_path_factory.mktemp("chromium-profile"))
    yield chromium
    chromium.close()


def _site_file(built: Path, base: str, url: str) -> Path:
    path = unquote(urlsplit(url).path).removeprefix(urlsplit(base).path)
    return built / (path + "index.html" if path == "" or path.endswith("/") else path)


@needs_chromium
@pytest.mark.slow
def test_every_page_loads_with_its_images_links_and_assets(built, served, browser):
    pages = sorted(p.relative_to(built).as_posix() for p in built.rglob("*.html") if p.name != "404.html")
    expected = {"index.html", "verdicts.html", "coverage.html", "api/index.html"}
    expected |= {f"{p}/claims.html" for p in PAPERS}
    assert expected <= set(pages)
    problems: list[str] = []
    checked: set[str] = set()
    for page in pages:
        problems += [f"{page}: request {f}" for f in browser.open(served + page)]
        facts = browser.evaluate(PAGE_FACTS)
        problems += [
            f"{page}: image {src[:80]} has no size" for src, w, h in facts["images"] if not (w and h)
        ]
        for url in facts["links"] + facts["assets"]:
            if not url.startswith(("http:", "https:")) or urlsplit(url).hostname != "127.0.0.1":
                continue  # another site (arxiv, the repository): not this one's to check, and not loaded here
            if not url.startswith(served):
                problems.append(f"{page}: {url} leaves the site's sub-path (an absolute link)")
                continue
            target = url.split("#")[0].split("?")[0]
            if target not in checked:
                checked.add(target)
                if not _site_file(built, served, target).is_file():
                    problems.append(f"{page}: link to {target}: no such file")
    assert not problems, "\n".join(problems[:40])
    assert len(checked) > len(pages)


@needs_chromium
@pytest.mark.slow
def test_overview_screenshot_shows_the_verdict_counts(built, served, browser, monkeypatch, tmp_path_factory):
    from PIL import Image

    assert browser.open(served + "index.html") == []
    shot = browser.screenshot()
    path = tmp_path_factory.getbasetemp() / "site-overview.png"
    path.write_bytes(shot)
    print(f"overview screenshot: {path}")
    image = Image.open(io.BytesIO(shot)).convert("RGB")
    assert image.size == VIEWPORT
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 100, "a nearly blank screenshot"
    assert max(colours)[0] < 0.9 * VIEWPORT[0] * VIEWPORT[1], "one colour fills the screenshot"

    table = browser.evaluate("""(() => {
      const table = document.querySelector('.verdict-counts table');
      const box = table.getBoundingClientRect();
      return {top: box.top, bottom: box.bottom, width: box.width,
              head: [...table.querySelectorAll('th')].map(c => c.innerText.trim()),
              rows: [...table.querySelectorAll('tbody tr')]
                .map(r => [...r.cells].map(c => c.innerText.trim()))};
    })()""")
    assert 0 < table["top"] < table["bottom"] and table["top"] < VIEWPORT[1] / 2 and table["width"] > 400
    assert table["head"][1:5] == list(report.VERDICT_COLUMNS.values())
    monkeypatch.setenv("ATTNLAB_FIGURES", str(ROOT / "figures"))
    counted = [line.strip("|").split(" | ")[:5] for line in report.overview(SCALE).splitlines()[2:]]
    rows = {row[0]: row for row in table["rows"]}
    for paper, *counts in counted:
        assert rows[paper.strip()][1:5] == [c.strip() for c in counts], paper
    for paper in PAPERS:
        assert paper in rows, paper  # every paper has a row, those without a claims table too
        if not (ROOT / "figures" / SCALE / paper / "claims.csv").is_file():
            assert rows[paper][5] == "no table yet"
            browser.open(served + f"{paper}/claims.html")
            assert site.NO_CLAIMS in browser.evaluate("document.body.innerText")


@needs_chromium
@pytest.mark.slow
def test_home_page_shows_each_papers_numbers_beside_ours(built, served, browser):
    assert browser.open(served + "index.html") == []
    images = browser.evaluate(PAGE_FACTS)["images"]
    shown = {
        unquote(urlsplit(src).path).rsplit("/", 1)[1]
        for src, w, h in images
        if "/summary/" in src and w and h
    }
    tables = [p for p in PAPERS if (ROOT / "figures" / SCALE / p / "claims.csv").is_file()]
    assert tables and shown == {f"{p}.png" for p in tables}  # each loaded, with a size
    text = browser.evaluate("document.body.innerText")
    assert "The papers' numbers beside ours" in text


@needs_chromium
@pytest.mark.slow
def test_site_works_from_file_urls(built, browser):
    with_figures = next(p for p in PAPERS if any((built / p).glob("*.png")))
    for page in ("index.html", f"{with_figures}/claims.html"):
        assert browser.open((built / page).as_uri()) == [], page
        facts = browser.evaluate(PAGE_FACTS)
        assert all(w and h for _, w, h in facts["images"]), page
        assert facts["images"] or page == "index.html", page
        assert browser.evaluate("getComputedStyle(document.querySelector('.md-header')).position") == "sticky"
        local = {u.split("#")[0] for u in facts["links"] if u.startswith("file:")}
        assert local and all(Path(unquote(urlsplit(u).path)).is_file() for u in local), page


def test_the_api_reference_renders_roles_and_formulas(built):
    # reStructuredText roles become code, and a formula's <o_i, ...> stays text instead of an HTML tag
    html = (built / "api" / "attnlab.metrics.html").read_text()
    assert ":func:`" not in html and ":class:`" not in html
    assert "&lt;o_i, a_ij v~_j&gt;" in html
