"""Faithfulness interventions: the ranking against a naive per-query loop, and the curves and multiple-choice
scores against direct computations on a small GPT."""

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from attnlab.data.tasks import MultipleChoice, tie_credit
from attnlab.hf import TextModel, capture, intervene
from attnlab.metrics import contribution_weights
from attnlab.model import GPT, GPTConfig
from attnlab.papers.contribution_weights.faithfulness import (
    _choice_batch,
    _length_batches,
    _read_positions,
    choice_accuracy,
    choice_scores,
    curve_areas,
    intervention_curves,
    joint_contribution,
    layer_sets,
    rank_mask,
    term_scores,
    window_areas,
    with_delta,
)


def naive_rank_mask(scores: torch.Tensor, fraction: float, top: bool, scope: str) -> torch.Tensor:
    B, H, T, _ = scores.shape
    out = torch.zeros(B, H, T, T, dtype=torch.bool)
    groups = [[h] for h in range(H)] if scope == "head" else [list(range(H))]
    for b in range(B):
        for i in range(T):
            for heads in groups:
                terms = [(scores[b, h, i, j].item(), h * T + j, h, j) for h in heads for j in range(i + 1)]
                # descending for top, ascending for bottom; ties broken by the flat index (h, j)
                terms.sort(key=lambda t: (-t[0] if top else t[0], t[1]))
                for _, _, h, j in terms[: round(fraction * len(heads) * (i + 1))]:
                    out[b, h, i, j] = True
    return out


@pytest.mark.parametrize("scope", ["head", "joint"])
@pytest.mark.parametrize("top", [True, False])
@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.37, 0.5, 1.0])
def test_rank_mask_matches_a_naive_loop(top, fraction, scope):
    torch.manual_seed(0)
    scores = torch.randn(2, 3, 7, 7)
    scores[0, 1, 4, :3] = 0.25  # ties
    expected = naive_rank_mask(scores, fraction, top, scope)
    assert torch.equal(rank_mask(scores, fraction, top, scope), expected)


def test_rank_mask_never_touches_future_keys_and_counts_per_query():
    scores = torch.randn(1, 2, 5, 5)
    for scope in ("head", "joint"):
        mask = rank_mask(scores, 1.0, True, scope)
        assert torch.equal(mask[0, 0], torch.ones(5, 5, dtype=torch.bool).tril())
    half = rank_mask(scores, 0.5, False, "joint")
    assert [int(half[0, :, i].sum()) for i in range(5)] == [round(0.5 * 2 * (i + 1)) for i in range(5)]
    half = rank_mask(scores, 0.5, False, "head")
    assert [int(half[0, 1, i].sum()) for i in range(5)] == [round(0.5 * (i + 1)) for i in range(5)]


def test_per_head_ranking_cannot_tell_the_two_value_weighted_baselines_apart():
    torch.manual_seed(0)
    scores = torch.rand(1, 3, 6, 6)
    rescaled = scores * torch.rand(1, 3, 6, 1)  # a positive factor per (head, query) row: ||o_i||^-1
    assert torch.equal(rank_mask(scores, 0.5, True, "head"), rank_mask(rescaled, 0.5, True, "head"))
    assert not torch.equal(rank_mask(scores, 0.5, True, "joint"), rank_mask(rescaled, 0.5, True, "joint"))


def random_layer(B=2, H=3, T=6, D=5):
    torch.manual_seed(0)
    scores = torch.randn(B, H, T, T).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    return scores.softmax(-1), torch.randn(B, H, T, D)


@pytest.mark.parametrize("scope", ["head", "joint"])
def test_output_normalised_zeroes_what_value_weighted_zeroes_in_both_scopes(scope):
    pattern, values = random_layer()
    vw = term_scores("value_weighted", pattern, values, scope)
    on = term_scores("output_normalised", pattern, values, scope)
    for f in (0.2, 0.5):
        for top in (True, False):
            assert torch.equal(rank_mask(vw, f, top, scope), rank_mask(on, f, top, scope))
    # but raw attention and contribution weights zero other terms
    c = term_scores("contribution", pattern, values, scope)
    assert not torch.equal(rank_mask(vw, 0.5, True, scope), rank_mask(c, 0.5, True, scope))


