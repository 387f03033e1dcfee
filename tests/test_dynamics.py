"""The reduced two-scalar dynamics (Fig. 4): RK4 against known solutions, the authors' printed values, and the
growth-law fits on curves whose laws are known."""

import math

import numpy as np
import pytest

from attnlab.papers.qk_speed.dynamics import (
    ReducedModel,
    Simulation,
    Trajectory,
    first_integral,
    fit_growth_laws,
    linear_fit,
    rk4_step,
    simulate,
    simulate_adaptive,
)


def test_rk4_is_fourth_order_on_the_harmonic_oscillator():
    def f(y0, y1):
        return y1, -y0

    errors = []
    for h in (0.1, 0.05):
        y = (1.0, 0.0)
        for _ in range(round(2.0 / h)):
            y = rk4_step(f, y, h)
        errors.append(math.hypot(y[0] - math.cos(2.0), y[1] + math.sin(2.0)))
    assert errors[0] < 1e-5
    assert 14 < errors[0] / errors[1] < 18  # halving h divides the error by ~2^4


def test_reduced_model_formulas():
    c = ReducedModel(eta_ov=2.0, eta_qk=3.0)
    q, mu = 1.3, 7.0
    a = 5 * math.exp(q) / (5 * math.exp(q) + 50)
    assert c.alpha(q) == pytest.approx(a, rel=1e-14)
    assert c.one_minus_alpha(q) == pytest.approx(1 - a, rel=1e-13)
    assert c.loss(mu, q) == pytest.approx(math.log(1 + 19 * math.exp(-a * mu)), rel=1e-13)
    d_ov, d_qk = c.rhs(mu, q)
    denom = math.exp(a * mu) + 19
    assert d_ov == pytest.approx(2.0 * a / (50 * denom), rel=1e-13)
    assert d_qk == pytest.approx(3.0 * 19 * a * (1 - a) * mu / (20 * 50**2 * denom), rel=1e-12)
    # no overflow far out
    assert c.alpha(600.0) == 1.0 and 0 < c.one_minus_alpha(600.0) < 1e-250
    assert c.loss(1e6, 50.0) == 0.0 and all(math.isfinite(v) for v in c.rhs(1e6, 800.0))


def test_rk4_matches_the_closed_form_with_attention_frozen():
    """eta_QK = 0 freezes alpha = a; then (e^{a mu} - 1) / a + (M - 1) mu = eta_OV a t / b exactly."""
    c = ReducedModel(eta_ov=1.0, eta_qk=0.0)
    a = c.alpha(0.0)
    y, h = (0.0, 0.0), 10.0
    for step in range(1, 20001):
        y = rk4_step(c.rhs, y, h)
        if step % 5000 == 0:
            mu = y[0]
            lhs = (math.exp(a * mu) - 1) / a + 19 * mu
            assert lhs == pytest.approx(a * step * h / 50, rel=1e-9)
    assert y[1] == 0.0


def test_simulation_conserves_the_first_integral():
    sim = simulate(3.0, loss_stop=1e-2)
    invariant = first_integral(sim)
    np.testing.assert_allclose(invariant, 5.0, rtol=1e-9)  # m e^{0} + n * 0 - 0 at the origin


