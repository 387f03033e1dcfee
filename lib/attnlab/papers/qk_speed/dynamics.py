"""Reduced two-scalar training dynamics of "Faster query-key learning sharpens attention" (Fig. 4).

From ``docs/papers/qk-speed.md`` ("Setup"): m relevant tokens, n common tokens, M classes, b a
scale constant, mu_OV and mu_QK the scalars of the OV and QK circuits under population gradient flow:

    alpha     = m e^{mu_QK} / (m e^{mu_QK} + n)                      attention mass on the relevant tokens
    L         = log(1 + (M - 1) e^{-alpha mu_OV})                     loss
    dmu_OV/dt = eta_OV alpha / (b (e^{alpha mu_OV} + M - 1))
    dmu_QK/dt = eta_QK (M - 1) alpha (1 - alpha) mu_OV / (M b^2 (e^{alpha mu_OV} + M - 1))

``simulate`` integrates them with classical RK4 in the normalised time tau = t * min(eta_OV, eta_QK) (so the
slower circuit sets the clock), step 10 in tau, from mu_OV = mu_QK = 0 until L <= 1e-4, as the authors' Fig. 4
notebook does. Every quantity is evaluated in an overflow-free form (no clipping is needed): alpha and
1 - alpha as logistic functions of mu_QK, 1 / (e^u + M - 1) and log1p as functions of e^{-u} for u >= 0.

``fit_growth_laws`` tests the asymptotic laws over the late phase: mu_OV ~ log t, and the paper's
mu_QK ~ log^2 t against e^{mu_QK} ~ log^2 t. The equations have a first integral (``first_integral``):
m e^{mu_QK} + n mu_QK grows exactly like mu_OV^2, so mu_QK ~ log^2 t holds while alpha is small and
e^{mu_QK} ~ log^2 t once alpha -> 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

import numpy as np
import pandas as pd

State = tuple[float, float]  # (mu_OV, mu_QK)


class _Event(Protocol):
    """An event function of SciPy's ``solve_ivp``: a callable with ``terminal`` and ``direction`` set."""

    terminal: bool
    direction: float

    def __call__(self, s: float, y: np.ndarray, /) -> float: ...


@dataclass(frozen=True)
class ReducedModel:
    """The constants of the reduced dynamics (Fig. 4: m, n, b, M = 5, 50, 50, 20) and the learning rates."""

    eta_ov: float = 1.0
    eta_qk: float = 1.0
    m: float = 5.0
    n: float = 50.0
    b: float = 50.0
    M: float = 20.0

    def alpha(self, mu_qk: float) -> float:
        """alpha = m e^{mu_QK} / (m e^{mu_QK} + n) = 1 / (1 + (n/m) e^{-mu_QK})."""
        return _logistic(mu_qk + math.log(self.m / self.n))

    def one_minus_alpha(self, mu_qk: float) -> float:
        """1 - alpha = n / (m e^{mu_QK} + n), without cancellation when alpha -> 1."""
        return _logistic(-(mu_qk + math.log(self.m / self.n)))

    def _inv_exp_plus(self, u: float) -> float:
        """1 / (e^u + M - 1)."""
        if u > 0:
            e = math.exp(-u)
            return e / (1.0 + (self.M - 1) * e)
        return 1.0 / (math.exp(u) + self.M - 1)

    def loss(self, mu_ov: float, mu_qk: float) -> float:
        """L = log(1 + (M - 1) e^{-alpha mu_OV})."""
        u = self.alpha(mu_qk) * mu_ov
        if u >= 0:
            return math.log1p((self.M - 1) * math.exp(-u))
        return -u + math.log(math.exp(u) + self.M - 1)

    def rhs(self, mu_ov: float, mu_qk: float) -> State:
        """(dmu_OV/dt, dmu_QK/dt) in the original time t."""
        a, one_minus_a = self.alpha(mu_qk), self.one_minus_alpha(mu_qk)
        g = self._inv_exp_plus(a * mu_ov)
        d_ov = self.eta_ov * a * g / self.b
        d_qk = self.eta_qk * (self.M - 1) * a * one_minus_a * mu_ov * g / (self.M * self.b**2)
        return d_ov, d_qk


def _logistic(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def rk4_step(f: Callable[[float, float], State], y: State, h: float) -> State:
    """One classical Runge-Kutta step of size h for the autonomous system y' = f(y), y = (y0, y1)."""
    y0, y1 = y
    k1 = f(y0, y1)
    k2 = f(y0 + 0.5 * h * k1[0], y1 + 0.5 * h * k1[1])
    k3 = f(y0 + 0.5 * h * k2[0], y1 + 0.5 * h * k2[1])
    k4 = f(y0 + h * k3[0], y1 + h * k3[1])
    return (
        y0 + h / 6.0 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]),
        y1 + h / 6.0 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]),
    )