def test_joint_contribution_sums_to_the_inter_head_weights_and_each_row_to_one():
    pattern, values = random_layer()
    joint = joint_contribution(pattern, values)  # (B, H, T, T)
    assert torch.allclose(joint.sum(1), contribution_weights(pattern, values, inter_head=True), atol=1e-5)
    assert torch.allclose(joint.sum((1, 3)), torch.ones(2, 6), atol=1e-5)
    assert torch.equal(term_scores("contribution", pattern, values, "joint"), joint)
    assert torch.equal(term_scores("contribution_abs", pattern, values, "joint"), joint.abs())
    head = term_scores("contribution_abs", pattern, values, "head")
    assert torch.allclose(head, contribution_weights(pattern, values).abs())
    with pytest.raises(ValueError):
        term_scores("attention", pattern, values, "head")


def test_layer_sets_are_evenly_spaced_then_together():
    assert layer_sets(30, 3) == {"layer 5": (5,), "layer 15": (15,), "layer 25": (25,),
                                 "layers 5+15+25": (5, 15, 25)}  # fmt: skip
    assert layer_sets(4, 1) == {"layer 2": (2,)}
    assert layer_sets(2, 2) == {"layer 0": (0,), "layer 1": (1,), "layers 0+1": (0, 1)}
    with pytest.raises(ValueError):
        layer_sets(4, 5)


def tiny_gpt() -> TextModel:
    torch.manual_seed(0)
    cfg = GPTConfig(n_layer=2, d_model=32, n_head=4, head_dim=8, block_size=16)
    return TextModel(GPT(cfg).eval())


def _nll(lm: TextModel, ids: torch.Tensor, zero_layers: tuple[int, ...]) -> np.ndarray:
    """Per-window NLL with the attention output of ``zero_layers`` replaced by zeros (the direct way)."""
    hooks = [
        lm.model.blocks[layer].attn.register_forward_hook(lambda m, a, out: torch.zeros_like(out))
        for layer in zero_layers
    ]
    with torch.no_grad():
        logits, _ = lm.model(ids)
    for h in hooks:
        h.remove()
    nll = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten(), reduction="none")
    return nll.view(len(ids), -1).sum(-1).numpy()


def test_curves_zero_nothing_at_fraction_zero_and_everything_at_one_in_the_chosen_layers_only():
    lm = tiny_gpt()
    ids = torch.randint(0, 256, (3, 12))
    sets = {"layer 1": (1,), "layers 0+1": (0, 1)}
    rankings = {"comprehensiveness": ("raw", "contribution"), "sufficiency": ("contribution_abs",)}
    curves = intervention_curves(lm, ids, [0.0, 1.0], sets, rankings, batch_size=2)
    assert len(curves) == 3 * 2 * 2 * 3  # windows x sets x scopes x measures (fraction 0 is not run)
    assert np.allclose(curves.groupby("window")["clean_nll"].first(), _nll(lm, ids, ()), rtol=1e-5)
    for name, layers in sets.items():
        sub = curves[curves["layers"] == name]
        for _, row in sub.groupby(["scope", "mode", "measure"]):
            assert np.allclose(row.sort_values("window")["nll"], _nll(lm, ids, layers), rtol=1e-5)
    delta = with_delta(curves)
    zero = delta[delta["fraction"] == 0.0]
    assert len(zero) == len(curves) and np.allclose(zero["delta_ppl"], 0.0)


def test_batched_fractions_equal_one_fraction_at_a_time():
    lm = tiny_gpt()
    ids = torch.randint(0, 256, (3, 12))
    sets, rankings = {"layer 0": (0,)}, {"sufficiency": ("contribution",)}
    both = intervention_curves(lm, ids, [0.3, 0.6], sets, rankings, batch_size=3)
    for f in (0.3, 0.6):
        alone = intervention_curves(lm, ids, [f], sets, rankings, batch_size=2)
        got = both[both["fraction"] == f].sort_values(["scope", "window"])["nll"].to_numpy()
        assert np.allclose(got, alone.sort_values(["scope", "window"])["nll"].to_numpy(), rtol=1e-5)


