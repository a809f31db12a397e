"""One figure style for the whole book, sized to its text column: colour-blind-safe palette, fonts of at least
9 pt as the reader sees them, and a check (:func:`layout_problems`) that every figure fits the column, with no
tick or legend text on top of other text and no legend on the data.

The book's theme (sphinx-book-theme 1.x) gives the text of a page a column of :data:`COLUMN_PX` CSS pixels
in a 1280 px window with both sidebars shown. A figure is drawn at :data:`DPI` = 96, one pixel per CSS pixel,
and at most :data:`COLUMN_WIDTH` inches wide, so the page shows it at its natural size: a point on the figure
is a point on the screen. :func:`use_book_style` also asks pyplot to check every figure it draws
(:func:`watch_layout`); a figure with a problem warns (:class:`FigureLayoutWarning`), and the chapters' smoke
runs fail on that warning.
"""

from __future__ import annotations

import contextlib
import warnings
from itertools import combinations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from IPython.display import display
from matplotlib.collections import Collection
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.text import Text

#: Okabe-Ito colour-blind-safe palette.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
SEQUENTIAL = "viridis"
#: The text column of a page in CSS pixels (sphinx-book-theme 1.x, measured in Chromium at 1280 px).
COLUMN_PX = 676
#: Figure pixels per inch: 96, the CSS pixels of an inch, so that a figure's points are the reader's points.
DPI = 96
#: The margin ``savefig.bbox = "tight"`` leaves around a figure, in inches.
PAD_INCHES = 0.05
#: The widest a figure is drawn, in inches: the column at :data:`DPI`, less the margins.
COLUMN_WIDTH = COLUMN_PX / DPI - 2 * PAD_INCHES
#: The smallest font, in points as shown in the column.
MIN_FONT_PT = 9.0
#: A figure shown below this share of its natural size is too small to read.
MIN_SCALE = 0.6
#: Bounding boxes overlapping by less than this many pixels (anti-aliasing, descenders) do not count.
OVERLAP_TOLERANCE_PX = 1.0
#: The overlaps a problem report names one by one.
MAX_LISTED = 5


class FigureLayoutWarning(UserWarning):
    """A figure does not fit the text column, has text on top of other text, or a legend on its data."""


def figsize(height: float, *, width: float = 1.0) -> tuple[float, float]:
    """A figure size in inches: `width` as a share of the text column, `height` in inches."""
    if not 0 < width <= 1:
        raise ValueError(f"width={width!r}: a share of the text column, in (0, 1]")
    if height <= 0:
        raise ValueError(f"height={height!r}: inches, above 0")
    return COLUMN_WIDTH * width, height


def use_book_style() -> None:
    """Apply the book's style to matplotlib and seaborn (call once per notebook): figures as wide as the text
    column at 96 dpi, fonts of 9-11 pt, constrained layout, and every pyplot figure checked when drawn."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    mpl.rcParams.update({
        "figure.figsize": figsize(3.6),
        "figure.dpi": DPI,
        "savefig.dpi": DPI,
        "savefig.bbox": "tight",
        "savefig.pad_inches": PAD_INCHES,
        "figure.constrained_layout.use": True,
        "font.size": 10,
        "axes.titlesize": 10,
        "axes.titleweight": "bold",
        "axes.labelsize": 10,
        "xtick.labelsize": 9,
        "ytick.labelsize": 9,
        "legend.fontsize": 9,
        "legend.title_fontsize": 9,
        "figure.titlesize": 11,
        "legend.frameon": False,
        "figure.hooks": [f"{__name__}:watch_layout"],
    })


def heatmap(data, *, ax=None, title: str = "", fmt: str = ".2f", vmin=0.0, vmax=1.0, cmap=SEQUENTIAL, **kwargs):
    """Annotated heatmap of a DataFrame (e.g. an agreement-rate matrix), annotations at 9 pt."""
    ax = ax or plt.gca()
    sns.heatmap(data, ax=ax, annot=True, fmt=fmt, vmin=vmin, vmax=vmax, cmap=cmap, square=True,
                cbar=kwargs.pop("cbar", True), annot_kws={"fontsize": MIN_FONT_PT}, **kwargs)
    ax.set_title(title)
    return ax


def panels(n: int, *, height: float, ncols: int = 2, **kwargs):
    """A figure as wide as the text column with `n` panels, at most `ncols` a row, each row `height` inches
    high; returns the figure and its `n` axes as a list (the spare cells of the last row are removed).
    `kwargs` go to :func:`matplotlib.pyplot.subplots` (``sharey``, ``gridspec_kw``, ...)."""
    if n < 1:
        raise ValueError(f"n={n!r}: a figure needs at least one panel")
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=figsize(height * nrows), squeeze=False, **kwargs)
    axes = list(axes.ravel())
    for spare in axes[n:]:
        spare.remove()
    return fig, axes[:n]


def legend_below(fig, *, ncols: int | None = None, **kwargs):
    """One legend for the whole figure, below its panels (off the data), from the first axes' handles."""
    handles, labels = fig.axes[0].get_legend_handles_labels()
    return fig.legend(handles, labels, loc="outside lower center", ncols=ncols or min(len(labels), 4), **kwargs)


