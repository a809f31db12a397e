"""Chapter 1's figures: agreement heatmaps (Figures 1 and 3), the explanations of Figure 2 and the interactive budget
slider.

The data they draw come from :mod:`explainopt.chapters.optimizing_explanations`; every figure is sized to the
book's text column (:mod:`explainopt.plots`)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .. import attributions as A
from ..plots import PALETTE, figsize, heatmap, legend_below
from .optimizing_explanations import ETA_FRACTION, METRIC_LABELS, ExplanationResult, agreement_heatmap_data, pretty


def plot_agreement_heatmaps(table: pd.DataFrame, dimensions: Sequence[int] | None = None, *,
                            column: str = "all three", pointwise: bool = False, title: str = ""):
    """One annotated heatmap (functions × u) per dimension D >= 2, as in Figures 1 and 3 of the paper;
    None when the table has no such rows (dimensions: default every D >= 2 in the table)."""
    present = sorted(d for d in table["D"].unique() if d > 1) if len(table) else []
    data = {d: agreement_heatmap_data(table, d, column=column, pointwise=pointwise)
            for d in (present if dimensions is None else dimensions) if d in present}
    data = {d: frame for d, frame in data.items() if frame.size}
    if not data:
        return None
    dimensions, widths = list(data), [frame.shape[1] for frame in data.values()]
    height = 0.45 * max(frame.shape[0] for frame in data.values()) + 1.6
    fig, axes = plt.subplots(1, len(dimensions), figsize=figsize(height), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    for k, (ax, d) in enumerate(zip(axes[0], dimensions)):
        heatmap(data[d], ax=ax, title=f"D = {d}", cbar=False, yticklabels=k == 0)
        ax.set_xlabel("radius u")
        ax.set_ylabel("function" if k == 0 else "")
    fig.colorbar(axes[0][-1].collections[0], ax=axes[0].tolist(), fraction=0.03, pad=0.02, label="agreement rate")
    if title:
        fig.suptitle(title)
    return fig


def plot_explanations_1d(results: Sequence[ExplanationResult], *, ax=None):
    """E_n against x for D = 1 explanations next to ∇f (Figure 2 of the paper)."""
    results = list(results)
    if not results or any(r.dimension != 1 for r in results):
        raise ValueError("plot_explanations_1d needs D = 1 results")
    ax = ax or plt.gca()
    first = results[0]
    ax.plot(first.X[:, 0], first.gradients[:, 0], color="black", lw=1.5, label="∇f (gradient)")
    for colour, r in zip(PALETTE, results):
        if r.has_solution:
            ax.plot(r.X[:, 0], r.explanations[:, 0], "o-", ms=3, lw=1, color=colour, label=METRIC_LABELS[r.metric])
    ax.set_xlabel("x")
    ax.set_ylabel("explanation E(x)")
    return ax


def plot_figure2(results: Sequence[ExplanationResult], *, metrics: Sequence[str] = A.METRICS):
    """Figure 2 (ours): the explanations under the global constraint (left) and the pointwise one (right),
    one panel per variant that ran; None without results."""
    results = [r for r in results if r.metric in metrics]
    variants = [p for p in (False, True) if any(r.pointwise == p for r in results)]
    if not variants:
        return None
    fig, axes = plt.subplots(1, len(variants), figsize=figsize(3.6), sharey=True, squeeze=False)
    for ax, pointwise in zip(axes[0], variants):
        plot_explanations_1d([r for r in results if r.pointwise == pointwise], ax=ax)
        ax.set_title("pointwise constraint" if pointwise else "global constraint (cf. Figure 2)")
    legend_below(fig)
    return fig


def plot_eta_slider(sweep: Sequence[ExplanationResult]) -> go.Figure:
    """An interactive figure (plotly) of a D = 1 :func:`eta_sweep`: ∇f (black) and each metric's optimal
    explanation against x, with a slider over the budget η / L_faithful^max; each step restyles the
    explanation traces and states every metric's L_robust and L_faithful / η in the title."""
    solved = [r for r in sweep if r.has_solution]
    if not solved or any(r.dimension != 1 for r in solved):
        raise ValueError("plot_eta_slider needs solved D = 1 results of eta_sweep")
    metrics = list(dict.fromkeys(r.metric for r in solved))
    fractions = sorted({round(r.eta / r.faithful_max, 6) for r in solved})
    by_key = {(round(r.eta / r.faithful_max, 6), r.metric): r for r in solved}
    x = solved[0].X[:, 0]
    fig = go.Figure(go.Scatter(x=x, y=solved[0].gradients[:, 0], mode="lines", name="∇f (gradient)",
                               line=dict(color="black", width=3)))
    start = min(range(len(fractions)), key=lambda k: abs(fractions[k] - ETA_FRACTION))

    def curve(q, m):
        r = by_key.get((q, m))
        return (r.explanations[:, 0] if r is not None else np.full(len(x), np.nan)).tolist()

    def title(q):
        parts = [f"{METRIC_LABELS[m]} {by_key[(q, m)].robustness:.3g}" for m in metrics if (q, m) in by_key]
        ratio = max(abs(by_key[(q, m)].faithfulness_ratio - 1) for m in metrics if (q, m) in by_key)
        return (f"η = {q:g} · L_faithful^max (max |L_faithful/η − 1| = {ratio:.0e})<br>"
                "L_robust: " + ", ".join(parts))

    for colour, m in zip(PALETTE, metrics):
        fig.add_trace(go.Scatter(x=x, y=curve(fractions[start], m), mode="lines+markers", name=METRIC_LABELS[m],
                                 marker=dict(size=4), line=dict(color=colour, width=1.5)))
    traces = list(range(1, len(metrics) + 1))
    steps = [dict(method="update", label=f"{q:g}",
                  args=[{"y": [curve(q, m) for m in metrics]}, {"title.text": title(q)}, traces])
             for q in fractions]
    r0 = solved[0]
    fig.update_layout(title=dict(text=title(fractions[start]), font=dict(size=13)), height=480, margin=dict(t=90),
                      template="plotly_white", xaxis_title="x", yaxis_title=f"explanation E(x) ({pretty(r0.function)}, u = {r0.radius:g})",
                      sliders=[dict(active=start, steps=steps, currentvalue=dict(prefix="η / L_faithful^max: "),
                                    pad=dict(t=50))])
    return fig