@dataclass(frozen=True)
class Trajectory:
    """The recorded trajectory, one entry per recorded RK4 step (step 0 = the initial state)."""

    step: np.ndarray
    tau: np.ndarray  # normalised time tau = t * min(eta_OV, eta_QK)
    t: np.ndarray  # original time
    mu_ov: np.ndarray
    mu_qk: np.ndarray
    alpha: np.ndarray
    loss: np.ndarray

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame({k: getattr(self, k) for k in self.__dataclass_fields__})


@dataclass(frozen=True)
class Simulation:
    """One run of ``simulate``: the final values as attributes, the path in ``trajectory``.

    ``reached`` is False when the run stopped at ``max_steps`` with the loss still above ``loss_stop``.
    """

    r: float
    model: ReducedModel
    mu_ov: float
    mu_qk: float
    alpha: float
    loss: float
    tau: float
    t: float
    steps: int
    reached: bool
    loss_stop: float
    dtau: float
    trajectory: Trajectory

    def summary(self) -> dict[str, float]:
        """The regression targets of Fig. 4 as a flat dict (the notebook prints these)."""
        return {
            "r": self.r, "mu_ov": self.mu_ov, "mu_qk": self.mu_qk, "alpha": self.alpha, "loss": self.loss,
            "tau": self.tau, "steps": self.steps, "reached": self.reached,
        }  # fmt: skip


def simulate(
    r: float,
    m: float = 5,
    n: float = 50,
    b: float = 50,
    M: float = 20,
    eta_ov: float = 1.0,
    loss_stop: float = 1e-4,
    *,
    dtau: float = 10.0,
    max_steps: int = 5_000_000,
    mu_ov0: float = 0.0,
    mu_qk0: float = 0.0,
    record_every: int = 1,
) -> Simulation:
    """Integrate the reduced dynamics (Fig. 4) for eta_QK = r * eta_OV with RK4 in the normalised time
    tau = t * min(eta_OV, eta_QK), step ``dtau`` (paper: 10), from (mu_OV, mu_QK) = (``mu_ov0``, ``mu_qk0``)
    until the loss is <= ``loss_stop`` (the step that first crosses it is the last one; paper: 1e-4).

    ``max_steps`` caps the run (default 5e6 steps = tau 5e7, the authors' MAX_T_TAU): a run that hits the cap
    returns with ``reached=False``. ``record_every`` keeps every k-th step in the trajectory (the first and
    last states are always kept; the final values never depend on it).
    """
    if r <= 0 or eta_ov <= 0:
        raise ValueError(f"learning rates must be positive (r={r}, eta_ov={eta_ov})")
    if dtau <= 0 or max_steps < 0 or record_every < 1:
        raise ValueError("dtau must be > 0, max_steps >= 0 and record_every >= 1")
    model = ReducedModel(eta_ov=eta_ov, eta_qk=r * eta_ov, m=m, n=n, b=b, M=M)
    scale = min(model.eta_ov, model.eta_qk)

    def f_tau(mu_ov: float, mu_qk: float) -> State:  # d/dtau = (1 / min eta) d/dt
        d_ov, d_qk = model.rhs(mu_ov, mu_qk)
        return d_ov / scale, d_qk / scale

    y: State = (float(mu_ov0), float(mu_qk0))
    loss = model.loss(*y)
    rec: dict[str, list[float]] = {k: [] for k in ("step", "mu_ov", "mu_qk", "loss")}

    def record(step: int, y: State, loss: float) -> None:
        rec["step"].append(step)
        rec["mu_ov"].append(y[0])
        rec["mu_qk"].append(y[1])
        rec["loss"].append(loss)

    record(0, y, loss)
    step = 0
    while loss > loss_stop and step < max_steps:
        y = rk4_step(f_tau, y, dtau)
        step += 1
        loss = model.loss(*y)
        if step % record_every == 0:
            record(step, y, loss)
    if rec["step"][-1] != step:
        record(step, y, loss)

    steps = np.array(rec["step"], dtype=np.int64)
    return _simulation(
        r, model, steps, steps * dtau, np.array(rec["mu_ov"]), np.array(rec["mu_qk"]), np.array(rec["loss"]),
        steps=step, reached=loss <= loss_stop, loss_stop=loss_stop, dtau=dtau,
    )  # fmt: skip