def interactive(figure) -> None:
    """Show a plotly figure so that it works both in Jupyter (plotly's own renderer) and in the built
    book without a kernel or network: the HTML relies on the plotly.js that every page of the book loads
    from ``_static`` (:func:`explainopt.book.setup`), so nothing is fetched at view time."""
    html = figure.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False, "responsive": True})
    display({"application/vnd.plotly.v1+json": figure.to_plotly_json(), "text/html": html}, raw=True)


# --------------------------------------------------------------------------- the layout check

def _undrawn_tick_labels(fig) -> set[int]:
    """The ids of the tick labels matplotlib keeps but does not draw: those of ticks outside the view."""
    undrawn = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            slack = 1e-9 * max(1.0, abs(high - low))
            for locs, ticks in ((axis.get_majorticklocs(), axis.get_major_ticks()),
                                (axis.get_minorticklocs(), axis.get_minor_ticks())):
                for k, tick in enumerate(ticks):
                    if k >= len(locs) or not low - slack <= locs[k] <= high + slack:
                        undrawn |= {id(tick.label1), id(tick.label2)}
    return undrawn


def _texts(fig) -> list[Text]:
    """The figure's drawn, non-empty texts outside legends (tick labels, axis labels, titles, annotations)."""
    hidden = {id(t) for legend in _legends(fig) for t in legend.findobj(Text)} | _undrawn_tick_labels(fig)
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and id(t) not in hidden
            and (t.axes is None or t.axes.get_visible())]


def _legends(fig) -> list[Legend]:
    return [legend for legend in fig.findobj(Legend) if legend.get_visible()]


def _overlap(a, b) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > OVERLAP_TOLERANCE_PX
            and min(a.y1, b.y1) - max(a.y0, b.y0) > OVERLAP_TOLERANCE_PX)


def _name(artist) -> str:
    if isinstance(artist, Legend):
        return "the legend"
    return repr(artist.get_text())


def _data_points(ax) -> np.ndarray:
    """The display coordinates of an axes' data: line vertices, scatter offsets, bar corners."""
    points = [np.empty((0, 2))]
    for line in ax.get_lines():
        if line.get_visible() and isinstance(line, Line2D):
            xy = line.get_xydata()
            points.append(line.get_transform().transform(xy[np.isfinite(xy).all(axis=1)]))
    for collection in ax.collections:
        offsets = collection.get_offsets() if isinstance(collection, Collection) else []
        if collection.get_visible() and len(offsets) and collection.get_offset_transform() is not None:
            xy = np.asarray(offsets, dtype=float)
            points.append(collection.get_offset_transform().transform(xy[np.isfinite(xy).all(axis=1)]))
    for patch in ax.patches:
        if patch.get_visible() and isinstance(patch, Rectangle):
            box = patch.get_window_extent()
            points.append(np.array([[box.x0, box.y1], [box.x1, box.y1], [(box.x0 + box.x1) / 2, box.y1]]))
    return np.concatenate(points)


