"""The synthesis notebook's hypotheses (this project's, not a paper's; docs/papers/synthesis.md,
"Hypotheses"), each judged by a named verdict function against its control: paired differences over seeds
(same seed, same data order, same initialisation) whose 95% interval must exclude zero
(``attnlab.runner.verdicts``), after gates that make a claim "not testable here" when the models learned
nothing or there is no sink to move."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import pandas as pd

from attnlab.runner.claims import Claim
from attnlab.runner.verdicts import HOLDS, INCONCLUSIVE, NOT_TESTABLE, Side, Verdict, interval_excludes

if TYPE_CHECKING:
    from attnlab.papers.synthesis.experiment import SynthesisExperiment

OURS = "none (this project's hypothesis)"


def learned(initial: Sequence[float], final: Sequence[float]) -> str | None:
    """The gate before any claim about what models learned: None when every run's final validation loss is
    below its loss at initialisation, else the reason the claim is not testable."""
    if len(initial) != len(final) or not len(final):
        raise ValueError("initial and final losses must be non-empty and paired")
    stuck = sum(f >= i for i, f in zip(initial, final, strict=True))
    return f"{stuck} of {len(final)} runs did not lower their validation loss" if stuck else None


def sink_present(first_attention: Sequence[float], uniform: Sequence[float]) -> str | None:
    """The gate before a claim that a kind moves the first-token sink: None when SA's attention on the first
    token (one value per seed) is above uniform causal attention's, its paired 95% interval excluding zero;
    else the reason (no sink to move)."""
    diffs = [a - u for a, u in zip(first_attention, uniform, strict=True)]
    if interval_excludes(diffs, "above").word == HOLDS:
        return None
    return "SA's attention on the first token is not above uniform attention's: there is no sink to move"


def _gated(verdict: Verdict, gates: Sequence[str | None]) -> Verdict:
    reasons = [g for g in gates if g]
    return replace(verdict, word=NOT_TESTABLE, why="; ".join(reasons)) if reasons else verdict


def shift(diffs: Sequence[float], side: Side, gates: Sequence[str | None] = ()) -> Verdict:
    """The hypothesis "the kind's value lies ``side`` its control's", from paired differences kind minus
    control per seed: ``interval_excludes`` (holds only when the 95% interval lies on that side), or not
    testable when a gate (``learned``, ``sink_present``) gives a reason; the evidence is kept either way."""
    return _gated(interval_excludes(diffs, side), gates)


def differs(diffs: Sequence[float], gates: Sequence[str | None] = ()) -> Verdict:
    """The hypothesis "the kind's value differs from its control's" (no direction), from paired differences
    per seed: holds when the 95% interval excludes zero on either side; inconclusive otherwise (an interval
    around zero cannot show equality); not testable when a gate gives a reason."""
    side: Side = "above" if sum(diffs) / max(len(diffs), 1) > 0 else "below"
    verdict = interval_excludes(diffs, side)
    if verdict.word != HOLDS and verdict.word != INCONCLUSIVE:
        verdict = replace(verdict, word=INCONCLUSIVE, why="the 95% interval contains zero")
    return _gated(verdict, gates)


# --------------------------------------------------------------------------------------------------------
# the notebook's hypotheses


def _seed_values(values: pd.DataFrame, kind: str, column: str, ratio: float = 1.0, state: str = "trained"):
    rows = values[(values["kind"] == kind) & (values["ratio"] == ratio) & (values["state"] == state)]
    return dict(zip(rows["seed"], rows[column], strict=True))


def _paired(a: dict, b: dict) -> list[float]:
    return [float(a[s] - b[s]) for s in sorted(set(a) & set(b))]


def _ours(v: Verdict, what: str) -> str:
    return f"{what}: {v.estimate:+.3f} [{v.low:+.3f}, {v.high:+.3f}], {v.n} seeds"


def _gate(losses: pd.DataFrame, kinds: Sequence[str], ratios: Sequence[float] = (1.0,)) -> str | None:
    rows = losses[losses["kind"].isin(kinds) & losses["ratio"].isin(ratios)]
    return learned(rows["initial"].tolist(), rows["final"].tolist())


def claims(exp: SynthesisExperiment, lens: pd.DataFrame, losses: pd.DataFrame) -> list[Claim]:
    """Every hypothesis of the notebook whose kinds were trained, judged from ``lens``
    (``SynthesisExperiment.lens_table``) and ``losses`` (``SynthesisExperiment.losses``)."""
    values = exp.values(lens, losses)
    first = exp.per_seed(lens, layer=0)
    have = set(exp.kinds)
    out: list[Claim] = []

    def add(fig: str, claim: str, verdict: Verdict, what: str) -> None:
        out.append(Claim(fig, claim, OURS, _ours(verdict, what), verdict))

    def pair(kind: str, control: str, column: str, data: pd.DataFrame = values, **kw) -> list[float]:
        return _paired(_seed_values(data, kind, column, **kw), _seed_values(data, control, column, **kw))

    sa = _seed_values(values, "sa", "first_attention")
    sink = sink_present(list(sa.values()), list(_seed_values(values, "sa", "uniform").values()))
    if "xsa" in have:
        gate = _gate(losses, ["sa", "xsa"])
        verdict = shift(pair("xsa", "sa", "cos_yv"), "below", [gate])
        add("similarity bias", "XSA lowers the similarity bias cos(y_i, v_i) relative to SA", verdict,
            "XSA - SA, layer mean")  # fmt: skip
        if "xsa-prev" in have:
            verdict = shift(pair("xsa", "xsa-prev", "cos_yv"), "below", [_gate(losses, ["xsa", "xsa-prev"])])
            add("similarity bias",
                "XSA lowers cos(y_i, v_i) relative to its control, which removes the previous token's value",
                verdict, "XSA - previous-value control")  # fmt: skip
        verdict = shift(pair("xsa", "sa", "first_attention"), "below", [gate, sink])
        add("sinks", "XSA puts less attention on the first token than SA (XSA as an implicit sink)", verdict,
            "XSA - SA")  # fmt: skip
        verdict = shift(pair("xsa", "sa", "first_contribution"), "below", [gate, sink])
        add("sinks", "The first token contributes less to XSA's attention output than to SA's", verdict,
            "XSA - SA")  # fmt: skip
    for kind in ("sa", "xsa"):
        if kind in have:
            label = "SA" if kind == "sa" else "XSA"
            diffs = _paired(_seed_values(values, kind, "sink_value_cos"),
                            _seed_values(values, kind, "control_value_cos"))  # fmt: skip
            add("sinks",
                f"In {label}, the first token's projected values point along the others' less than an "
                "ordinary token's do (the contribution-weights sink-value claim, against a control token)",
                shift(diffs, "below", [_gate(losses, [kind])]),
                f"{label}: cos with token 0 - cos with the control token")  # fmt: skip
    for kind in ("sd", "sd-shared"):
        if kind in have:
            verdict = differs(pair(kind, "sa", "routing_energy"), [_gate(losses, ["sa", kind])])
            add("routing",
                f"{kind}'s heads split their model-space form into routing and filtering differently from "
                "SA's (routing energy share)", verdict, f"{kind} - SA, routing share")  # fmt: skip
    diffs = _paired(_seed_values(values, "sa", "routing_energy"),
                    _seed_values(values, "sa", "routing_energy", state="init"))  # fmt: skip
    add("routing", "Training moves SA's routing energy share away from its random initialisation",
        differs(diffs, [_gate(losses, ["sa"])]), "SA trained - SA at init")  # fmt: skip
    if "linear" in have:
        verdict = shift(
            pair("linear", "sa", "entropy", data=first), "above", [_gate(losses, ["sa", "linear"])]
        )
        add("sharpness",
            "ELU+1 linear attention in the first layer attends less sharply there than SA's softmax does",
            verdict, "layer 0 normalised entropy, linear - SA")  # fmt: skip
    out += _ratio_claims(exp, values, losses)
    return out


def _ratio_claims(exp: SynthesisExperiment, values: pd.DataFrame, losses: pd.DataFrame) -> list[Claim]:
    """Faster query-key learning (eta_QK / eta_OV = r > 1) in multi-layer LMs: sharper attention and the final
    loss per kind, and whether XSA changes the sharpening."""
    out = []
    kinds = [k for k in exp.preset.ratio_kinds if k in exp.kinds]
    for r in [r for r in exp.preset.qk_ratios if r != 1.0]:
        shifts = {}
        for kind in kinds:
            gate = _gate(losses, [kind], (1.0, r))
            d = _paired(_seed_values(values, kind, "entropy", ratio=r), _seed_values(values, kind, "entropy"))
            shifts[kind] = d
            v = shift(d, "below", [gate])
            out.append(
                Claim(
                    "QK ratio",
                    f"eta_QK / eta_OV = {r:g} sharpens {kind}'s attention (lower entropy)",
                    "QK-speed: sharper attention in single-layer circuits",
                    _ours(v, f"x{r:g} - x1"),
                    v,
                )
            )
            d = _paired(
                _seed_values(values, kind, "val_loss", ratio=r), _seed_values(values, kind, "val_loss")
            )
            v = shift(d, "below", [gate])
            claim = f"eta_QK / eta_OV = {r:g} lowers {kind}'s final validation loss"
            out.append(Claim("QK ratio", claim, OURS, _ours(v, f"x{r:g} - x1, nats/byte"), v))
        if "sa" in shifts and "xsa" in shifts:
            d = [x - s for x, s in zip(shifts["xsa"], shifts["sa"], strict=True)]
            v = differs(d, [_gate(losses, ["sa", "xsa"], (1.0, r))])
            out.append(Claim("QK ratio", f"XSA changes how much eta_QK / eta_OV = {r:g} sharpens attention",
                             OURS, _ours(v, "XSA's entropy shift - SA's"), v))  # fmt: skip
    return out
