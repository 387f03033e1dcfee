"""Many Fig. 2 circuits of "Faster query-key learning sharpens attention" (arXiv 2608.06776) trained at once.

``train_circuits`` trains a list of ``CircuitSpec`` runs (seeds x learning-rate settings x parameterisations)
as ``train_circuit`` trains each: the same initialisation per seed (``make_circuit``), the same batches
(stream 1 of ``seeded_generator(seed)``, drawn once per (seed, sequence length) and shared by the runs that
read it), plain SGD with each circuit's QK / OV learning rates and ramps, the same early stop per circuit
(after the first epoch whose mean training loss is <= ``loss_stop``; a stopped circuit leaves the batch with
its final weights) and the same history.

The runs of one sequence length form a ``CircuitStack``, one FAFO model with a leading circuit dimension on
its four matrices, a collapsed circuit's missing factor held at the identity, so one batched matmul serves
every run. The stack computes ``Circuit.forward``'s function with its products of one-hot inputs as gathers
and sums (W_K x_j is column x_j of W_K; sum_j a_j x_j adds a_j into entry x_j), which skips the dense
(B T, V) x (V, V) product of the keys that dominates a factorised circuit's step in ``Circuit``. The forward
values are those of ``Circuit`` up to the order of a few float sums and the gradients sum the same terms in
another order, so the results agree with ``train_circuit`` to float rounding, not bit for bit (weights and
losses to ~1e-7 relative over short runs; rounding differences grow over thousands of steps: at the
``cpu`` preset the final losses to ~1e-3 relative, the notebook's held-out metrics to ~1e-4, with the same
stopping epochs; see ``benchmark``, which also times the ``cpu`` preset's circuits both ways).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attnlab.errors import TrainingDiverged
from attnlab.papers.qk_speed.circuits import (
    Circuit,
    CircuitTrainResult,
    evaluate_circuit,
    make_circuit,
    ramp,
    torch_threads,
    train_circuit,
)
from attnlab.papers.qk_speed.synthetic import sample_batch, seeded_generator


@dataclass(frozen=True)
class CircuitSpec:
    """One circuit run of Fig. 2 / the ratio sweep: what ``train_circuit`` takes per run; the circuit is
    ``make_circuit(kind, seed=seed, init_scale=init_scale, qk_init=qk_init, collapsed_init=collapsed_init)``
    (factorised matrices start at
    init_scale * I; ``qk_init`` "default": the QK circuit at nn.Linear's initialisation, as the authors' row-1
    FAFO)."""

    kind: str
    lr_qk: float
    lr_ov: float
    qk_ramp: tuple[float, float] = (1.0, 1.0)
    ov_ramp: tuple[float, float] = (1.0, 1.0)
    seq_len: int = 64
    seed: int = 1234
    init_scale: float = 1e-6
    qk_init: str | None = None
    collapsed_init: str = "default"

    def lrs(self, step: int, total: int) -> tuple[float, float]:
        """(eta_QK, eta_OV) at SGD step ``step`` of ``total`` planned, as ``train_circuit`` sets them."""
        return self.lr_qk * ramp(step, total, *self.qk_ramp), self.lr_ov * ramp(step, total, *self.ov_ramp)


SLOTS = ("W_Q", "W_K", "W_V", "W_O")  # the stack's matrices, a FAFO circuit's
SLOT = {"W_Q": "W_Q", "W_K": "W_K", "W_QK": "W_K", "W_V": "W_V", "W_O": "W_O", "W_OV": "W_O"}


def _columns(w: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Columns ``w[c, :, tokens[c, b]]`` (= W x for one-hot x) of stacked matrices w (C, d, V): (C, B, d)."""
    C, B = tokens.shape
    return w.transpose(1, 2).gather(1, tokens.reshape(C, B, 1).expand(-1, -1, w.shape[1]))