def test_step_10_agrees_with_a_ten_times_finer_step():
    coarse = simulate(10.0, loss_stop=1e-2)
    fine = simulate(10.0, loss_stop=1e-2, dtau=1.0, record_every=10)
    n = min(len(coarse.trajectory.step), len(fine.trajectory.step)) - 1  # before either stops
    np.testing.assert_array_equal(coarse.trajectory.tau[:n], fine.trajectory.tau[:n])
    np.testing.assert_allclose(coarse.trajectory.mu_ov[:n], fine.trajectory.mu_ov[:n], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(coarse.trajectory.mu_qk[:n], fine.trajectory.mu_qk[:n], rtol=1e-7, atol=1e-9)


def test_final_values_are_the_last_state_and_the_first_below_the_threshold():
    sim = simulate(10.0, loss_stop=1e-3)
    traj = sim.trajectory
    assert sim.reached and sim.loss <= 1e-3 < traj.loss[-2]
    assert (sim.mu_ov, sim.mu_qk, sim.alpha, sim.loss) == (
        traj.mu_ov[-1], traj.mu_qk[-1], traj.alpha[-1], traj.loss[-1]
    )  # fmt: skip
    assert sim.steps == traj.step[-1] == len(traj.step) - 1
    assert sim.tau == sim.steps * 10.0 and sim.t == sim.tau / 1.0  # min(eta) = eta_OV = 1
    assert sim.alpha == pytest.approx(5 * math.exp(sim.mu_qk) / (5 * math.exp(sim.mu_qk) + 50))
    assert sim.loss == pytest.approx(math.log1p(19 * math.exp(-sim.alpha * sim.mu_ov)))
    slow = simulate(0.5, loss_stop=1e-3)
    assert slow.t == pytest.approx(slow.tau / 0.5)  # min(eta) = eta_QK = 0.5: the clock runs on tau = 0.5 t
    assert np.all(np.diff(traj.loss) < 0) and np.all(np.diff(traj.mu_qk) > 0)
    assert sim.summary()["mu_ov"] == sim.mu_ov


def test_reproduces_the_authors_printed_final_values():
    """Fig. 4 notebook: eta_QK/eta_OV=0.01: tau_end=2.55e+06, mu_OV 81.669, mu_QK 0.559, alpha 0.149."""
    sim = simulate(0.01, record_every=1000)
    assert sim.reached
    assert sim.tau == pytest.approx(2.55e6, rel=2e-3)
    assert round(sim.mu_ov, 3) == 81.669
    assert round(sim.mu_qk, 3) == 0.559
    assert round(sim.alpha, 3) == 0.149


def test_max_steps_guard_and_thinning():
    sim = simulate(1.0, max_steps=100, record_every=30)
    assert not sim.reached and sim.steps == 100 and sim.loss > 1e-4
    assert sim.trajectory.step.tolist() == [0, 30, 60, 90, 100]
    full = simulate(1.0, max_steps=100)
    assert full.mu_ov == sim.mu_ov and full.mu_qk == sim.mu_qk
    with pytest.raises(ValueError):
        simulate(0.0)


def fake_simulation(log_t: np.ndarray, mu_ov: np.ndarray, mu_qk: np.ndarray) -> Simulation:
    t = np.exp(log_t)
    n = len(t)
    model = ReducedModel()
    traj = Trajectory(
        step=np.arange(n), tau=t, t=t, mu_ov=mu_ov, mu_qk=mu_qk,
        alpha=np.array([model.alpha(q) for q in mu_qk]), loss=np.linspace(1, 1e-4, n),
    )  # fmt: skip
    return Simulation(
        r=1.0, model=model, mu_ov=mu_ov[-1], mu_qk=mu_qk[-1], alpha=traj.alpha[-1], loss=1e-4, tau=t[-1],
        t=t[-1], steps=n - 1, reached=True, loss_stop=1e-4, dtau=10.0, trajectory=traj,
    )  # fmt: skip


def test_growth_law_fits_recover_known_laws():
    log_t = np.linspace(1.0, 20.0, 3000)
    sim = fake_simulation(log_t, mu_ov=2.0 * log_t + 1.0, mu_qk=0.01 * log_t**2 + 0.5)
    fits = fit_growth_laws(sim, late=0.5).set_index("law")
    assert fits.loc["mu_OV ~ log t", "slope"] == pytest.approx(2.0)
    assert fits.loc["mu_OV ~ log t", "intercept"] == pytest.approx(1.0)
    assert fits.loc["mu_OV ~ log t", "r2"] == pytest.approx(1.0)
    assert fits.loc["mu_QK ~ log^2 t", "slope"] == pytest.approx(0.01)
    assert fits.loc["mu_QK ~ log^2 t", "r2"] == pytest.approx(1.0)
    assert fits.loc["exp(mu_QK) ~ log^2 t", "r2"] < 0.999
    assert fits.loc["mu_OV ~ log t", "log_t_from"] == pytest.approx(10.0, abs=0.01)  # half of log t = 0..20
    # e^{mu_QK} ~ log^2 t instead
    other = fake_simulation(log_t, mu_ov=log_t, mu_qk=np.log(3.0 * log_t**2 + 1.0))
    fits = fit_growth_laws(other).set_index("law")
    assert fits.loc["exp(mu_QK) ~ log^2 t", "slope"] == pytest.approx(3.0)
    assert fits.loc["exp(mu_QK) ~ log^2 t", "r2"] == pytest.approx(1.0)
    assert fits.loc["mu_QK ~ log^2 t", "r2"] < 0.99
    assert fits.loc["exp(mu_QK) ~ mu_OV^2", "exponent"] == pytest.approx(2.0, abs=0.02)


def test_linear_fit():
    slope, intercept, r2 = linear_fit(np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 3.0, 5.0, 7.0]))
    assert (slope, intercept, r2) == pytest.approx((2.0, 1.0, 1.0))
    _, _, r2 = linear_fit(np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 0.0]))
    assert r2 == pytest.approx(0.0)


