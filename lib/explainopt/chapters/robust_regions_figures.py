"""Chapter 2's figures: the regions found iteration by iteration, convergence of the master/adversarial loop and the
interactive region path.

The data they draw come from :mod:`explainopt.chapters.robust_regions`; every figure is sized to the book's text
column (:mod:`explainopt.plots`)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import plotly.graph_objects as go
from matplotlib.patches import Circle, Rectangle

from ..encoders import model_predict
from ..plots import PALETTE, figsize, panels
from .robust_regions import PATH_METHODS, leaf_outlines, region_outline, two_feature_tree


def plot_region_iterations(model, run: dict, *, ax=None, resolution: int = 300, lower=0.0, upper=1.0,
                           title: str = ""):
    """Figure 2/6: the classes of a 2-D model, the factual and every master solution with its box/ball
    (`run`: a :func:`tree_run` cell)."""
    ax = ax or plt.gca()
    g = np.linspace(lower, upper, resolution)
    xx, yy = np.meshgrid(g, g)
    pred = model_predict(model, np.c_[xx.ravel(), yy.ravel()]).reshape(xx.shape)
    ax.contourf(xx, yy, pred != run["target"], levels=[-0.5, 0.5, 1.5], colors=["white", "#F4B6A6"])
    ax.plot(*np.asarray(run["x0"])[:2], "k*", ms=12, label="factual")
    cmap, rho = plt.get_cmap("viridis"), run["rho"]
    for h in run["history"]:
        c, x = cmap(h["iteration"] / max(1, len(run["history"]))), np.asarray(h["x"])
        if run["norm"] == "linf":
            ax.add_patch(Rectangle(x - rho, 2 * rho, 2 * rho, fill=False, ec=c, lw=1.5))
        else:
            ax.add_patch(Circle(x, rho, fill=False, ec=c, lw=1.5))
        ax.plot(*x, "o", color=c, ms=4)
        ax.annotate(str(h["iteration"]), x, textcoords="offset points", xytext=(3, 3), fontsize=9, color=c)
    ax.set(xlim=(lower, upper), ylim=(lower, upper), aspect="equal", title=title,
           xlabel="feature 1 (scaled)", ylabel="feature 2 (scaled)")
    return ax


def figure_tree_iterations(runs: list[dict], *, random_state: int = 0):
    """Figures 2 and 6 from :func:`tree_run` cells: one panel per tree (refitted: a two-feature tree is cheap)."""
    fig, axes = panels(len(runs), height=3.9)
    for ax, run in zip(axes, runs):
        stop = f" (ρ̄={run['rho_bar']:.3f})" if run["early_stop"] else ""
        plot_region_iterations(two_feature_tree(run["depth"], random_state=random_state)[2], run, ax=ax,
                               title=f"depth {run['depth']}: {run['iterations']} iterations,\n{run['status']}{stop}")
    return fig


def plot_convergence(history, *, rho: float, ax=None, title: str = ""):
    """Figure 7: distance to the factual (solid) and certified radius (dashed) per iteration."""
    ax = ax or plt.gca()
    it = [h["iteration"] for h in history]
    ax.plot(it, [h["distance"] for h in history], "-o", label="distance to factual (ℓ1)")
    ax2 = ax.twinx()
    ax2.plot(it, [h["radius"] for h in history], "--s", color="#E69F00", label="certified radius")
    ax2.axhline(rho, color="grey", lw=0.8, ls=":")
    ax.set(xlabel="iteration", ylabel="distance", title=title)
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax2.set_ylabel("radius")
    ax2.grid(False)
    return ax, ax2


def figure_convergence(runs: list[dict]):
    """Figure 7 from :func:`run_convergence`: one panel per model (a note when no run is computed)."""
    if not runs:
        fig, ax = plt.subplots(figsize=figsize(1.2))
        ax.axis("off")
        ax.text(0.5, 0.5, "Figure 7: no run computed at this scale yet", ha="center", va="center")
        return fig
    fig, axes = panels(len(runs), height=2.8)
    for ax, inst in zip(axes, runs):
        plot_convergence(inst["history"], rho=inst["rho"], ax=ax, title=f"{inst['model']}: {inst['status']}")
    return fig


def _path_title(path: dict, k: int) -> str:
    parts = []
    for name, runs in path["runs"].items():
        r = runs[k]
        parts.append(f"{name} {r['distance']:.3f}" if r["x"] is not None else f"{name}: none")
    return f"ρ = {path['runs']['box'][k]['rho']:g}, ℓ1 distance to the factual: " + ", ".join(parts)


def plot_region_slider(path: dict) -> go.Figure:
    """An interactive figure (plotly): the two-feature tree's classes (shaded: the other class), the factual,
    the tree's leaves (grey), and for each radius of a slider the region of Algorithm 1 with the box and with the ball and the
    single-leaf heuristic's box (outline and centre); each step restyles the six region traces and states
    the three distances in the title (cf. Figures 2 and 5 of the paper)."""
    g = path["grid"]
    fig = go.Figure()
    fig.add_trace(go.Heatmap(x=g, y=g, z=np.asarray(path["adverse"], dtype=float), showscale=False, hoverinfo="skip",
                             colorscale=[[0, "rgba(255,255,255,0)"], [1, "#F4B6A6"]], name="other class"))
    lx, ly = leaf_outlines(path["leaves"])
    fig.add_trace(go.Scatter(x=lx, y=ly, mode="lines", name="leaves", hoverinfo="skip",
                             line=dict(color="rgba(80,80,80,0.35)", width=1)))
    fig.add_trace(go.Scatter(x=[path["x0"][0]], y=[path["x0"][1]], mode="markers", name="factual",
                             marker=dict(symbol="star", size=14, color="black")))
    colours = {"box": PALETTE[0], "ball": PALETTE[2], "single leaf": PALETTE[3]}
    dashes = {"box": "solid", "ball": "solid", "single leaf": "dash"}
    start, fixed = 0, len(fig.data)
    for name, runs in path["runs"].items():
        norm = PATH_METHODS[name][0]
        r = runs[start]
        ox, oy = region_outline(r["x"], r["rho"], norm)
        fig.add_trace(go.Scatter(x=ox, y=oy, mode="lines", name=f"{name} region",
                                 line=dict(color=colours[name], width=2, dash=dashes[name])))
        cx, cy = ([r["x"][0]], [r["x"][1]]) if r["x"] is not None else ([], [])
        fig.add_trace(go.Scatter(x=cx, y=cy, mode="markers", name=f"{name} centre", showlegend=False,
                                 marker=dict(color=colours[name], size=8)))
    steps = []
    for k, rho in enumerate(r["rho"] for r in path["runs"]["box"]):
        xs, ys = [], []
        for name, runs in path["runs"].items():
            run_k = runs[k]
            ox, oy = region_outline(run_k["x"], run_k["rho"], PATH_METHODS[name][0])
            xs += [ox, [run_k["x"][0]] if run_k["x"] is not None else []]
            ys += [oy, [run_k["x"][1]] if run_k["x"] is not None else []]
        steps.append(dict(method="update", label=f"{rho:g}",
                          args=[{"x": xs, "y": ys}, {"title.text": _path_title(path, k)},
                                list(range(fixed, fixed + len(xs)))]))
    fig.update_layout(title=dict(text=_path_title(path, start)), height=560, template="plotly_white",
                      xaxis=dict(title="variance (scaled)", range=[0, 1], constrain="domain"),
                      yaxis=dict(title="skewness (scaled)", range=[0, 1], scaleanchor="x", scaleratio=1),
                      sliders=[dict(active=start, steps=steps, currentvalue=dict(prefix="ρ = "), pad=dict(t=50))])
    return fig


def figure_single_leaf(path: dict):
    """Figure 5 from :func:`region_path`: at the radius where the single-leaf heuristic is farthest behind
    Algorithm 1 (box), left the heuristic's box inside one leaf, right Algorithm 1's box across leaves
    (grey: the tree's leaves; red: the other class).
    Returns (figure, radius)."""
    box, leaf = path["runs"]["box"], path["runs"]["single leaf"]
    gaps = [(h["distance"] - b["distance"]) if h["x"] is not None and b["x"] is not None else -math.inf
            for h, b in zip(leaf, box)]
    k = int(np.argmax(gaps))
    g = path["grid"]
    fig, axes = plt.subplots(1, 2, figsize=figsize(3.9), sharey=True)
    for ax, (name, r) in zip(axes, (("single-leaf heuristic", leaf[k]), ("Algorithm 1", box[k]))):
        ax.contourf(g, g, path["adverse"], levels=[-0.5, 0.5, 1.5], colors=["white", "#F4B6A6"])
        ax.plot(*leaf_outlines(path["leaves"]), color="grey", lw=0.6, alpha=0.6)
        ax.plot(*path["x0"], "k*", ms=12, label="factual")
        if r["x"] is not None:
            ax.add_patch(Rectangle(np.asarray(r["x"]) - r["rho"], 2 * r["rho"], 2 * r["rho"], fill=False,
                                   ec=PALETTE[0], lw=2))
            ax.plot(*r["x"], "o", color=PALETTE[0], ms=5)
            ax.plot([path["x0"][0], r["x"][0]], [path["x0"][1], r["x"][1]], ":", color="grey")
        ax.set(xlim=(0, 1), ylim=(0, 1), aspect="equal", xlabel="variance (scaled)",
               title=f"{name}:\nℓ1 distance {r['distance']:.3f}")
    axes[0].set_ylabel("skewness (scaled)")
    return fig, box[k]["rho"]
