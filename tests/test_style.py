"""The figures' one visual language: every error bar and band is the 95 % interval the verdicts use."""

import ast
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from attnlab.runner.stats import mean_interval  # noqa: E402
from attnlab.runner.style import interval95  # noqa: E402

PAPERS = Path(__file__).resolve().parents[1] / "lib" / "attnlab" / "papers"


def test_interval95_is_the_verdicts_t_interval():
    values = [0.31, 0.42, 0.37, 0.29, 0.45]
    est = mean_interval(values)
    assert interval95(values) == pytest.approx((est.low, est.high))
    # wider than one standard deviation at n = 5 (t = 2.78 / sqrt(5) = 1.24 sd): not a sd bar renamed
    assert interval95(values)[1] - est.mean > np.std(values, ddof=1)


def test_interval95_one_value_collapses_and_non_finite_values_are_left_out():
    assert interval95([0.5]) == (0.5, 0.5)
    assert interval95([1.0, 2.0, math.nan]) == pytest.approx(interval95([1.0, 2.0]))
    assert all(math.isnan(x) for x in interval95([math.nan]))


def test_seaborn_draws_interval95():
    import matplotlib.pyplot as plt
    import seaborn as sns

    frame = pd.DataFrame({"x": [0] * 4, "y": [1.0, 2.0, 3.0, 6.0]})
    fig, ax = plt.subplots()  # its own axes: a figure another test left open is not drawn on
    sns.barplot(data=frame, x="x", y="y", errorbar=interval95, ax=ax)
    [bar] = [line for line in ax.lines if len(line.get_ydata()) == 2]
    assert sorted(bar.get_ydata()) == pytest.approx(interval95(frame["y"]))
    plt.close(fig)


@pytest.mark.parametrize("module", sorted(PAPERS.glob("*/plots.py")), ids=lambda p: p.parent.name)
def test_no_figure_draws_a_standard_deviation(module):
    """No plots module passes errorbar="sd" (or "se", or seaborn's bootstrap "ci") or draws a band from
    .std(): every bar and band is ``interval95``."""
    tree = ast.parse(module.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "errorbar" and isinstance(node.value, ast.Constant):
            assert node.value.value is None, f"{module.name}: errorbar={node.value.value!r}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "std":
            pytest.fail(f"{module.parent.name}/plots.py line {node.lineno}: a band or bar from .std()")
