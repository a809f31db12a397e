"""Chapter 3's figures: the SPP-θ instance and surrogate curves (Figures 1 and 4), incoherence against accuracy
(Figures 5-8), convergence (Figure 2), the VRP explanation (Figure 3) and the interactive λ slider.

The data they draw come from :mod:`explainopt.chapters.clemo`; every figure is sized to the book's text column
(:mod:`explainopt.plots`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import networkx as nx
import numpy as np
from matplotlib.ticker import MaxNLocator
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..plots import PALETTE, figsize, legend_below, panels
from ..problems import KNAPSACK_TYPES, ShortestPath
from .clemo import LR_AND_CLEMO, TABLE2_METHODS


def plot_spp_instance(result: dict, *, ax=None):
    """Figure 1(a): the SPP-θ grid, each arc labelled c + θ ĉ, the optimal s–t route at θ0 in blue."""
    problem = ShortestPath.from_registry()
    ax = ax or plt.gca()
    graph = nx.DiGraph(problem.arcs)
    pos = {n: tuple(xy) for n, xy in problem.positions.items()}
    route = set(zip(result["path"][:-1], result["path"][1:]))
    other = [arc for arc in problem.arcs if arc not in route]
    nx.draw_networkx_nodes(graph, pos, ax=ax, node_color="white", edgecolors="black", node_size=500)
    nx.draw_networkx_labels(graph, pos, ax=ax)
    nx.draw_networkx_edges(graph, pos, edgelist=other, ax=ax, edge_color="0.6", node_size=500, arrowsize=12)
    nx.draw_networkx_edges(graph, pos, edgelist=list(route), ax=ax, edge_color=PALETTE[0], width=3, node_size=500,
                           arrowsize=16)
    labels = {arc: f"{c:g} + {d:g}θ" for arc, c, d in zip(problem.arcs, problem.cost, problem.perturbation)}
    nx.draw_networkx_edge_labels(graph, pos, edge_labels=labels, ax=ax, font_size=9)
    ax.set_axis_off()
    return ax


def plot_spp_curves(result: dict, *, components=(0, 1, 2, 3), axes=None):
    """Figure 1 (b, c) / Figure 4: true vs. predicted objective and decision variables along θ."""
    cur, names = result["curves"], result["components"]
    comps = [c for c in components if c < len(names)]
    if axes is None:
        _, axes = panels(len(comps), height=2.4, sharex=True)
    for ax, c in zip(np.atleast_1d(axes), comps):
        true = cur["true_f"] if c == 0 else cur["true_x"][:, c - 1]
        ax.plot(cur["theta"], true, color="black", lw=2, label="Dijkstra")
        for color, name in zip(PALETTE, LR_AND_CLEMO):
            f, x = cur[name]
            ax.plot(cur["theta"], f if c == 0 else x[:, c - 1], color=color, ls="--", label=name)
        ax.set_title(names[c])
        ax.set_xlabel("θ")
    legend_below(np.atleast_1d(axes)[0].figure)
    return axes


def plot_knapsack_scatter(per_run: pd.DataFrame, *, axes=None):
    """Figures 5–8: total incoherence vs. total accuracy loss per run, one panel per instance type."""
    kinds = [k for k in KNAPSACK_TYPES if k in set(per_run["kind"])]
    if not kinds:
        ax = plt.gca() if axes is None else np.ravel(axes)[0]
        ax.text(0.5, 0.5, "no knapsack cell computed at this scale yet", ha="center", va="center")
        ax.set_axis_off()
        return np.array([ax])
    if axes is None:
        _, axes = panels(len(kinds), height=2.6)
    axes = np.ravel(axes)
    colors = dict(zip(TABLE2_METHODS, PALETTE))
    for ax, kind in zip(axes, kinds):
        sub = per_run[per_run["kind"] == kind]
        for method in TABLE2_METHODS:
            grp = sub[sub["method"] == method]
            if len(grp):
                ax.scatter(grp["accuracy"], grp["incoherence"] + 1e-6, s=12, color=colors[method], label=method,
                           alpha=0.7)
        ax.set_yscale("log")
        ax.set_title(kind.replace("_", " "))
        ax.set_xlabel("accuracy loss (weighted)")
    for ax in axes[::2]:
        ax.set_ylabel("total incoherence (log)")
    legend_below(axes[0].figure)
    return axes


def plot_convergence(runs: list, *, ax=None):
    """Figure 2: CLEMO loss over iterations (SLSQP solid, L-BFGS dotted), relative to the convex optimum."""
    ax = ax or plt.gca()
    for color, run in zip(PALETTE, filter(None, runs)):
        for key, ls in (("SLSQP_history", "-"), ("LBFGS_history", ":")):
            h = np.array(run[key])
            if len(h):
                gap = np.maximum(h[:, 2] - run["convex_loss"], 1e-12) / run["convex_loss"]
                ax.plot(h[:, 0], gap, ls=ls, color=color, label=f"{run['n_items']} items ({key.split('_')[0]})")
    ax.set_yscale("log")
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlim(left=0)
    ax.set_xlabel("iteration")
    ax.set_ylabel("(loss − convex optimum) / optimum")
    if ax.get_lines():
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1))
    else:
        ax.text(0.5, 0.5, "no runtime cell computed at this scale yet", ha="center", va="center",
                transform=ax.transAxes)
    return ax


def plot_vrp_explanation(result: dict, *, method: str = "CLEMO (SLSQP)", component: int = 0, top: int = 10,
                         axes=None):
    """Figures 3 and 9: contributions drawn on the network (node colour: demand, depot-arc colour: cost) and
    the top-10 relative contributions, for one explained component (0: the objective)."""
    contrib = result["contributions"][method][component]
    names, xy = result["features"], np.asarray(result["coordinates"])
    n = len(xy)
    rel = contrib / max(np.abs(contrib).sum(), 1e-12)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=figsize(3.8), gridspec_kw={"width_ratios": [1.3, 1]})
    ax, bx = axes
    lim = np.abs(rel).max()
    cmap, norm = plt.get_cmap("vlag"), plt.Normalize(-lim, lim)
    for route in result["routes"]:
        ax.plot(xy[route, 0], xy[route, 1], color="0.75", lw=1.5, zorder=1)
    for j in range(1, n):
        ax.plot([xy[0, 0], xy[j, 0]], [xy[0, 1], xy[j, 1]], color=cmap(norm(rel[n - 2 + j])), lw=2.5,
                alpha=0.8, zorder=2)
    ax.scatter(xy[1:, 0], xy[1:, 1], c=[cmap(norm(v)) for v in rel[:n - 1]], s=160, edgecolors="black", zorder=3)
    ax.scatter(*xy[0], marker="s", s=200, color="black", zorder=3)
    for j in range(n):
        ax.annotate(str(j), xy[j], ha="center", va="center", fontsize=9, color="white" if j == 0 else "black", zorder=4)
    ax.set_title(f"{result['components'][component]}: contributions\n({method})")
    ax.set_axis_off()
    plt.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, label="relative contribution",
                 orientation="horizontal", fraction=0.05, pad=0.02)
    order = np.argsort(-np.abs(rel))[:top][::-1]
    bx.barh([names[i] for i in order], rel[order], color=[cmap(norm(rel[i])) for i in order])
    bx.xaxis.set_major_locator(MaxNLocator(4))  # a narrow panel: more ticks would overlap
    bx.set_xlabel("relative contribution")
    bx.set_title(f"top {top}")
    return axes


def plot_lambda_slider(sweep: dict) -> go.Figure:
    """An interactive figure (plotly): the SPP optimal value and one arc against θ, Dijkstra's (black) and
    CLEMO's surrogates, with a slider over the factor on the coherence weights λ_C; each step restyles the
    two surrogate traces and states the step's accuracy and incoherence in the title."""
    frames = sweep["frames"]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("optimal value f", f"arc {sweep['component']}"))
    for col, true in ((1, sweep["true_f"]), (2, sweep["true_x"])):
        fig.add_trace(go.Scatter(x=sweep["theta"], y=true, mode="lines", name="Dijkstra", showlegend=col == 1,
                                 line=dict(color="black", width=3)), row=1, col=col)
    start = next((i for i, fr in enumerate(frames) if fr["factor"] == 1.0), 0)
    for col, key in ((1, "f"), (2, "x")):
        fig.add_trace(go.Scatter(x=sweep["theta"], y=frames[start][key], mode="lines", name="CLEMO",
                                 showlegend=col == 1, line=dict(color=PALETTE[0], width=2, dash="dash")),
                      row=1, col=col)

    def title(fr):
        return (f"λ_C × {fr['factor']:g}: accuracy loss {fr['accuracy']:.1f}, incoherence {fr['incoherence']:.2f}")

    steps = [dict(method="update", label=f"{fr['factor']:g}",
                  args=[{"y": [fr["f"], fr["x"]]}, {"title.text": title(fr)}, [2, 3]]) for fr in frames]
    fig.update_layout(title=dict(text=title(frames[start])), height=420, template="plotly_white",
                      sliders=[dict(active=start, steps=steps, currentvalue=dict(prefix="factor on λ_C: "),
                                    pad=dict(t=40))])
    fig.update_xaxes(title_text="θ")
    return fig