@pytest.mark.parametrize("r", [0.01, 1.0, 100.0])
def test_the_adaptive_solve_agrees_with_the_fixed_step_one(r):
    """The figure's path (adaptive, stopping exactly at the threshold) against the authors' RK4 (step 10,
    stopping at the end of the step that crosses it): the same end state to the accuracy of that step."""
    fixed = simulate(r, record_every=1000)
    adaptive = simulate_adaptive(r)
    assert adaptive.reached and fixed.reached
    assert adaptive.loss == pytest.approx(1e-4, rel=1e-6)  # ends on the threshold, not past it
    for name in ("mu_ov", "mu_qk", "alpha"):
        assert getattr(adaptive, name) == pytest.approx(getattr(fixed, name), rel=1e-5), name
    assert adaptive.tau == pytest.approx(fixed.tau, abs=10.0)  # within one fixed step
    assert adaptive.steps < 500  # the point of it: tens of steps, not a million


def test_the_adaptive_trajectory_conserves_the_first_integral_and_feeds_the_fits():
    sim = simulate_adaptive(3.0, loss_stop=1e-2)
    np.testing.assert_allclose(first_integral(sim), 5.0, rtol=1e-7)
    traj = sim.trajectory
    assert traj.tau[0] == 0.0 and sim.tau == traj.tau[-1] and np.all(np.diff(traj.tau) > 0)
    assert np.all(np.diff(traj.mu_qk) > 0) and math.isnan(sim.dtau)
    fits = fit_growth_laws(sim).set_index("law")
    assert fits.loc["mu_OV ~ log t", "r2"] > 0.5


def test_the_adaptive_solve_reports_a_run_that_does_not_reach_the_threshold():
    sim = simulate_adaptive(1.0, max_tau=1e3)
    assert not sim.reached and sim.loss > 1e-4 and sim.tau == pytest.approx(1e3)
    with pytest.raises(ValueError):
        simulate_adaptive(0.0)


def test_the_growth_fit_window_does_not_depend_on_the_sampling():
    """The late phase is measured in log t from t = 1: the adaptive solve and the fixed-step one thinned to
    every 50th step give the same fits (a window measured from the first recorded point would not)."""
    adaptive = fit_growth_laws(simulate_adaptive(1.0)).set_index("law")
    fixed = fit_growth_laws(simulate(1.0, record_every=50)).set_index("law")
    np.testing.assert_allclose(adaptive["r2"], fixed["r2"], atol=2e-3)
    np.testing.assert_allclose(adaptive["log_t_from"], fixed["log_t_from"], rtol=1e-3)


def test_stopping_values_take_the_first_point_below_each_threshold():
    from attnlab.papers.qk_speed.dynamics import simulate_adaptive, stopping_values

    sim = simulate_adaptive(1.0)
    curves = stopping_values(sim, np.array([1.0, 1e-2, 1e-4, 1e-9]))
    traj = sim.trajectory
    i = int(np.flatnonzero(traj.loss <= 1e-2)[0])
    assert curves.loc[1, "mu_ov"] == traj.mu_ov[i] and curves.loc[1, "alpha"] == traj.alpha[i]
    assert curves.loc[0, "mu_ov"] <= curves.loc[1, "mu_ov"]  # a lower threshold stops later
    assert np.isnan(curves.loc[3, "mu_qk"])  # never reached