def test_areas_on_both_scales():
    rows = []
    for m, slope in zip(
        ["raw", "value_weighted", "output_normalised", "contribution"], [1, 2, 3, 4], strict=True
    ):
        for w in range(2):
            for f in [0.0, 0.5, 1.0]:
                y = slope * f * (1 + w)
                rows.append(
                    {"window": w, "measure": m, "mode": "comprehensiveness", "fraction": f, "delta_ppl": y}
                )
                rows.append({"window": w, "measure": m, "mode": "sufficiency", "fraction": f,
                             "delta_ppl": (5 - slope) * f * (1 + w)})  # fmt: skip
    frame = pd.DataFrame(rows)
    areas = curve_areas(frame).unstack("mode")
    assert areas.loc["contribution", "comprehensiveness"] == pytest.approx(3.0)  # mean of 6 f over [0, 1]
    assert areas.loc["value_weighted", "sufficiency"] == pytest.approx(2.25)  # mean curve (3 f + 6 f) / 2
    per_window = window_areas(frame, log=True)
    # on the log scale: window 0's mean of log(1 + 4 f) over f in {0, 0.5, 1} by the trapezoid rule
    expected = (0.5 * np.log(3.0) + 0.5 * (np.log(3.0) + np.log(5.0))) / 2
    assert per_window[0, "contribution", "comprehensiveness"] == pytest.approx(expected)
    assert per_window[1, "raw", "comprehensiveness"] == pytest.approx(
        (0.5 * np.log(2.0) + 0.5 * (np.log(2.0) + np.log(3.0))) / 2
    )


def test_clean_choice_scores_match_one_sequence_at_a_time():
    lm = tiny_gpt()
    items = [MultipleChoice("ab", (" c", " dd"), 0), MultipleChoice("xyz w", ("1", "22", "3"), 2)]
    frame = choice_accuracy(lm, items, [("contribution", "sufficiency", 0.0)], batch_tokens=100)
    assert list(frame["chance"]) == [0.5] * 4  # answers 0 and 2: always the first choice is right on half
    credit = []
    for item in items:
        row = []
        for choice in item.choices:
            ids = torch.tensor([lm.encode("\n" + item.prompt + choice)])
            n = len(lm.encode(choice))
            with torch.no_grad():
                logp = F.log_softmax(lm.model(ids)[0], -1)[0]
            row.append(
                sum(logp[len(ids[0]) - n - 1 + k, ids[0, len(ids[0]) - n + k]].item() for k in range(n))
            )
        credit.append(tie_credit(row, item.answer))
    clean = frame[frame["measure"] == "none"]["credit"].to_numpy()
    assert np.allclose(clean, credit)
    # fraction 0 zeroes nothing: the same credits
    assert np.allclose(frame[frame["measure"] == "contribution"]["credit"], clean)


def test_single_token_choices_are_scored_from_one_pass_of_the_prompt():
    """Where every choice of an item is one token (MMLU's letters), the item is one sequence, read once per
    choice at the prompt's last position: the same scores as one sequence per choice, clean and intervened
    (the ranking at the prompt's positions cannot see the choice), with the multi-token items beside it."""
    lm = TextModel(tiny_llama(vocab=256, layers=3))  # byte tokens: "A" is one token, " A" two
    items = [MultipleChoice("Q: 2+2?\nAnswer:", tuple("ABCD"), 2), MultipleChoice("ab", (" c", "d"), 0)]
    seqs, reads = _choice_batch(lm, items)
    assert len(seqs) == 3 and [len(r) for r in reads] == [4, 1, 1]  # one pass for the lettered item
    setting = ("contribution", "comprehensiveness", 0.3)
    scores = choice_scores(lm, items, [setting], layers=[1, 2], batch_tokens=100)
    for key in (("none", "none", 0.0), setting):
        expected = []
        for item in items:
            for choice in item.choices:
                one = MultipleChoice(item.prompt, (choice, choice + choice), 0)  # one sequence per choice
                expected.append(choice_scores(lm, [one], [setting], layers=[1, 2], batch_tokens=1)[key][0])
        assert np.allclose(scores[key], expected, rtol=1e-5, atol=1e-5)
    assert not np.allclose(scores[setting], scores["none", "none", 0.0], atol=1e-3)  # the mask did something