def _simulation(
    r: float,
    model: ReducedModel,
    step: np.ndarray,
    tau: np.ndarray,
    mu_ov: np.ndarray,
    mu_qk: np.ndarray,
    loss: np.ndarray,
    *,
    steps: int,
    reached: bool,
    loss_stop: float,
    dtau: float,
) -> Simulation:
    """A :class:`Simulation` whose final values are the last recorded state, with the run's steps, reached,
    loss_stop and dtau."""
    scale = min(model.eta_ov, model.eta_qk)
    alpha = np.array([model.alpha(q) for q in mu_qk])
    trajectory = Trajectory(
        step=step, tau=tau, t=tau / scale, mu_ov=mu_ov, mu_qk=mu_qk, alpha=alpha, loss=loss
    )
    return Simulation(
        r=r, model=model, mu_ov=float(mu_ov[-1]), mu_qk=float(mu_qk[-1]), alpha=model.alpha(float(mu_qk[-1])),
        loss=float(loss[-1]), tau=float(tau[-1]), t=float(tau[-1]) / scale, trajectory=trajectory,
        steps=steps, reached=reached, loss_stop=loss_stop, dtau=dtau,
    )  # fmt: skip


def simulate_adaptive(
    r: float,
    m: float = 5,
    n: float = 50,
    b: float = 50,
    M: float = 20,
    eta_ov: float = 1.0,
    loss_stop: float = 1e-4,
    *,
    mu_ov0: float = 0.0,
    mu_qk0: float = 0.0,
    max_tau: float = 5e7,
    points: int = 2000,
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> Simulation:
    """The reduced dynamics of :func:`simulate` (Fig. 4) by an adaptive solver: SciPy's ``solve_ivp``
    (DOP853) in log time s = log(1 + tau), where the slow, logarithmic growth is smooth, with the loss
    threshold as a terminal event, so the run ends exactly where L = ``loss_stop`` rather than at the end of
    the fixed step that crosses it. Milliseconds instead of the fixed-step solve's seconds; the final state
    agrees with :func:`simulate` to the accuracy of its step (tested). The trajectory holds ``points`` states
    evenly spaced in log(1 + tau) from the dense output (``step`` numbers them; ``steps`` is the solver's
    accepted steps; ``dtau`` is NaN). A run that reaches ``max_tau`` first returns ``reached=False``."""
    from scipy.integrate import solve_ivp

    if r <= 0 or eta_ov <= 0:
        raise ValueError(f"learning rates must be positive (r={r}, eta_ov={eta_ov})")
    if max_tau <= 0 or points < 2:
        raise ValueError("max_tau must be > 0 and points >= 2")
    model = ReducedModel(eta_ov=eta_ov, eta_qk=r * eta_ov, m=m, n=n, b=b, M=M)
    scale = min(model.eta_ov, model.eta_qk)

    def f_s(s: float, y: np.ndarray) -> list[float]:  # d/ds = (1 + tau) d/dtau = e^s (1 / min eta) d/dt
        d_ov, d_qk = model.rhs(y[0], y[1])
        return [math.exp(s) * d_ov / scale, math.exp(s) * d_qk / scale]

    def below(s: float, y: np.ndarray) -> float:
        return model.loss(y[0], y[1]) - loss_stop

    event = cast(_Event, below)  # solve_ivp reads these two attributes of the function
    event.terminal, event.direction = True, -1
    y0 = [float(mu_ov0), float(mu_qk0)]
    s_end = math.log1p(max_tau)
    if model.loss(*y0) <= loss_stop:
        s_end = 0.0
    sol = solve_ivp(
        f_s, (0.0, s_end), y0, method="DOP853", events=below, dense_output=True, rtol=rtol, atol=atol
    )
    if not sol.success:
        raise RuntimeError(f"the adaptive solve of the reduced dynamics failed (r={r}): {sol.message}")
    s_final = float(sol.t_events[0][0]) if len(sol.t_events[0]) else float(sol.t[-1])
    grid = np.linspace(0.0, s_final, points)
    states = sol.sol(grid) if s_final > 0 else np.array([[y0[0]] * points, [y0[1]] * points])
    mu_ov, mu_qk = states
    tau = np.expm1(grid)
    loss = np.array([model.loss(a, q) for a, q in zip(mu_ov, mu_qk, strict=True)])
    return _simulation(
        r, model, np.arange(points, dtype=np.int64), tau, mu_ov, mu_qk, loss,
        steps=len(sol.t) - 1, reached=float(loss[-1]) <= loss_stop * (1 + 1e-9), loss_stop=loss_stop,
        dtau=math.nan,
    )  # fmt: skip


def linear_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Least-squares y = slope * x + intercept; returns (slope, intercept, R^2)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3:
        raise ValueError("a fit needs at least 3 points")
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (slope * x + intercept)
    total = np.sum((y - y.mean()) ** 2)
    r2 = 1.0 - np.sum(residual**2) / total if total > 0 else float("nan")
    return float(slope), float(intercept), float(r2)


GROWTH_LAWS: Sequence[tuple[str, str, str]] = (
    # (law, y, x): y ~ slope * x + intercept
    ("mu_OV ~ log t", "mu_ov", "log t"),
    ("mu_QK ~ log^2 t", "mu_qk", "log^2 t"),
    ("exp(mu_QK) ~ log^2 t", "exp(mu_qk)", "log^2 t"),
    ("mu_QK ~ mu_OV^2", "mu_qk", "mu_ov^2"),
    ("exp(mu_QK) ~ mu_OV^2", "exp(mu_qk)", "mu_ov^2"),
)


def first_integral(sim: Simulation) -> np.ndarray:
    """The quantity the reduced dynamics conserve along the trajectory (from the equations in
    docs/papers/qk-speed.md: d mu_QK / d mu_OV = r (M - 1) (1 - alpha) mu_OV / (M b) with
    1 - alpha = n / (m e^{mu_QK} + n)):

        m e^{mu_QK} + n mu_QK - r n (M - 1) mu_OV^2 / (2 M b) = constant (= m from the origin).

    So m e^{mu_QK} + n mu_QK grows exactly like mu_OV^2: mu_QK ~ mu_OV^2 while n mu_QK dominates (alpha
    small), e^{mu_QK} ~ mu_OV^2 once m e^{mu_QK} does (alpha -> 1). Returns it at every recorded step."""
    c, traj = sim.model, sim.trajectory
    r = c.eta_qk / c.eta_ov
    return c.m * np.exp(traj.mu_qk) + c.n * traj.mu_qk - r * c.n * (c.M - 1) * traj.mu_ov**2 / (2 * c.M * c.b)


def fit_growth_laws(
    sim: Simulation,
    late: float = 0.5,
    time: str = "t",
    loss_below: float | None = None,
    points: int = 200,
    alpha_between: tuple[float, float] | None = None,
) -> pd.DataFrame:
    """Fit the growth laws over the late phase of a simulation.

    The late phase is the last ``late`` fraction of log(time) between time 1 and the end of the run
    (``time``: ``"t"``, the original time the theory speaks of, or ``"tau"``), so it does not depend on how
    the trajectory was sampled (solver, step, thinning); with ``alpha_between``, only its points where alpha
    lies in that range (``regime_fit``); or, with ``loss_below``, the part where the loss is
    <= it. The trajectory is resampled at ``points`` times evenly spaced in log t (steps evenly spaced in t
    would give the last decade almost all the weight).

    One row per law (mu_OV ~ log t, mu_QK ~ log^2 t, exp(mu_QK) ~ log^2 t, and mu_QK, exp(mu_QK) ~ mu_OV^2)
    with ``slope``, ``intercept`` and ``r2`` of the linear fit y = slope x + intercept. The mu_OV^2 rows also
    give ``exponent``, the slope p of log y against log mu_OV (y ~ mu_OV^p; 2 where the law holds); it is NaN
    for the log-time rows, whose large intercepts (time origin and scale) would bias such a log-log slope.
    """
    if not 0 < late <= 1:
        raise ValueError(f"late must be in (0, 1], got {late}")
    traj = sim.trajectory
    clock = {"t": traj.t, "tau": traj.tau}[time]
    keep = clock > 1
    if loss_below is not None:
        keep &= traj.loss <= loss_below
    if alpha_between is not None:  # only the points of the late phase where alpha lies in this range
        late_start = (1 - late) * np.log(clock[keep][-1]) if keep.any() else 0.0
        keep &= (traj.alpha >= alpha_between[0]) & (traj.alpha <= alpha_between[1])
        keep &= np.log(np.maximum(clock, np.finfo(float).tiny)) >= late_start
    log_t = np.log(clock[keep])
    if len(log_t) < 3:
        raise ValueError("the late phase needs >= 3 recorded points at times > 1")
    if loss_below is None and alpha_between is None:  # measured from t = 1, not the first recorded point
        start = max((1 - late) * log_t[-1], log_t[0])
    else:
        start = log_t[0]
    grid = np.linspace(start, log_t[-1], points)
    mu_ov = np.interp(grid, log_t, traj.mu_ov[keep])
    mu_qk = np.interp(grid, log_t, traj.mu_qk[keep])
    ys = {"mu_ov": mu_ov, "mu_qk": mu_qk, "exp(mu_qk)": np.exp(mu_qk)}
    xs = {"log t": grid, "log^2 t": grid**2, "mu_ov^2": mu_ov**2}
    rows = []
    for law, y_name, x_name in GROWTH_LAWS:
        y = ys[y_name]
        slope, intercept, r2 = linear_fit(xs[x_name], y)
        exponent = np.nan
        if x_name == "mu_ov^2" and np.all(y > 0) and np.all(mu_ov > 0):
            exponent = linear_fit(np.log(mu_ov), np.log(y))[0]
        rows.append(
            {"law": law, "slope": slope, "intercept": intercept, "r2": r2, "exponent": float(exponent),
             "log_t_from": float(grid[0]), "log_t_to": float(grid[-1])}
        )  # fmt: skip
    return pd.DataFrame(rows)


def stopping_values(sim: Simulation, thresholds: np.ndarray) -> pd.DataFrame:
    """The authors' stopping-threshold curves (Fig. 4 notebook, ``stopping_value_vs_threshold``): for each
    loss threshold L, the state at the first recorded point whose loss is <= L (NaN where never reached).
    One row per threshold: ``threshold``, ``mu_ov``, ``mu_qk``, ``alpha``."""
    traj = sim.trajectory
    rows = []
    for L in np.asarray(thresholds, dtype=float):
        hit = np.flatnonzero(traj.loss <= L)
        i = int(hit[0]) if hit.size else None
        rows.append({
            "threshold": float(L),
            **{k: math.nan if i is None else float(getattr(traj, k)[i]) for k in ("mu_ov", "mu_qk", "alpha")},
        })  # fmt: skip
    return pd.DataFrame(rows)


def regime_fit(sim: Simulation, late: float = 0.5, dominance: float = 2.0) -> dict[str, float | str]:
    """The growth regime a run ends in, from the first integral (``first_integral``: m e^{mu_QK} + n mu_QK
    grows like mu_OV^2, itself ~ log^2 t where mu_OV ~ log t). As mu_QK grows by d mu the two terms grow by
    m e^{mu_QK} d mu and n d mu, a ratio q = m e^{mu_QK} / n = alpha / (1 - alpha). q at the end of the run
    decides the regime: "n mu_QK" when q <= 1 / ``dominance`` (then mu_QK ~ log^2 t), "m e^mu_QK" when q >=
    ``dominance`` (then e^{mu_QK} ~ log^2 t), otherwise "mixed". In a clear regime, mu_QK ~ log^2 t and
    exp(mu_QK) ~ log^2 t are fitted over the points of the late phase (``fit_growth_laws``) where the same
    regime holds; their R^2 (NaN for "mixed", or with fewer than 3 such points) and the window in log t."""
    q_end = sim.alpha / (1 - sim.alpha) if sim.alpha < 1 else math.inf
    edge = 1 / (1 + dominance)  # q <= 1 / dominance  <=>  alpha <= 1 / (1 + dominance)
    regime = "n mu_QK" if q_end <= 1 / dominance else "m e^mu_QK" if q_end >= dominance else "mixed"
    out: dict[str, float | str] = {"q_end": float(q_end), "regime": regime}
    nan = {"r2 mu_QK ~ log^2 t": math.nan, "r2 exp(mu_QK) ~ log^2 t": math.nan, "log_t_from": math.nan,
           "log_t_to": math.nan}  # fmt: skip
    if regime == "mixed":
        return out | nan
    bounds = (0.0, edge) if regime == "n mu_QK" else (1 - edge, 1.0)
    try:
        fits = fit_growth_laws(sim, late=late, alpha_between=bounds).set_index("law")
    except ValueError:  # fewer than 3 points in the regime
        return out | nan
    return out | {
        "r2 mu_QK ~ log^2 t": float(fits.loc["mu_QK ~ log^2 t", "r2"]),
        "r2 exp(mu_QK) ~ log^2 t": float(fits.loc["exp(mu_QK) ~ log^2 t", "r2"]),
        "log_t_from": float(fits["log_t_from"].iloc[0]),
        "log_t_to": float(fits["log_t_to"].iloc[0]),
    }
