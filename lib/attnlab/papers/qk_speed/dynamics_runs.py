"""Fig. 4 of "Faster query-key learning sharpens attention" (arXiv 2608.06776): the reduced two-scalar
dynamics (``dynamics``) solved for every r = eta_QK / eta_OV of the preset, into the results cache, and the
tables the notebook reads off the solutions: the final values (beside the authors' printed end states), the
growth-law fits and which law fits better, and the authors' stopping-threshold curves. The regime of the
first integral per r carries a verdict, so it is in ``claims`` (``claims.growth_regimes``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from attnlab.papers.qk_speed import authors
from attnlab.papers.qk_speed.counted_cache import CountedCache
from attnlab.papers.qk_speed.dynamics import (
    ReducedModel,
    Simulation,
    Trajectory,
    fit_growth_laws,
    simulate,
    simulate_adaptive,
    stopping_values,
)
from attnlab.papers.qk_speed.presets import DynamicsSetup

#: What keys the solutions: the import closure of this module, which computes them (``attnlab.codekeys``).
CODE = (__name__,)


def fig4(d: DynamicsSetup, cache: CountedCache) -> dict[float, Simulation]:
    """The reduced dynamics for every r of ``d`` (cached: the trajectories and final values)."""
    sims = {}
    for r in d.rs:
        config = dict(r=r, loss_stop=d.loss_stop, solver=d.solver)
        if d.solver == "rk4":
            config |= dict(dtau=d.dtau, record_every=d.record_every)

        def compute(r: float = r) -> dict:
            if d.solver == "rk4":  # the authors' fixed-step solve, for the exact comparison
                s = simulate(r, loss_stop=d.loss_stop, dtau=d.dtau, record_every=d.record_every)
            else:
                s = simulate_adaptive(r, loss_stop=d.loss_stop)
            traj = {k: torch.tensor(getattr(s.trajectory, k)) for k in Trajectory.__dataclass_fields__}
            final = {k: getattr(s, k) for k in ("mu_ov", "mu_qk", "alpha", "loss", "tau", "t")}
            return {"trajectory": traj, "final": final, "steps": s.steps, "reached": s.reached}

        res = cache.result("reduced_dynamics", config, compute, code=CODE)
        traj = Trajectory(**{k: v.numpy() for k, v in res["trajectory"].items()})
        sims[r] = Simulation(
            r=r,
            model=ReducedModel(eta_ov=1.0, eta_qk=r),
            **res["final"],
            steps=res["steps"],
            reached=res["reached"],
            loss_stop=d.loss_stop,
            dtau=d.dtau if d.solver == "rk4" else float("nan"),
            trajectory=traj,
        )
    return sims


def final_values(sims: dict[float, Simulation]) -> pd.DataFrame:
    """Every run's end state (``Simulation.summary``), one row per r."""
    return pd.DataFrame([s.summary() for s in sims.values()]).set_index("r")


def final_values_with_authors(sims: dict[float, Simulation]) -> pd.DataFrame:
    """``final_values`` with the authors' printed end state beside ours (``authors.FIG4_END_STATES``: their
    notebook's output, reference only)."""
    final = final_values(sims)[["mu_ov", "mu_qk", "alpha", "loss", "tau"]]
    return final.assign(**{"authors' notebook": pd.Series(authors.fig4_column(final.index))})


def stopping_curves(sims: dict[float, Simulation]) -> pd.DataFrame:
    """The authors' stopping-threshold curves for every r (``dynamics.stopping_values`` at their 50
    thresholds, ``authors.STOP_THRESHOLDS``), one row per (r, threshold)."""
    t = authors.STOP_THRESHOLDS
    thresholds = np.logspace(np.log10(t["high"]), np.log10(t["low"]), t["count"])
    frames = [stopping_values(s, thresholds).assign(r=r) for r, s in sims.items()]
    return pd.concat(frames, ignore_index=True)


def growth_fits(sims: dict[float, Simulation], late: float = 0.5) -> pd.DataFrame:
    """``fit_growth_laws`` over the last half (in log t) of every run, one row per (r, law)."""
    frames = [fit_growth_laws(s, late=late).assign(r=r) for r, s in sims.items()]
    return pd.concat(frames, ignore_index=True)


def supported_law(fits: pd.DataFrame) -> pd.DataFrame:
    """Per r: R^2 of mu_QK ~ log^2 t and of exp(mu_QK) ~ log^2 t, and which fits better."""
    wide = fits.pivot_table(index="r", columns="law", values="r2")
    out = pd.DataFrame(
        {
            "r2 mu_OV ~ log t": wide["mu_OV ~ log t"],
            "r2 mu_QK ~ log^2 t": wide["mu_QK ~ log^2 t"],
            "r2 exp(mu_QK) ~ log^2 t": wide["exp(mu_QK) ~ log^2 t"],
        }
    )
    out["better"] = np.where(
        out["r2 exp(mu_QK) ~ log^2 t"] > out["r2 mu_QK ~ log^2 t"],
        "exp(mu_QK) ~ log^2 t",
        "mu_QK ~ log^2 t",
    )
    return out