def test_length_batches_fill_a_token_budget_and_never_split_or_drop_a_sequence():
    lengths = [3, 3, 4, 5, 9, 20, 30]
    batches = _length_batches(lengths, 16)
    assert [(b.start, b.stop) for b in batches] == [(0, 3), (3, 4), (4, 5), (5, 6), (6, 7)]
    for b in batches:  # within the budget, or one sequence alone
        assert (b.stop - b.start) * lengths[b.stop - 1] <= 16 or b.stop - b.start == 1
    assert [(b.start, b.stop) for b in _length_batches(lengths, 1000)] == [(0, 7)]
    assert _length_batches([], 16) == []


def test_read_positions_keep_only_the_logits_the_reads_need():
    """One read at position 4 of a 6-token sequence (an MMLU prompt: four letters read there), and a 3-token
    choice read from position 1 of a 5-token one: P = 3, the short span padded with its own last position."""
    reads = [[(4, [7]), (4, [8])], [(1, [5, 6, 7])]]
    keep, firsts = _read_positions(reads, [6, 5])
    assert firsts == [4, 1]
    assert keep.tolist() == [[4, 5, 5], [1, 2, 3]]


def test_mmlu_items_are_answered_by_letter(monkeypatch):
    from attnlab.data import tasks
    from attnlab.papers.contribution_weights import experiment

    q = tasks.MMLUQuestion("anatomy", "Which?", ("w", "x", "y", "z"), 3)
    monkeypatch.setattr(experiment, "load_mmlu", lambda per_subject: [q] * per_subject)
    items = experiment.task_items("mmlu", 1, mmlu_per_subject=2)  # the other tasks' sample does not apply
    assert len(items) == 2
    assert items[0] == MultipleChoice(q.prompt(), (" A", " B", " C", " D"), 3)


def test_chance_is_the_better_of_guessing_and_a_constant_answer():
    """BoolQ's " yes" (the second choice) is right on most items: a model that always says yes has learned
    nothing, so the gate's chance is that share, not 1/2; guessing where the answers are spread evenly."""
    from attnlab.papers.contribution_weights.faithfulness import chance_level

    yes_no = [MultipleChoice("p", (" no", " yes"), int(k < 62)) for k in range(100)]
    assert chance_level(yes_no) == pytest.approx(0.62)
    letters = [MultipleChoice("q", tuple("ABCD"), k % 4) for k in range(8)]
    assert chance_level(letters) == pytest.approx(0.25)
    mixed = [MultipleChoice("q", ("a", "b"), 0), MultipleChoice("q", ("a", "b", "c", "d"), 1)]
    assert chance_level(mixed) == pytest.approx(0.5)  # answer 0 on one of two; guessing (1/2 + 1/4) / 2 less