class CircuitStack:
    """C circuits of any parameterisations (Fig. 2's, ``circuits`` module) as one FAFO model whose matrices
    W_Q, W_K, W_V, W_O get a leading circuit dimension: a collapsed W_QK = W_Q^T W_K sits in W_K with W_Q = I,
    a collapsed W_OV = W_O W_V in W_O with W_V = I. Products with these identities are exact, and ``step``
    leaves them at I (learning rate 0), so each circuit computes and learns as its ``Circuit``."""

    def __init__(self, circuits: Sequence[Circuit], device: torch.device) -> None:
        eye = torch.eye(circuits[0].vocab_size)
        own = [{SLOT[n]: p.detach() for n, p in c.named_parameters()} for c in circuits]
        self.weights = {
            slot: torch.stack([p.get(slot, eye) for p in own]).to(device).requires_grad_() for slot in SLOTS
        }
        self.trained = torch.tensor([[slot in p for slot in SLOTS] for p in own], device=device)  # (C, 4)

    def keep(self, rows: torch.Tensor) -> None:
        """Keep only the circuits ``rows`` (indices into the stack), in that order."""
        self.weights = {n: w.detach()[rows].requires_grad_() for n, w in self.weights.items()}
        self.trained = self.trained[rows]

    def copy_to(self, row: int, circuit: Circuit) -> None:
        """Copy the weights of the stack's circuit ``row`` into ``circuit`` (on the CPU)."""
        with torch.no_grad():
            for n, p in circuit.named_parameters():
                p.copy_(self.weights[SLOT[n]][row].cpu())

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids (C, B, T) -> logits (C, B, V) of the last position and its attention (C, B, T), each
        circuit's ``Circuit.forward``, with the products of one-hot inputs as gathers and sums."""
        w = self.weights
        V = w["W_K"].shape[-1]
        q = _columns(w["W_Q"], tokens[:, :, -1])  # (C, B, d): W_Q x_T
        u = q @ w["W_K"]  # (C, B, V): u_v = (W_Q x_T) . (W_K e_v)
        a = (u.gather(-1, tokens) / math.sqrt(V)).softmax(-1)  # (C, B, T): s_j = u_{x_j} / sqrt(d)
        context = torch.zeros_like(u).scatter_add(-1, tokens, a)  # (C, B, V): sum_j a_j x_j
        return (context @ w["W_V"].transpose(1, 2)) @ w["W_O"].transpose(1, 2), a

    def losses(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Each circuit's mean cross-entropy on its batch (B,), (C,): ``train_circuit``'s loss."""
        logits, _ = self.forward(tokens)
        ce = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")
        return ce.view(targets.shape).mean(1)

    def step(self, tokens: torch.Tensor, targets: torch.Tensor, lrs: torch.Tensor) -> torch.Tensor:
        """One SGD step of every circuit, theta <- theta - eta grad, with ``lrs`` (C, 2) each circuit's
        (eta_QK, eta_OV). Returns the losses before the step, (C,) float64."""
        losses = self.losses(tokens, targets)
        params = [self.weights[slot] for slot in SLOTS]
        grads = torch.autograd.grad(losses.sum(), params)
        rates = -lrs[:, [0, 0, 1, 1]] * self.trained  # (C, 4): -eta of each slot (QK, QK, OV, OV), 0 if I
        with torch.no_grad():
            for k, (p, g) in enumerate(zip(params, grads, strict=True)):
                p.addcmul_(g, rates[:, k, None, None])  # = p.add_(g, alpha=-eta) for each circuit
        return losses.detach().double()


def train_circuits(
    specs: Sequence[CircuitSpec],
    *,
    batch_size: int = 32,
    batches_per_epoch: int = 250,
    max_epochs: int = 2500,
    loss_stop: float | None = 1e-3,
    device: str | torch.device = "cpu",
    threads: int | None = 1,
) -> list[CircuitTrainResult]:
    """Train every run of ``specs`` as ``train_circuit(spec.kind, lr_qk=.., lr_ov=.., qk_ramp=.., ov_ramp=..,
    seq_len=.., seed=.., batch_size=.., batches_per_epoch=.., max_epochs=.., loss_stop=..)`` would (Fig. 2 and
    the ratio sweep), all at once on ``device`` (``threads`` intra-op threads on the CPU, see
    ``torch_threads``); returns their results in the order of ``specs``, models on the CPU. Raises
    ``TrainingDiverged`` when a circuit's epoch loss is not finite, as ``train_circuit`` does."""
    device = torch.device(device)
    total = max_epochs * batches_per_epoch
    models = [
        make_circuit(
            s.kind, seed=s.seed, init_scale=s.init_scale, qk_init=s.qk_init, collapsed_init=s.collapsed_init
        )
        for s in specs
    ]
    results = [
        CircuitTrainResult(m, {k: [] for k in ("epoch", "train_loss", "lr_qk", "lr_ov")}, 0, False)
        for m in models
    ]
    streams = {(s.seed, s.seq_len): seeded_generator(s.seed, 1) for s in specs}
    # one stack per sequence length; members[seq_len] = the spec indices of its running circuits
    members: dict[int, list[int]] = {}
    for i, s in enumerate(specs):
        members.setdefault(s.seq_len, []).append(i)
    stacks = {seq_len: CircuitStack([models[i] for i in idx], device) for seq_len, idx in members.items()}
    with torch_threads(threads):
        for epoch in range(max_epochs):
            if not members:
                break
            first = epoch * batches_per_epoch  # the epoch's first step
            # the epoch's batches of every stream a running circuit reads, drawn in the stream's order
            keys = sorted({(specs[i].seed, specs[i].seq_len) for idx in members.values() for i in idx})
            drawn = {key: _draw(streams[key], batch_size, key[1], batches_per_epoch) for key in keys}
            for seq_len in list(members):
                idx, stack = members[seq_len], stacks[seq_len]
                own = [key for key in keys if key[1] == seq_len]  # the streams of this length
                inputs = torch.stack([drawn[key][0] for key in own], 1).to(device)  # (steps, streams, B, T)
                targets = torch.stack([drawn[key][1] for key in own], 1).to(device)  # (steps, streams, B)
                reads = torch.tensor([own.index((specs[i].seed, seq_len)) for i in idx], device=device)
                lrs = torch.tensor(
                    [[specs[i].lrs(first + t, total) for i in idx] for t in range(batches_per_epoch)]
                ).to(device)  # (steps, C, 2): eta_QK, eta_OV
                running = torch.zeros(len(idx), dtype=torch.float64, device=device)
                for t in range(batches_per_epoch):
                    running += stack.step(inputs[t, reads], targets[t, reads], lrs[t])
                means = (running / batches_per_epoch).tolist()
                for i, mean in zip(idx, means, strict=True):
                    if not math.isfinite(mean):
                        raise TrainingDiverged(f"{specs[i]}: training loss {mean} at epoch {epoch}")
                    lr_qk, lr_ov = specs[i].lrs(first + batches_per_epoch - 1, total)  # the epoch's last step
                    _record(results[i], epoch + 1, mean, lr_qk, lr_ov, batches_per_epoch, loss_stop)
                done = [row for row, i in enumerate(idx) if results[i].stopped_early]
                if done:  # the stopped circuits leave the stack with their final weights
                    for row in done:
                        stack.copy_to(row, models[idx[row]])
                    rows = [row for row in range(len(idx)) if row not in done]
                    members[seq_len] = [idx[row] for row in rows]
                    stack.keep(torch.tensor(rows, dtype=torch.long, device=device))
                    if not rows:
                        del members[seq_len]
        for seq_len, idx in members.items():
            for row, i in enumerate(idx):
                stacks[seq_len].copy_to(row, models[i])
    return results


def _record(
    r: CircuitTrainResult,
    epoch: int,
    mean: float,
    lr_qk: float,
    lr_ov: float,
    steps: int,
    loss_stop: float | None,
) -> None:
    """Add an epoch of ``steps`` SGD steps to ``r``'s history, as ``train_circuit`` records it, and stop the
    run when its mean loss reached ``loss_stop``."""
    for k, v in (("epoch", epoch), ("train_loss", mean), ("lr_qk", lr_qk), ("lr_ov", lr_ov)):
        r.history[k].append(v)
    r.steps += steps
    r.stopped_early = loss_stop is not None and mean <= loss_stop


def _draw(
    stream: torch.Generator, batch_size: int, seq_len: int, n: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The next ``n`` batches of ``stream`` (``sample_batch`` as ``train_circuit`` draws them): inputs (n, B,
    T) and targets (n, B)."""
    drawn = [sample_batch(batch_size, seq_len, stream) for _ in range(n)]
    return torch.stack([b.inputs for b in drawn]), torch.stack([b.targets for b in drawn])


def benchmark(scale: str = "cpu", one_by_one: int | None = 1) -> dict[str, float | int | bool | str]:
    """Time the circuit runs of Fig. 2 and the ratio sweep at ``scale`` on this machine's CPU, one thread: all
    at once (``train_circuits``, one batch per set of shared training settings) and one by one
    (``train_circuit``), in CPU seconds (``process_time``) and wall seconds. ``one_by_one``: how many runs of
    each (parameterisation, sequence length) to train one by one (None: all); the one-by-one totals are then
    extrapolated from their seconds per SGD step and every run's steps (``*_all``; measured when all ran).
    Also reports how far those runs' final weights (max relative difference), losses and held-out metrics
    (what the notebook prints: the mean distinct-token mass and true-label probability, the accuracy, on the
    preset's held-out set; max absolute difference) are from the batched ones (and the run where the metrics
    differ most), and whether they stopped at the same epochs."""
    from attnlab.papers.qk_speed.experiment import circuit_spec, configure  # it imports this module

    exp = configure(scale=scale, device="cpu")
    runs = [circuit_spec(cfg) for cfg in exp.circuit_configs()]
    specs = [spec for spec, _ in runs]
    by_settings: dict[str, list[int]] = {}  # the runs that share their training settings train as one batch
    for i, (_, settings) in enumerate(runs):
        by_settings.setdefault(json.dumps(settings, sort_keys=True), []).append(i)
    cpu, wall = time.process_time(), time.perf_counter()
    batched: list[CircuitTrainResult] = [None] * len(specs)  # type: ignore[list-item]
    for key, idx in by_settings.items():
        results = train_circuits([specs[i] for i in idx], device="cpu", threads=1, **json.loads(key))
        for i, r in zip(idx, results, strict=True):
            batched[i] = r
    out: dict[str, float | int | bool | str] = {
        "circuits": len(specs),
        "steps": sum(r.steps for r in batched),
        "batched_cpu_s": time.process_time() - cpu,
        "batched_wall_s": time.perf_counter() - wall,
    }
    groups: dict[tuple[str, int], list[int]] = {}
    for i, s in enumerate(specs):
        groups.setdefault((s.kind, s.seq_len), []).append(i)
    chosen = [i for idx in groups.values() for i in idx[:one_by_one]]
    per_step: dict[tuple[str, int], list[tuple[float, float]]] = {}
    weight_diff = loss_diff = metric_diff = 0.0
    same_epochs = True
    for i in chosen:
        s = specs[i]
        cpu, wall = time.process_time(), time.perf_counter()
        model = make_circuit(
            s.kind, seed=s.seed, init_scale=s.init_scale, qk_init=s.qk_init, collapsed_init=s.collapsed_init
        )
        one = train_circuit(
            model, lr_qk=s.lr_qk, lr_ov=s.lr_ov, qk_ramp=s.qk_ramp, ov_ramp=s.ov_ramp, seq_len=s.seq_len,
            seed=s.seed, threads=1, **runs[i][1],
        )  # fmt: skip
        cost = (time.process_time() - cpu, time.perf_counter() - wall)
        per_step.setdefault((s.kind, s.seq_len), []).append((cost[0] / one.steps, cost[1] / one.steps))
        for a, b in zip(one.model.parameters(), batched[i].model.parameters(), strict=True):
            weight_diff = max(weight_diff, ((a - b).abs().max() / a.abs().max()).item())
        loss_diff = max(loss_diff, abs(one.final_loss - batched[i].final_loss) / abs(one.final_loss))
        same_epochs &= one.history["epoch"] == batched[i].history["epoch"]
        held_out = sample_batch(exp.preset.circuits.eval_size, s.seq_len, seeded_generator(s.seed, 2))
        metrics = [evaluate_circuit(r.model, held_out) for r in (one, batched[i])]
        diff = max(
            abs(metrics[0][k].mean() - metrics[1][k].mean())
            for k in ("distinct_mass", "true_prob", "correct")
        )
        if diff >= metric_diff:
            metric_diff, worst = float(diff), s
        out["one_by_one_cpu_s"] = out.get("one_by_one_cpu_s", 0.0) + cost[0]
        out["one_by_one_wall_s"] = out.get("one_by_one_wall_s", 0.0) + cost[1]
    for k, name in enumerate(("cpu", "wall")):
        out[f"one_by_one_{name}_s_all"] = sum(
            r.steps * sum(c[k] for c in per_step[s.kind, s.seq_len]) / len(per_step[s.kind, s.seq_len])
            for s, r in zip(specs, batched, strict=True)
        )
        out[f"{name}_speedup"] = out[f"one_by_one_{name}_s_all"] / out[f"batched_{name}_s"]
    out |= {
        "one_by_one_runs": len(chosen),
        "max_weight_rel_diff": weight_diff,
        "max_final_loss_rel_diff": loss_diff,
        "max_metric_abs_diff": metric_diff,
        "max_metric_diff_run": str(worst),
        "same_epochs": same_epochs,
    }
    return out
