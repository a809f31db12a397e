"""One figure style for the whole book: colour-blind-safe palette, labelled axes, consistent sizes."""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import seaborn as sns
from IPython.display import display

#: Okabe-Ito colour-blind-safe palette.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
SEQUENTIAL = "viridis"


def use_book_style() -> None:
    """Apply the book's style to matplotlib and seaborn (call once per notebook)."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    mpl.rcParams.update({
        "figure.figsize": (6.4, 4.0),
        "figure.dpi": 110,
        "savefig.dpi": 150,
        "savefig.bbox": "tight",
        "axes.titlesize": "medium",
        "axes.titleweight": "bold",
        "legend.frameon": False,
    })


def heatmap(data, *, ax=None, title: str = "", fmt: str = ".2f", vmin=0.0, vmax=1.0, cmap=SEQUENTIAL, **kwargs):
    """Annotated heatmap of a DataFrame (e.g. an agreement-rate matrix)."""
    ax = ax or plt.gca()
    sns.heatmap(data, ax=ax, annot=True, fmt=fmt, vmin=vmin, vmax=vmax, cmap=cmap, square=True,
                cbar=kwargs.pop("cbar", True), **kwargs)
    ax.set_title(title)
    return ax


def interactive(figure) -> None:
    """Show a plotly figure so that it works both in Jupyter (plotly's own renderer) and in the built
    book without a kernel or network: the HTML relies on the plotly.js that every page of the book loads
    from ``_static`` (:func:`explainopt.book.setup`), so nothing is fetched at view time."""
    html = figure.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False, "responsive": True})
    display({"application/vnd.plotly.v1+json": figure.to_plotly_json(), "text/html": html}, raw=True)