def test_per_choice_contexts_score_each_choice_after_its_own_context():
    """WinoGrande: each option fills the blank (its own context) and the same rest of the sentence is the
    choice scored. Each (context, choice) scores as it does alone, clean and intervened, also where every
    choice is one token (the one-pass shortcut needs a context shared by the choices), and not as after the
    shared prompt."""
    lm = TextModel(tiny_llama(vocab=256, layers=3))  # byte tokens
    wino = MultipleChoice("The cup fell off _", (" broke.", " broke."), 1,
                          contexts=("The cup fell off Ann", "The cup fell off the shelf"))  # fmt: skip
    one_token = MultipleChoice("a _", ("z", "z"), 0, contexts=("a b", "a cd"))  # one-token choices
    shared = MultipleChoice("Q: 2+2?\nAnswer:", tuple("ABCD"), 2)  # one pass for all four
    items = [wino, one_token, shared]
    seqs, reads = _choice_batch(lm, items)
    assert len(seqs) == 2 + 2 + 1 and [len(r) for r in reads] == [1, 1, 1, 1, 4]
    assert seqs[1] == lm.encode("\n" + wino.contexts[1] + " broke.")
    setting = ("contribution", "comprehensiveness", 0.3)
    scores = choice_scores(lm, items, [setting], layers=[1, 2], batch_tokens=100)
    clean = ("none", "none", 0.0)
    alone = [  # each (context, choice) as an item of its own
        choice_scores(lm, [MultipleChoice(item.context(k), (choice,), 0)], [setting], layers=[1, 2])
        for item in items
        for k, choice in enumerate(item.choices)
    ]
    for key in (clean, setting):
        assert np.allclose(scores[key], [one[key][0] for one in alone], rtol=1e-5, atol=1e-5)
    direct = []  # the clean scores, from one full forward pass per (context, choice)
    for item in items:
        for k, choice in enumerate(item.choices):
            ids = torch.tensor([lm.encode("\n" + item.context(k) + choice)])
            n = len(lm.encode(choice))
            with torch.no_grad():
                logp = F.log_softmax(lm.logits(ids), -1)[0]
            direct.append(
                sum(logp[ids.shape[1] - n - 1 + j, ids[0, ids.shape[1] - n + j]].item() for j in range(n))
            )
    assert np.allclose(scores[clean], direct, rtol=1e-5, atol=1e-5)
    assert not np.isclose(scores[clean][0], scores[clean][1], atol=1e-4)  # the options' contexts differ
    after_prompt = choice_scores(lm, [MultipleChoice(wino.prompt, wino.choices, 1)], [])[clean]
    assert not np.allclose(scores[clean][:2], after_prompt, atol=1e-4)  # not the shared prompt's scores
    assert not np.allclose(scores[setting], scores[clean], atol=1e-3)  # the mask did something


def test_tie_credit():
    assert tie_credit([1.0, 0.0], 0) == 1.0
    assert tie_credit([1.0, 1.0, 0.0], 1) == 0.5
    assert tie_credit([0.0, 1.0], 0) == 0.0


def tiny_llama(vocab: int, layers: int):
    """A randomly initialised Llama with grouped-query attention, seeded."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(
        vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(cfg).eval()


def test_curves_of_a_hugging_face_model_skip_only_what_the_intervention_cannot_change():
    model = tiny_llama(vocab=64, layers=3)
    lm = TextModel(model)
    ids = torch.randint(0, 64, (2, 10))
    rankings = {"comprehensiveness": ("contribution",)}
    curves = intervention_curves(lm, ids, [0.5, 1.0], {"layer 2": (2,)}, rankings, scopes=("joint",))
    with torch.no_grad():
        for f in (0.5, 1.0):
            _, records = capture(model, ids, layers=[2])
            score = term_scores("contribution", records[2]["pattern"], records[2]["values"], "joint")
            keep = (~rank_mask(score, f, True, "joint")).float()
            with intervene(model, {2: keep}):
                logits = model(input_ids=ids).logits
            nll = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten(), reduction="none")
            got = curves[curves["fraction"] == f].sort_values("window")["nll"].to_numpy()
            assert np.allclose(got, nll.view(2, -1).sum(-1).numpy(), rtol=1e-5)


def test_choice_scores_of_a_hugging_face_model_skip_only_what_the_intervention_cannot_change():
    """The intervened choice scores start the layers above the set from the clean pass's hidden states: they
    equal a full forward pass with the same keep mask, choice by choice."""
    lm = TextModel(tiny_llama(vocab=256, layers=4))  # byte tokens
    items = [MultipleChoice("the cat", (" sat", " runs"), 0), MultipleChoice("xyz w", ("1", "22", "3"), 2)]
    setting = ("contribution", "comprehensiveness", 0.3)
    scores = choice_scores(lm, items, [setting], layers=[2, 3], batch_tokens=100)
    expected = []
    with torch.no_grad():
        for item in items:
            for choice in item.choices:
                ids = torch.tensor([lm.encode("\n" + item.prompt + choice)])
                n = len(lm.encode(choice))
                _, records = capture(lm.model, ids, layers=[2, 3])
                keep = {
                    layer: (~rank_mask(term_scores("contribution", r["pattern"], r["values"], "joint"), 0.3,
                                       True, "joint")).float()
                    for layer, r in records.items()
                }  # fmt: skip
                with intervene(lm.model, keep):
                    logp = F.log_softmax(lm.logits(ids), -1)[0]
                expected.append(sum(logp[len(ids[0]) - n - 1 + k, ids[0, len(ids[0]) - n + k]].item()
                                    for k in range(n)))  # fmt: skip
    assert np.allclose(scores[setting], expected, rtol=1e-5, atol=1e-5)
    assert not np.allclose(scores[setting], scores["none", "none", 0.0], atol=1e-3)  # the mask did something


def test_faithfulness_settings_are_notebook_parameters():
    from attnlab.errors import ParameterError
    from attnlab.papers import contribution_weights as cw

    assert cw.configure(scale="cpu").preset == cw.PRESETS["cpu"]  # the defaults: the preset's
    exp = cw.configure(scale="cpu", fractions=[0.5, 0.1], layers=5, windows=8)
    assert (exp.preset.fractions, exp.preset.windows) == ((0.0, 0.1, 0.5), 8)  # the clean pass kept
    assert list(exp.layer_sets(30)) == [*(f"layer {k}" for k in (3, 9, 15, 21, 27)), "layers 3+9+15+21+27"]
    bad = [
        ({"fractions": [0.2]}, "fractions"),
        ({"fractions": [0.0, 0.2]}, "fractions"),
        ({"fractions": [0.2, 1.0]}, "fractions"),
        ({"layers": -1}, "layers"),
        ({"windows": 1}, "windows"),
    ]
    for params, key in bad:
        with pytest.raises(ParameterError, match=f"^{key}"):
            cw.configure(scale="cpu", **params)


# --- the figures -------------------------------------------------------------------------------------------


def _area_curves() -> pd.DataFrame:
    """Per-window curves of two text sets x two layer sets x both scopes, each measure's curve a line whose
    slope is its rank (contribution weights steepest), so every panel's bars are known."""
    from attnlab.papers.contribution_weights.presets import RANKINGS

    rows = []
    for text in ("brown", "gsm8k"):
        for layers in ("layer 5", "layers 5+15"):
            for scope in ("head", "joint"):
                for mode, measures in RANKINGS.items():
                    for r, m in enumerate(measures):
                        for w in range(3):
                            for f in (0.0, 0.5, 1.0):
                                rows.append({"text": text, "layers": layers, "scope": scope, "mode": mode,
                                             "measure": m, "window": w, "fraction": f,
                                             "delta_ppl": (1 + r) * f * (1 + 0.1 * w)})  # fmt: skip
    return pd.DataFrame(rows)


