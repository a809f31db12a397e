"""Chapter 6's figures: cost against robustness per measure and the interactive threat slider.

The data they draw come from :mod:`explainopt.chapters.robustness_benchmark`; every figure is sized to the book's
text column (:mod:`explainopt.plots`)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from matplotlib.lines import Line2D

from .. import plots
from .robustness_benchmark import MEASURES, METHODS, recommended


def plot_cost_robustness(summary: pd.DataFrame, *, measures=("radius_linf", "delta_exact", "retrained")):
    """Cost (mean distance) against each robustness measure, one panel per measure, one point per
    (model, method): up and to the left is better."""
    fig, axes = plots.panels(len(measures), height=2.8)
    methods = list(dict.fromkeys(METHODS["network"] + METHODS["forest"]))
    shown = set()
    for ax, col in zip(axes, measures):
        for model, marker in (("network", "o"), ("forest", "s")):
            g = summary[summary["model"] == model] if len(summary) else summary
            for _, r in g.iterrows():
                if pd.isna(r[col]) or pd.isna(r["distance"]):
                    continue
                colour = plots.PALETTE[methods.index(r["method"]) % len(plots.PALETTE)]
                ax.scatter(r["distance"], r[col], marker=marker, color=colour, s=40, edgecolor="black")
                shown |= {r["method"], model}
        ax.set_xlabel("normalised ℓ1 distance (cost)")
        ax.set_ylabel(MEASURES[col])
    handles = [Line2D([], [], ls="", marker="o", color=plots.PALETTE[k % len(plots.PALETTE)], label=method)
               for k, method in enumerate(methods) if method in shown]
    handles += [Line2D([], [], ls="", marker=marker, color="white", markeredgecolor="black", label=model)
                for model, marker in (("network", "o"), ("forest", "s")) if model in shown]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 4))
    return fig


def plot_threat_slider(df: pd.DataFrame) -> go.Figure:
    """An interactive figure (plotly): every valid counterfactual at its method's recommended parameter,
    distance on x, and on y the robustness measure the slider picks (one trace per model and method;
    each slider step restyles the y data of every trace and the axis title)."""
    rec = recommended(df)
    rec = rec[rec["valid"].astype(bool)] if len(rec) else rec
    fig = go.Figure()
    methods = list(dict.fromkeys(METHODS["network"] + METHODS["forest"]))
    traces = []
    for model, symbol in (("network", "circle"), ("forest", "square")):
        for method in METHODS[model]:
            g = rec[(rec["model"] == model) & (rec["method"] == method)] if len(rec) else rec
            if g.empty:
                continue
            traces.append(g)
            fig.add_trace(go.Scatter(
                x=g["distance"].tolist(), y=g["radius_linf"].tolist(), mode="markers", name=f"{method} ({model})",
                text=[f"{d}, factual {f}" for d, f in zip(g["dataset"], g["factual"])],
                marker=dict(symbol=symbol, size=9, color=plots.PALETTE[methods.index(method) % len(plots.PALETTE)],
                            line=dict(width=1, color="black"))))
    measures = [c for c in MEASURES if len(rec) and rec[c].notna().any()]
    steps = [dict(method="update", label=MEASURES[c],
                  args=[{"y": [[None if pd.isna(v) else float(v) for v in g[c]] for g in traces]},
                        {"yaxis.title.text": MEASURES[c]}]) for c in measures]
    fig.update_layout(template="plotly_white", height=480, xaxis_title="normalised l1 distance (cost)",
                      yaxis_title=MEASURES["radius_linf"],
                      title="Each counterfactual: its cost against the threat the slider picks",
                      sliders=[dict(active=0, steps=steps, currentvalue=dict(prefix="threat: "), pad=dict(t=50))])
    return fig
