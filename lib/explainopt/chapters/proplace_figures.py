"""Chapter 4's figures: cost against robustness (Table 1's trade-off), the toy illustration and the interactive δ
slider.

The data they draw come from :mod:`explainopt.chapters.proplace`; every figure is sized to the book's text column
(:mod:`explainopt.plots`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from scipy.spatial import ConvexHull

from .. import plots
from ..encoders import interval_lower
from .proplace import Toy, ours


def tradeoff_figure(table: pd.DataFrame):
    """Figure 2: normalised l1 against 10-LOF per data set, marker area by vr, a black edge when every CE
    of the method is Delta-robust."""
    rows = ours(table)
    datasets = list(dict.fromkeys(rows["dataset"]))
    colours = dict(zip(dict.fromkeys(rows["method"]), plots.PALETTE * 2))
    fig, axes = plots.panels(len(datasets), height=2.8)
    for ax, ds in zip(axes, datasets):
        for r in rows[rows["dataset"] == ds].to_dict("records"):
            ax.scatter(r["l1"], r["lof"], s=20 + 2 * np.nan_to_num(r["vr"]), color=colours[r["method"]],
                       edgecolor="k" if r["vΔ"] == 100 else "none", label=r["method"], alpha=0.8)
        ax.set(title=ds, xlabel="normalised ℓ1 (↓)", ylabel="10-LOF (↓)")
    handles = {label: handle for ax in axes for handle, label in zip(*ax.get_legend_handles_labels())}
    fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncols=min(len(handles), 4))
    return fig


def plot_delta_slider(sweep: pd.DataFrame) -> go.Figure:
    """An interactive figure (plotly): per data set (one bar trace each) the share of each method's CEs
    that stay Δ-robust (Definition 7) when δ is multiplied by the slider's factor; each step restyles
    the bars' heights. At factor 1 the bars are Table 1's vΔ; at 0 they are the validity."""
    factors = sorted(sweep["factor"].unique())
    datasets = list(dict.fromkeys(sweep["dataset"]))
    methods = list(dict.fromkeys(sweep["method"]))

    def heights(f):
        g = sweep[sweep["factor"] == f].set_index(["dataset", "method"])["robust"]
        return [[float(g.get((ds, m), np.nan)) for m in methods] for ds in datasets]

    start = factors.index(1.0) if 1.0 in factors else 0
    fig = go.Figure([go.Bar(x=methods, y=y, name=ds, marker_color=plots.PALETTE[i % len(plots.PALETTE)])
                     for i, (ds, y) in enumerate(zip(datasets, heights(factors[start])))])
    steps = [dict(method="restyle", label=f"{f:g}", args=[{"y": heights(f)}, list(range(len(datasets)))])
             for f in factors]
    fig.update_layout(barmode="group", height=420, template="plotly_white",
                      title="Δ-robust counterfactuals (%) under shifts of factor × δ",
                      yaxis=dict(title="Δ-robust CEs (%)", range=[0, 105]), xaxis_title="method",
                      sliders=[dict(active=start, steps=steps, currentvalue=dict(prefix="factor on δ: "),
                                    pad=dict(t=40))])
    return fig


def toy_figure(toy: Toy):
    """Figure 1: the data, the network's boundary (solid) and the interval lower bound's (dashed), the
    plausible region, and the outer problem's solution at each iteration of Algorithm 1."""
    g = np.linspace(0, 1, 200)
    grid = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    fig, ax = plt.subplots(figsize=plots.figsize(3.8))
    ax.scatter(*toy.X.T, c=np.where(toy.y == 1, "0.55", "0.85"), s=8)
    for delta, style in ((0.0, "-"), (toy.delta, "--")):
        ax.contour(g, g, interval_lower(toy.model, grid, delta=delta).reshape(200, 200), levels=[0], colors="k",
                   linestyles=style, linewidths=1)
    V = toy.vertices
    ax.fill(*V[ConvexHull(V).vertices].T, alpha=0.2, color=plots.PALETTE[0])
    ax.scatter(*V[1:].T, color=plots.PALETTE[1], s=25, label="Δ-robust neighbours")
    ax.scatter(*toy.x0, color="k", s=40, label="factual")
    for i, (xp, _, _) in enumerate(toy.result.history, 1):
        ax.scatter(*xp, marker="x", color=plots.PALETTE[2], s=50)
        ax.annotate(str(i), xp, xytext=(4, 4), textcoords="offset points")
    if toy.result.x is not None:
        ax.scatter(*toy.result.x, marker="*", color=plots.PALETTE[3], s=120, label=f"PROPLACE ({toy.result.detail})")
    ax.set(xlim=(0, 1), ylim=(0, 1), aspect="equal")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1))
    return fig