def test_areas_figure_has_one_panel_per_scope_mode_and_text_with_every_measure_in_the_legend():
    import matplotlib.pyplot as plt

    from attnlab.papers.contribution_weights import plots
    from attnlab.papers.contribution_weights.presets import MEASURE_LABELS, RANKINGS

    curves = _area_curves()
    fig = plots.areas(curves, log=True)
    axes = fig.get_axes()
    assert len(axes) == 2 * 2 * 2  # (head, joint) x (comprehensiveness, sufficiency) rows, 2 text sets
    titles = [ax.get_title() for ax in axes]
    assert titles[0].startswith("brown, ranked per head: comprehensiveness") and "higher" in titles[0]
    assert titles[3].startswith("gsm8k, ranked per head: sufficiency") and "lower" in titles[3]
    # each panel: one bar per (layer set, measure); the bars are the per-window areas' means
    suff = axes[3]
    assert len(suff.patches) == 2 * len(RANKINGS["sufficiency"])
    expected = window_areas(curves, log=True).xs(
        ("gsm8k", "layer 5", "head", "sufficiency", "contribution"),
        level=["text", "layers", "scope", "mode", "measure"],
    )
    heights = sorted(round(p.get_height(), 6) for p in suff.patches)
    assert round(float(expected.mean()), 6) in heights
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert set(labels) == {MEASURE_LABELS[m] for m in RANKINGS["sufficiency"]} | {"95% interval over windows"}
    plt.close(fig)