def layout_problems(fig, renderer=None) -> list[str]:
    """What keeps `fig` from reading well in the text column, one sentence each (empty: none):

    - it is wider than the column once cropped (``savefig.bbox = "tight"``), or it would be shown below
      :data:`MIN_SCALE` of its natural size;
    - a text is smaller than :data:`MIN_FONT_PT` as shown;
    - two texts overlap (tick labels of one axis, or of neighbouring panels, a label and a title, ...), or a
      legend overlaps a text;
    - a legend lies on the data of its axes (a line vertex, a marker or the top of a bar under it).

    Measured with matplotlib's bounding boxes (``get_window_extent``) of the figure as drawn by `renderer`
    (default: the canvas's, after drawing the figure)."""
    if renderer is None:
        fig.draw_without_rendering()
        renderer = fig.canvas.get_renderer()
    problems = []
    width_px = (fig.get_tightbbox(renderer).width + 2 * mpl.rcParams["savefig.pad_inches"]) * fig.dpi
    shown = min(1.0, COLUMN_PX / width_px)
    to_reader = shown * fig.dpi / DPI  # a figure point in the reader's points
    if width_px > COLUMN_PX + OVERLAP_TOLERANCE_PX:
        problems.append(f"the figure is {width_px:.0f} px wide, wider than the {COLUMN_PX} px text column"
                        + (f" (shown at {shown:.0%} of its size)" if shown < MIN_SCALE else ""))
    texts, legends = _texts(fig), _legends(fig)
    sizes = [t.get_fontsize() * to_reader for t in [*texts, *(t for legend in legends for t in legend.get_texts())]]
    small = sorted({round(size, 1) for size in sizes if size < MIN_FONT_PT - 0.05})
    if small:
        problems.append(f"fonts of {', '.join(f'{s:g}' for s in small)} pt as shown, below {MIN_FONT_PT:g} pt")
    boxes = [(artist, artist.get_window_extent(renderer)) for artist in [*texts, *legends]]
    overlaps = [f"{_name(a)} overlaps {_name(b)}" for (a, a_box), (b, b_box) in combinations(boxes, 2)
                if _overlap(a_box, b_box)]
    problems += overlaps[:MAX_LISTED] + ([f"{len(overlaps) - MAX_LISTED} more overlaps"]
                                         if len(overlaps) > MAX_LISTED else [])
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in [legend.axes] if legend.axes is not None else fig.axes:
            points = _data_points(ax)
            inside = ((points[:, 0] > box.x0) & (points[:, 0] < box.x1)
                      & (points[:, 1] > box.y0) & (points[:, 1] < box.y1))
            if inside.any():
                problems.append(f"the legend lies on {int(inside.sum())} data point(s) of "
                                f"{ax.get_title() or 'its axes'!r}")
    return problems


def check_layout(fig, renderer=None) -> None:
    """Warn (:class:`FigureLayoutWarning`) with every :func:`layout_problems` of `fig`, naming its title."""
    problems = layout_problems(fig, renderer)
    if problems:
        title = fig.get_suptitle() or next(
            (ax.get_title() for ax in fig.axes if ax.get_title()), "untitled")
        warnings.warn(FigureLayoutWarning(f"figure {title!r}: " + "; ".join(problems)), stacklevel=2)


#: The figures drawn half made now (:func:`half_made`); None stands for every figure.
_HALF_MADE: list = []


@contextlib.contextmanager
def half_made(fig=None):
    """Draws of `fig` (default: of every figure) inside this block are not checked by :func:`watch_layout`:
    the figure is half made (seaborn draws a heatmap to see whether its tick labels overlap, and a
    FacetGrid to measure its legend, before the caller has placed them)."""
    _HALF_MADE.append(fig)
    try:
        yield fig
    finally:
        _HALF_MADE.pop()


def watch_layout(fig) -> None:
    """A pyplot figure hook (``figure.hooks``, set by :func:`use_book_style`): the first time `fig` is drawn
    (shown in a notebook, saved), :func:`check_layout` checks it."""
    def on_draw(event):
        if None in _HALF_MADE or fig in _HALF_MADE:
            return
        fig.canvas.mpl_disconnect(connection)
        check_layout(fig, event.renderer)
    connection = fig.canvas.mpl_connect("draw_event", on_draw)
