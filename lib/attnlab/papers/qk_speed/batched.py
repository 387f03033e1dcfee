"""Many Fig. 2 circuits of "Faster query-key learning sharpens attention" (arXiv 2608.06776) trained at once.

``train_circuits`` trains a list of ``CircuitSpec`` runs (seeds x learning-rate settings x parameterisations)
as ``train_circuit`` trains each: the same initialisation per seed (``make_circuit``), the same batches
(stream 1 of ``seeded_generator(seed)``, an epoch's in one ``sample_batches`` draw, drawn once per (seed,
sequence length) and shared by the runs that read it), plain SGD with each circuit's QK / OV learning rates
and ramps, the same early stop per circuit (after the first epoch whose mean training loss is <=
``loss_stop``; a stopped circuit leaves the batch with its final weights) and the same history.

The runs of one sequence length form a ``CircuitStack``, one FAFO model with a leading circuit dimension on
its four matrices, a collapsed circuit's missing factor held at the identity, so one batched matmul serves
every run. The stack computes ``Circuit.forward``'s function from each sequence's token counts (the
attention over positions is a softmax over the vocabulary with log-count offsets, see ``CircuitStack``),
which skips the one-hot inputs and the dense (B T, V) x (V, V) product of the keys that dominates a
factorised circuit's step in ``Circuit``, and its gradients are written out by hand. The values are those of
``Circuit`` up to float rounding (sums in another order, exp(s + log n) for n exp(s)), so the results agree
with ``train_circuit`` to float rounding, not bit for bit (weights and losses to ~1e-6 relative over short
runs; rounding differences grow over thousands of steps: at the ``cpu`` preset the weights to ~2e-3 and the
final losses to ~1e-5 relative, the notebook's held-out metrics to ~1e-6, with the same stopping epochs; see
``benchmark``, which also times the ``cpu`` preset's circuits both ways).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attnlab.errors import TrainingDiverged
from attnlab.papers.qk_speed.circuit_configs import CircuitJobs
from attnlab.papers.qk_speed.circuits import (
    Circuit,
    CircuitTrainResult,
    evaluate_circuit,
    make_circuit,
    ramp,
    torch_threads,
    train_circuit,
)
from attnlab.papers.qk_speed.synthetic import sample_batch, sample_batches, seeded_generator


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
        return self.lr_qk * ramp(total, *self.qk_ramp)(step), self.lr_ov * ramp(total, *self.ov_ramp)(step)


def circuit_spec(config: dict) -> tuple[CircuitSpec, dict]:
    """A circuit run's cache config (``circuit_configs.CircuitJobs.config``) as ``train_circuits``' spec and
    its shared training settings."""
    spec = CircuitSpec(
        config["kind"],
        config["lr_qk"],
        config["lr_ov"],
        qk_ramp=tuple(config["qk_ramp"]),
        seq_len=config["seq_len"],
        seed=config["seed"],
        qk_init=config["qk_init"],
        collapsed_init=config["collapsed_init"],
    )
    settings = {k: config[k] for k in ("batch_size", "batches_per_epoch", "max_epochs", "loss_stop")}
    return spec, settings


SLOTS = ("W_Q", "W_K", "W_V", "W_O")  # the stack's matrices, a FAFO circuit's
SLOT = {"W_Q": "W_Q", "W_K": "W_K", "W_QK": "W_K", "W_V": "W_V", "W_O": "W_O", "W_OV": "W_O"}
OPTIONAL = ("W_Q", "W_V")  # held at I by a collapsed QK / OV circuit; every circuit trains W_K and W_O


class CircuitStack:
    """C circuits of any parameterisations (Fig. 2's, ``circuits`` module) as one FAFO model whose matrices
    W_Q, W_K, W_V, W_O get a leading circuit dimension: a collapsed W_QK = W_Q^T W_K sits in W_K with W_Q = I,
    a collapsed W_OV = W_O W_V in W_O with W_V = I. Products with these identities are exact, and training
    leaves them at I (learning rate 0), so each circuit computes and learns as its ``Circuit``. A matrix that
    is I in every circuit of the stack is left out of the products altogether (also exact).

    The attention sums over positions only through token identities: with n_v the count of token v in the
    sequence, softmax_j(u_{x_j} / sqrt(d)) summed into c = sum_j a_j x_j is c = softmax_v(u_v / sqrt(d) +
    log n_v) over the vocabulary (a token that is absent gets weight 0), and a_j = c_{x_j} / n_{x_j}. So the
    stack computes ``Circuit.forward``'s function from the counts, without one-hot inputs or the dense
    (B T, V) x (V, V) product of the keys that dominates a factorised circuit's step in ``Circuit``, and at a
    cost that does not grow with the sequence length. W_Q x_T is column x_T of W_Q, a row of W_Q^T, which the
    stack keeps contiguous (``weights["W_Q"]`` is its transposed view). The gradients are written out by hand
    (``train_epoch``), each matrix's SGD update one fused batched product or row sum, theta <- theta - eta
    grad."""

    def __init__(self, circuits: Sequence[Circuit], device: torch.device) -> None:
        eye = torch.eye(circuits[0].vocab_size)
        own = [{SLOT[n]: p.detach() for n, p in c.named_parameters()} for c in circuits]
        self.weights = {slot: torch.stack([p.get(slot, eye) for p in own]).to(device) for slot in SLOTS}
        self.weights["W_Q"] = self.weights["W_Q"].transpose(1, 2).contiguous().transpose(1, 2)
        self.trained = torch.tensor([[slot in p for slot in SLOTS] for p in own], device=device)  # (C, 4)
        # the matrices that are I in every circuit: left out of the products
        self.identity = {slot for slot in OPTIONAL if not any(slot in p for p in own)}

    def keep(self, rows: torch.Tensor) -> None:
        """Keep only the circuits ``rows`` (indices into the stack), in that order."""
        self.weights = {n: w[rows] for n, w in self.weights.items() if n != "W_Q"} | {
            "W_Q": self.weights["W_Q"].transpose(1, 2)[rows].transpose(1, 2)
        }
        self.trained = self.trained[rows]

    def copy_to(self, row: int, circuit: Circuit) -> None:
        """Copy the weights of the stack's circuit ``row`` into ``circuit`` (on the CPU)."""
        with torch.no_grad():
            for n, p in circuit.named_parameters():
                p.copy_(self.weights[SLOT[n]][row].cpu())

    def log_counts(self, tokens: torch.Tensor) -> torch.Tensor:
        """log n_v, the log count of every token v in each sequence: token ids (..., B, T) -> (..., B, V),
        -inf where a token is absent (looked up: the log of a zero count is a slow path of ``log``)."""
        dtype, V, T = self.weights["W_K"].dtype, self.weights["W_K"].shape[-1], tokens.shape[-1]
        counts = torch.zeros(*tokens.shape[:-1], V, dtype=torch.long, device=tokens.device)
        counts.scatter_add_(-1, tokens, torch.ones_like(tokens))
        return torch.take(torch.arange(T + 1, dtype=dtype, device=tokens.device).log(), counts)  # log 0: -inf

    def _rows(self, last: torch.Tensor) -> torch.Tensor:
        """Row c V + x_T of the (C V, d) matrices: the rows that x_T (C, B) selects, flattened (C B,)."""
        C, V = last.shape[0], self.weights["W_K"].shape[-1]
        return torch.add(last, torch.arange(0, C * V, V, device=last.device)[:, None]).view(-1)

    def _forward(
        self, log_n: torch.Tensor, rows: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``forward``'s pass with what the gradients need, from the log counts ``log_n`` (C, B, V) and the
        query rows ``rows`` (``_rows``): q = W_Q x_T (C, B, d) (None when W_Q = I), the attended input c =
        sum_j a_j x_j (C, B, V), h = W_V c (C, B, d) and the logits W_O h (C, B, V)."""
        w = self.weights
        C, B, V = log_n.shape
        if "W_Q" in self.identity:
            q = None
            u = w["W_K"].view(-1, V).index_select(0, rows).view(C, B, V)  # row x_T of W_K (q = x_T)
        else:
            q = w["W_Q"].transpose(1, 2).view(C * V, -1).index_select(0, rows).view(C, B, -1)  # W_Q x_T
            u = q @ w["W_K"]  # (C, B, V): u_v = (W_Q x_T) . (W_K e_v)
        context = torch.add(log_n, u, alpha=1 / math.sqrt(V)).softmax(-1)  # (C, B, V): softmax(s + log n)
        h = context if "W_V" in self.identity else context @ w["W_V"].transpose(1, 2)  # (C, B, d)
        return q, context, h, h @ w["W_O"].transpose(1, 2)

    @torch.no_grad()
    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids (C, B, T) -> logits (C, B, V) of the last position and its attention (C, B, T), each
        circuit's ``Circuit.forward``: a_j = c_{x_j} / n_{x_j}."""
        log_n = self.log_counts(tokens)
        _, context, _, logits = self._forward(log_n, self._rows(tokens[..., -1]))
        return logits, context.gather(-1, tokens) / log_n.exp().gather(-1, tokens)

    @torch.no_grad()
    def train_epoch(
        self,
        tokens: torch.Tensor,
        targets: torch.Tensor,
        lrs: torch.Tensor,
        reads: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """SGD on every circuit at once, one step per batch: ``tokens`` (steps, S, B, T) and ``targets``
        (steps, S, B) the batches of S data streams, ``reads`` (C,) the stream each circuit reads (None: its
        own, S = C), ``lrs`` (steps, C, 2) each circuit's (eta_QK, eta_OV) at each step. Returns each step's
        mean cross-entropy before the step, (steps, C) float32: ``train_circuit``'s loss.

        The gradients by hand, with g = softmax(logits) - onehot(y) (B x dL/dlogits of the mean loss):
        dW_O = g^T h, dW_V = (g W_O)^T c, then through the softmax over the vocabulary g_z = c (g_c - c . g_c)
        with g_c = g W_O W_V, dW_K = q^T g_z / sqrt(d) and column x_T of dW_Q += W_K g_z / sqrt(d); all
        summed over the batch. The factors 1 / B and 1 / sqrt(d) are folded into the learning rates, so each
        update is theta <- theta - (eta / B ...) x (a batched product or a row sum), in place."""
        w = self.weights
        C, B = lrs.shape[1], targets.shape[-1]
        V = w["W_K"].shape[-1]
        W_Q_rows, W_K, W_V, W_O = w["W_Q"].transpose(1, 2).view(C * V, -1), w["W_K"], w["W_V"], w["W_O"]
        W_Kt = W_K.transpose(1, 2)
        reads = torch.arange(C, device=lrs.device) if reads is None else reads
        log_n = self.log_counts(tokens)  # (steps, S, B, V)
        ids = torch.stack([tokens[..., -1], targets], -1)  # (steps, S, B, 2): x_T, y
        scale = torch.tensor([B * math.sqrt(V), B], dtype=torch.float64, device=lrs.device)
        rates = -(lrs.double() / scale)[..., [0, 0, 1, 1]] * self.trained  # (steps, C, 4): Q, K, V, O
        rates = rates.to(W_K.dtype).permute(0, 2, 1)[..., None, None]  # (steps, 4, C, 1, 1)
        minus_one = torch.full((C, B, 1), -1.0, dtype=W_K.dtype, device=lrs.device)
        log_probs = []
        for t, (r_q, r_k, r_v, r_o) in enumerate(rates.unbind(0)):
            step_ids = ids[t].index_select(0, reads)  # (C, B, 2)
            rows, y = self._rows(step_ids[..., 0]), step_ids[..., 1:]  # (C B,), (C, B, 1)
            q, context, h, logits = self._forward(log_n[t].index_select(0, reads), rows)
            logp = logits.log_softmax(-1)  # (C, B, V)
            log_probs.append(logp.gather(-1, y))  # (C, B, 1)
            g = logp.exp_().scatter_add_(-1, y, minus_one)  # (C, B, V): softmax - onehot(y)
            g_h = g @ W_O  # (C, B, d), with W_O before its update
            W_O.baddbmm_((g * r_o).transpose(1, 2), h)
            if "W_V" in self.identity:
                g_c = g_h
            else:
                g_c = g_h @ W_V  # (C, B, V)
                W_V.baddbmm_((g_h * r_v).transpose(1, 2), context)
            g_z = torch._softmax_backward_data(g_c, context, -1, context.dtype)  # (C, B, V): sqrt(d) dL/du
            if q is None:  # u = row x_T of W_K
                W_K.view(C * V, V).index_add_(0, rows, (g_z * r_k).view(C * B, V))
            else:
                g_q = g_z @ W_Kt  # (C, B, d), with W_K before its update
                W_K.baddbmm_(q.transpose(1, 2), g_z * r_k)
                W_Q_rows.index_add_(0, rows, (g_q * r_q).view(C * B, -1))  # column x_T of W_Q
        return -torch.stack(log_probs).squeeze(-1).mean(-1)


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
    # each run's (eta_QK, eta_OV) = base x ramp(step), ramp = start + (end - start) x step / total, as lrs
    base = torch.tensor([[s.lr_qk, s.lr_ov] for s in specs], dtype=torch.float64)  # (runs, 2)
    starts = torch.tensor([[s.qk_ramp[0], s.ov_ramp[0]] for s in specs], dtype=torch.float64)
    ends = torch.tensor([[s.qk_ramp[1], s.ov_ramp[1]] for s in specs], dtype=torch.float64)
    with torch_threads(threads):
        for epoch in range(max_epochs):
            if not members:
                break
            first = epoch * batches_per_epoch  # the epoch's first step
            step = torch.arange(first, first + batches_per_epoch, dtype=torch.float64)[:, None, None]
            lrs = base * (starts + (ends - starts) * step / max(total, 1))  # (steps, runs, 2)
            # the epoch's batches of every stream a running circuit reads, one draw each as train_circuit's
            keys = sorted({(specs[i].seed, specs[i].seq_len) for idx in members.values() for i in idx})
            drawn = {key: sample_batches(batches_per_epoch, batch_size, key[1], streams[key]) for key in keys}
            for seq_len in list(members):
                idx, stack = members[seq_len], stacks[seq_len]
                own = [key for key in keys if key[1] == seq_len]  # the streams of this length
                reads = torch.tensor([own.index((specs[i].seed, seq_len)) for i in idx], device=device)
                inputs = torch.stack([drawn[key][0] for key in own], 1).to(device)  # (steps, streams, B, T)
                targets = torch.stack([drawn[key][1] for key in own], 1).to(device)  # (steps, streams, B)
                losses = stack.train_epoch(inputs, targets, lrs[:, idx].to(device), reads)
                means = (losses.double().sum(0) / batches_per_epoch).tolist()
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


def benchmark(
    scale: str = "cpu", one_by_one: int | None = 1, device: str = "cpu"
) -> dict[str, float | int | bool | str]:
    """Time the circuit runs of Fig. 2 and the ratio sweep at ``scale`` on this machine: all at once
    (``train_circuits``, one batch per set of shared training settings, on ``device``, one thread on the
    CPU) and one by one (``train_circuit``, on the CPU, one thread), in CPU seconds (``process_time``) and
    wall seconds; also the batched program's steps (a step of a stack trains all its circuits) and its time
    per batched step (``plan``'s cost model). ``one_by_one``: how many runs of each (parameterisation,
    sequence length) to train one by one (None: all); the one-by-one totals are then extrapolated from their
    seconds per SGD step and every run's steps (``*_all``; measured when all ran).
    Also reports how far those runs' final weights (max relative difference), losses and held-out metrics
    (what the notebook prints: the mean distinct-token mass and true-label probability, the accuracy, on the
    preset's held-out set; max absolute difference) are from the batched ones (and the run where the metrics
    differ most), and whether they stopped at the same epochs."""
    jobs = CircuitJobs.at_scale(scale)
    runs = [circuit_spec(cfg) for cfg in jobs.configs()]
    specs = [spec for spec, _ in runs]
    by_settings: dict[str, list[int]] = {}  # the runs that share their training settings train as one batch
    for i, (_, settings) in enumerate(runs):
        by_settings.setdefault(json.dumps(settings, sort_keys=True), []).append(i)
    if device != "cpu":  # start the device outside the timing
        train_circuits(specs[:1], batches_per_epoch=2, max_epochs=1, device=device)
    cpu, wall = time.process_time(), time.perf_counter()
    trained: dict[int, CircuitTrainResult] = {}
    for key, idx in by_settings.items():
        results = train_circuits([specs[i] for i in idx], device=device, threads=1, **json.loads(key))
        trained.update(zip(idx, results, strict=True))
    batched = [trained[i] for i in range(len(specs))]
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    stacks: dict[tuple[str, int], int] = {}  # the steps each stack ran: those of its longest run
    for key, idx in by_settings.items():
        for i in idx:
            stacks[key, specs[i].seq_len] = max(stacks.get((key, specs[i].seq_len), 0), batched[i].steps)
    batched_s = {"cpu": cpu, "wall": wall}
    out: dict[str, float | int | bool | str] = {
        "circuits": len(specs),
        "steps": sum(r.steps for r in batched),
        "batched_device": device,
        "batched_cpu_s": cpu,
        "batched_wall_s": wall,
        "batched_steps": sum(stacks.values()),
        "batched_cpu_ms_per_step": 1e3 * cpu / sum(stacks.values()),
        "batched_wall_ms_per_step": 1e3 * wall / sum(stacks.values()),
    }
    groups: dict[tuple[str, int], list[int]] = {}
    for i, s in enumerate(specs):
        groups.setdefault((s.kind, s.seq_len), []).append(i)
    chosen = [i for idx in groups.values() for i in idx[:one_by_one]]
    per_step: dict[tuple[str, int], list[tuple[float, float]]] = {}
    weight_diff = loss_diff = metric_diff = 0.0
    one_by_one_cpu = one_by_one_wall = 0.0
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
        held_out = sample_batch(jobs.circuits.eval_size, s.seq_len, seeded_generator(s.seed, 2))
        metrics = [evaluate_circuit(r.model, held_out) for r in (one, batched[i])]
        diff = max(
            abs(metrics[0][k].mean() - metrics[1][k].mean())
            for k in ("distinct_mass", "true_prob", "correct")
        )
        if diff >= metric_diff:
            metric_diff, worst = float(diff), s
        one_by_one_cpu += cost[0]
        one_by_one_wall += cost[1]
    if chosen:
        out["one_by_one_cpu_s"], out["one_by_one_wall_s"] = one_by_one_cpu, one_by_one_wall
    for k, name in enumerate(("cpu", "wall")):
        one_by_one_all = sum(
            r.steps * sum(c[k] for c in per_step[s.kind, s.seq_len]) / len(per_step[s.kind, s.seq_len])
            for s, r in zip(specs, batched, strict=True)
        )
        out[f"one_by_one_{name}_s_all"] = one_by_one_all
        out[f"{name}_speedup"] = one_by_one_all / batched_s[name]
    out |= {
        "one_by_one_runs": len(chosen),
        "max_weight_rel_diff": weight_diff,
        "max_final_loss_rel_diff": loss_diff,
        "max_metric_abs_diff": metric_diff,
        "max_metric_diff_run": str(worst),
        "same_epochs": same_epochs,
    }
    return out