def test_cost_figure_labels_both_implementations_and_says_where_naive_stops():
    import matplotlib.pyplot as plt

    from attnlab.papers.contribution_weights import plots

    nan = float("nan")
    rows = [("contribution_weights", T, 0.01 * T, 0.001 * T) for T in (128, 256, 512, 1024)]
    rows += [
        ("naive", 128, 0.5, 0.3),
        ("naive", 256, 2.0, 1.4),
        ("naive", 512, nan, nan),
        ("naive", 1024, nan, nan),
    ]
    frame = pd.DataFrame(rows, columns=["impl", "T", "seconds", "peak_gb"])
    fig = plots.cost(frame, max_gb=1.5)
    title = fig._suptitle.get_text()
    assert "naive run at T = 128, 256;" in title and "skipped at T = 512, 1024" in title and "1.5 GB" in title
    labels = [t.get_text() for t in fig.legends[0].get_texts()]  # one legend, under both panels
    assert len(labels) == 2 and labels[1].startswith("naive")
    for ax in fig.get_axes():
        assert len(ax.get_lines()[1].get_xdata()) == 2  # the naive line has its two lengths
        # one plain label per measured length, and no log-axis minor labels to overlap them
        assert [t.get_text() for t in ax.get_xticklabels()] == ["128", "256", "512", "1024"]
        assert not [t for t in ax.get_xticklabels(minor=True) if t.get_text()]
    plt.close(fig)
    one = frame[(frame["impl"] != "naive") | (frame["T"] != 256)]
    fig = plots.cost(one, max_gb=1.5)
    assert "T = 128 only (one point)" in fig._suptitle.get_text()
    plt.close(fig)


# --- text sets and downstream tasks --------------------------------------------------------------------


def test_the_text_sets_and_downstream_tasks_are_the_papers():
    """Brown stands in for FineWeb-Edu, GSM8K is the paper's own; the downstream tasks are the paper's three,
    the defaults from cpu scale on; smoke runs two of them on two items."""
    from attnlab.papers import contribution_weights as cw
    from attnlab.papers.contribution_weights import scale

    assert list(cw.DOWNSTREAM) == ["mmlu", "winogrande", "boolq"]
    assert set(cw.TEXT_SETS) == {"brown", "gsm8k", "shakespeare"}
    assert "FineWeb-Edu" in cw.TEXT_SETS["brown"]
    assert cw.PRESETS["cpu"].text_sets == ("brown", "gsm8k")
    for name in ("cpu", "gpu", "paper"):
        assert cw.PRESETS[name].tasks == ("mmlu", "winogrande", "boolq")
        assert scale.PRESETS[name].tasks == ("mmlu", "winogrande", "boolq")
    assert cw.PRESETS["smoke"].task_sample == scale.PRESETS["smoke"].task_sample == 2
    assert "mmlu" not in cw.PRESETS["smoke"].tasks  # 57 questions at one per subject: not smoke-sized
    exp = cw.configure(scale="cpu")
    assert scale.experiment_for(exp, "gemma3-270m", scale.PRESETS["cpu"]).tasks == ("winogrande", "boolq")
    assert (
        scale.experiment_for(exp, "qwen2.5-coder-1.5b", scale.PRESETS["cpu"]).tasks == cw.PRESETS["cpu"].tasks
    )


def test_cpu_scale_samples_at_least_500_items_per_task():
    """The issue: at least 500 items per task, a fixed sample, in the main protocol and the scale section
    (MMLU: 9 of each of its 57 subjects, 513); the real splits hold that many."""
    from attnlab.data.tasks import TASKS
    from attnlab.papers import contribution_weights as cw
    from attnlab.papers.contribution_weights import scale

    for preset in (cw.PRESETS["cpu"], scale.experiment_for(cw.configure(scale="cpu"), "qwen2.5-coder-1.5b",
                                                            scale.PRESETS["cpu"]).preset):  # fmt: skip
        assert preset.task_sample is not None and preset.task_sample >= 500
        assert preset.mmlu_per_subject is not None and 57 * preset.mmlu_per_subject >= 500
    assert all(TASKS[t].items >= 500 for t in ("winogrande", "boolq"))


def _winogrande_rows(n: int) -> list[dict]:
    return [{"sentence": f"Item {k}: Ann gave Bo a cup because _ was kind.", "option1": "Ann",
             "option2": "Bo", "answer": str(1 + k % 2)} for k in range(n)]  # fmt: skip


