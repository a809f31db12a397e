"""The book's figure style and its layout check (what the chapters' smoke runs apply to every figure)."""

import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from explainopt import plots  # noqa: E402


@pytest.fixture(autouse=True)
def book_style():
    with matplotlib.rc_context():
        plots.use_book_style()
        yield
    plt.close("all")


def test_a_default_figure_fits_the_column_at_its_natural_size_with_fonts_of_9_pt():
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [1, 0, 1], label="a line")
    ax.set(xlabel="x", ylabel="y", title="a title")
    ax.legend(loc="upper center")
    assert plots.layout_problems(fig) == []
    fig.canvas.draw()
    width_px = (fig.get_tightbbox().width + 2 * plots.PAD_INCHES) * fig.dpi
    assert plots.COLUMN_PX * 0.9 < width_px <= plots.COLUMN_PX + 1


def test_overlapping_tick_labels_are_found():
    fig, ax = plt.subplots(figsize=plots.figsize(2.5, width=0.4))
    ax.bar([f"a long category name {k}" for k in range(8)], np.arange(8))
    problems = plots.layout_problems(fig)
    assert any("'a long category name 0' overlaps 'a long category name 1'" in p for p in problems)
    ax.tick_params(axis="x", labelrotation=90)
    assert not any("overlaps" in p for p in plots.layout_problems(fig))


def test_a_figure_wider_than_the_column_and_its_shrunken_fonts_are_found():
    fig, ax = plt.subplots(figsize=(14, 3))
    ax.plot([0, 1], [0, 1])
    problems = plots.layout_problems(fig)
    assert problems[0].startswith("the figure is") and "shown at" in problems[0]
    assert any(p.startswith("fonts of") for p in problems)  # 9 pt shown at about 48 % is about 4 pt


def test_small_fonts_are_found_in_a_figure_that_fits():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel("tiny", fontsize=6)
    assert plots.layout_problems(fig) == ["fonts of 6 pt as shown, below 9 pt"]


def test_a_legend_on_the_data_is_found_and_one_below_the_panels_is_not():
    fig, ax = plt.subplots()
    points = np.random.default_rng(0).uniform(size=(4, 2, 300))
    for k, (x, y) in enumerate(points):
        ax.scatter(x, y, s=4, label=f"series {k}")
    ax.legend(loc="center")
    assert any(p.startswith("the legend lies on") for p in plots.layout_problems(fig))
    ax.get_legend().remove()
    plots.legend_below(fig)
    assert plots.layout_problems(fig) == []


def test_a_legend_over_a_tick_label_is_found():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="a line")
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.06))
    assert "'0.0' overlaps the legend" in plots.layout_problems(fig)


def test_a_pyplot_figure_warns_when_it_is_drawn_with_a_problem():
    fig, ax = plt.subplots(figsize=(12, 3))
    ax.plot([0, 1], [0, 1])
    ax.set_title("too wide")
    with pytest.warns(plots.FigureLayoutWarning, match="figure 'too wide': the figure is"):
        fig.canvas.draw()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig.canvas.draw()  # checked once


def test_a_figure_drawn_half_made_is_checked_when_drawn_finished():
    fig, ax = plt.subplots(figsize=plots.figsize(2.5, width=0.4))
    ax.bar([f"a long category name {k}" for k in range(8)], np.arange(8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with plots.half_made(fig):
            fig.canvas.draw()  # e.g. seaborn measuring its labels before the caller turns them
    with pytest.warns(plots.FigureLayoutWarning, match="overlaps"):
        fig.canvas.draw()


def test_figsize_refuses_a_share_outside_the_column():
    with pytest.raises(ValueError, match="width=1.5"):
        plots.figsize(3, width=1.5)