def test_the_downstream_sample_is_fixed_and_of_the_requested_size(olmo_files, monkeypatch):
    """A fixed sample of the requested size, in file order, the same on every call whatever the global random
    state or the notebook's seed; the whole split when the sample is None or not smaller."""
    import dataclasses

    from attnlab.data import tasks
    from attnlab.papers.contribution_weights.experiment import task_items

    rows = _winogrande_rows(40)
    olmo_files(tables={tasks.TASKS["winogrande"].path: rows})
    monkeypatch.setitem(tasks.TASKS, "winogrande", dataclasses.replace(tasks.TASKS["winogrande"], items=40))
    every = tasks.load_task("winogrande")
    first = task_items("winogrande", 10)
    np.random.seed(123)
    torch.manual_seed(123)
    assert task_items("winogrande", 10) == first  # fixed
    assert len(first) == 10 and len(set(first)) == 10
    positions = [every.index(item) for item in first]
    assert positions == sorted(positions) and positions != list(range(10))  # file order, not the first 10
    head = f"Item {positions[0]}: Ann gave Bo a cup because "
    assert first[0].contexts == (head + "Ann", head + "Bo")
    assert task_items("winogrande", None) == task_items("winogrande", 40) == every
    assert task_items("winogrande", 60) == every
    with pytest.raises(ValueError, match="sample"):
        task_items("winogrande", 0)
    with pytest.raises(ValueError, match="unknown downstream task"):
        task_items("piqa", 10)


def test_the_gsm8k_text_set_is_its_problems_with_worked_answers(olmo_files, monkeypatch):
    from attnlab.data import tasks
    from attnlab.papers.contribution_weights.experiment import ContributionExperiment

    docs = [{"question": f"Q{k}: how many?", "answer": f"3+{k}=<<3+{k}={3 + k}>>{3 + k}\n#### {3 + k}"}
            for k in range(3)]  # fmt: skip
    olmo_files(requests={tasks.GSM8K_PATH: docs})
    monkeypatch.setattr(tasks, "GSM8K_ITEMS", 3)
    text = ContributionExperiment.text("gsm8k")
    assert text.split("\n\n") == [
        f"Question: Q{k}: how many?\nAnswer: 3+{k}={3 + k}\n#### {3 + k}" for k in range(3)
    ]


def test_cost_budget_keeps_the_naive_line():
    from attnlab.papers.contribution_weights import PRESETS

    naive_ok = [
        T
        for T in PRESETS["cpu"].bench_lengths
        if 9 * T * T * 576 * 4 / 1e9 <= PRESETS["cpu"].bench_naive_max_gb
    ]
    assert len(naive_ok) >= 2  # the cost figure's naive line has more than one point at cpu scale


def test_the_timing_claim_pairs_at_least_two_lengths_at_every_scale():
    """The paired timing runs where the naive tensor fits its own cap: at least two lengths at every scale
    (cpu: 128 and 256, whose naive tensors take 0.34 and 1.36 GB), and at least two repeats each."""
    from attnlab.papers.contribution_weights import PRESETS
    from attnlab.papers.contribution_weights.cost import terms_gb

    for name, p in PRESETS.items():
        paired = [T for T in p.bench_lengths if terms_gb(9, T, 576) <= p.bench_pair_max_gb]
        assert len(paired) >= 2 and p.bench_pair_repeats >= 2, name
    assert [T for T in PRESETS["cpu"].bench_lengths if terms_gb(9, T, 576) <= 2.0] == [128, 256]


def test_cost_reads_a_pinned_models_shape_from_its_local_folder(tmp_path, monkeypatch):
    """`cost()` with `model=gemma3-270m` once asked the hub for a config named "gemma3-270m" (and failed
    offline): a pinned name's shape comes from its verified local folder, never the hub."""
    from transformers import LlamaConfig

    from attnlab import hf
    from attnlab.papers.contribution_weights import cost

    LlamaConfig(num_attention_heads=4, num_key_value_heads=1, hidden_size=640).save_pretrained(tmp_path)
    asked = []
    monkeypatch.setattr(hf, "checkpoint", lambda name: asked.append(name) or tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert cost.model_shape("gemma3-270m") == (4, 640)
    assert asked == ["gemma3-270m"]
    assert cost.model_shape("smollm2") == (9, 576)
