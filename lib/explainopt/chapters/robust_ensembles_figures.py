"""Chapter 5's figures: thresholds, validity curves, counterfactual paths, Pareto fronts, changes, solve times,
importances and the interactive α slider.

The data they draw come from :mod:`explainopt.chapters.robust_ensembles`; every figure is sized to the book's text
column (:mod:`explainopt.plots`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import plotly.graph_objects as go
import seaborn as sns
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
from plotly.subplots import make_subplots

from ..counterfactuals.ensembles import robust_saa_threshold, robustness_threshold
from ..plots import PALETTE, figsize, half_made, legend_below, panels
from .robust_ensembles import TIME_ORDER, counterfactual_path, describe_path


def plot_thresholds(*, sizes=(2, 3, 10, 11, 100, 101, 400), ax=None):
    """Figure 1: p*(N, alpha) against the robustness target 1 - alpha, odd and even N."""
    ax = ax or plt.gca()
    targets = np.linspace(0.01, 0.99, 197)
    for n in sizes:
        ax.plot(targets, [robustness_threshold(n, 1 - t) for t in targets], label=f"N = {n}",
                linestyle="-" if n % 2 else "--")
    ax.set(xlabel="robustness target 1 − α", ylabel="threshold p*(N, α)", ylim=(0, 1.01))
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1))
    return ax


def plot_validity_curves(curves, *, datasets=None):
    """Figure 2 / 9: retrained validity against the target 1 - alpha, with 95% intervals (shaded)."""
    datasets = list(datasets or curves["dataset"].unique())
    fig, axes = panels(len(datasets), height=2.5)
    for ax, name in zip(axes, datasets):
        sub = curves[curves.dataset == name]
        for label, g in sub.groupby("label"):
            g = g.sort_values("target")
            ax.plot(g["target"], g["rate"], marker="o", ms=3, label=label)
            ax.fill_between(g["target"], g["low"], g["high"], alpha=0.2)
        ax.plot([0.5, 1], [0.5, 1], color="grey", lw=1, ls=":", label="target")
        ax.set(title=name, xlabel="target 1 − α", ylabel="validity", ylim=(0, 1.02))
    legend_below(fig)
    return fig


def plot_counterfactual_path(table, *, ax=None, title=""):
    """Figure 3: heatmap of the factual (first column) and its changes (blue up, red down)."""
    ax = ax or plt.gca()
    changes = table.iloc[:, 1:]
    # changes below the display precision (e.g. a split margin) are real: show them, not as "-0.00"
    labels = changes.map(lambda v: f"{v:.2f}" if abs(v) >= 5e-3 else ("0" if abs(v) <= 1e-6 else f"{v:.0e}"))
    rows = [f"{n} = {v:.2f}" for n, v in zip(table.index, table["factual"])]
    with half_made(ax.figure):  # seaborn draws the heatmap with its labels upright to see if they overlap
        sns.heatmap(changes, ax=ax, cmap="RdBu", center=0, vmin=-1, vmax=1, annot=labels, fmt="",
                    xticklabels=True, yticklabels=rows, cbar_kws={"label": "change (scaled units)"})
    ax.tick_params(axis="y", rotation=0)
    ax.set(xlabel="robustness target 1 − α", ylabel="feature = factual value", title=title)
    return ax


def path_figure(frame, *, dataset: str, sim: int = 0, factual: int = 0, title: str = ""):
    """Figures 3, 7 and 8: the heatmap of :func:`plot_counterfactual_path` for one factual and the
    sentence of :func:`describe_path`, as ``(figure, text)``; None when `frame` holds no Direct-SAA
    counterfactual of that factual (a dataset this scale does not run, or a store not filled yet)."""
    sub = frame[(frame.dataset == dataset) & (frame.sim == sim) & (frame.factual == factual)
                & (frame.method == "direct-saa") & frame["x"].notna()]
    if sub.empty:
        return None
    table = counterfactual_path(frame, dataset=dataset, sim=sim, factual=factual)
    fig, ax = plt.subplots(figsize=figsize(0.4 * len(table) + 1.5))
    plot_counterfactual_path(table, ax=ax, title=title)
    return fig, describe_path(table, dataset=dataset)


def plot_pareto(points, *, datasets=None):
    """Figure 4: mean distance against retrained validity for every method and parameter."""
    datasets = list(datasets or points["dataset"].unique())
    fig, axes = panels(len(datasets), height=2.5)
    markers = {"naive": "*", "Direct-SAA": "o", "isolation forest": "s", "1-LOF": "^"}
    for ax, name in zip(axes, datasets):
        sub = points[points.dataset == name]
        for label, g in sub.groupby("label"):
            g = g.sort_values("distance")
            saa = label == "Direct-SAA" or label.startswith("Robust")
            ax.plot(g["distance"], g["rate"], marker=markers.get(label, "D"), ms=4, label=label,
                    lw=1 if saa else 0.6, ls="-" if saa else ":")
        ax.set(title=name, xlabel="mean weighted ℓ1 distance", ylabel="validity", ylim=(0, 1.02))
    handles = {label: handle for ax in axes for handle, label in zip(*ax.get_legend_handles_labels())}
    fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncols=min(len(handles), 3))
    return fig


def plot_changes(curves, *, ax=None):
    """Figure 5: mean number of changed features against the robustness target (Direct-SAA)."""
    ax = ax or plt.gca()
    for name, g in curves[curves.label == "Direct-SAA"].groupby("dataset"):
        g = g.sort_values("target")
        ax.plot(g["target"], g["n_changed"], marker="o", ms=3, label=name)
    ax.set(xlabel="robustness target 1 − α", ylabel="features changed (mean)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1))
    return ax


def plot_solve_times(times, *, ax=None):
    """Figure 6: box plots of the solve times per dataset and method, over every parameter of the method
    (every alpha for Direct-SAA, every contamination for the isolation forest, ...); log scale."""
    ax = ax or plt.gca()
    labels = [m for m in TIME_ORDER if m in set(times["label"])] + sorted(set(times["label"]) - set(TIME_ORDER))
    sns.boxplot(data=times, x="dataset", y="solve_time", hue="label", hue_order=labels, ax=ax, fliersize=2,
                linewidth=0.8)
    ax.set_yscale("log")
    # 1-2-5 labels, none on the minor ticks: within one decade matplotlib labels every minor tick (3e-1 and
    # 4e-1 overlapped on a loaded machine's times)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set(xlabel="", ylabel="solve time [s] (log scale)")
    ax.tick_params(axis="x", labelrotation=30)
    ax.get_legend().remove()
    legend_below(ax.figure, ncols=2)  # three long labels a row make the figure wider than the column
    return ax


def plot_importance(tables: dict):
    """Appendix C.6 (Figures 11-12): normalized permutation importance beside normalized mean changes."""
    fig, axes = panels(len(tables), height=3.4)
    for ax, (name, table) in zip(axes, tables.items()):
        top = table.sort_values("importance", ascending=False).head(12)
        idx = np.arange(len(top))
        ax.barh(idx - 0.2, top["importance"], height=0.4, label="permutation importance")
        ax.barh(idx + 0.2, top["change"], height=0.4, label="mean |change| (Direct-SAA, 1 − α = 0.5)")
        ax.set_yticks(idx, top["feature"])
        ax.invert_yaxis()
        ax.set(title=name, xlabel="share (normalized to 1)")
    legend_below(fig, ncols=2)
    return fig


def plot_alpha_slider(data: dict) -> go.Figure:
    """An interactive figure (plotly) with a slider over the run's tolerances alpha. Left: p*(N, alpha) and
    rho*(N, alpha, beta) against the target 1 - alpha, with the chosen alpha marked; right: per dataset the
    validity under retraining of the naive counterfactuals (fixed) and of the Direct-SAA ones at the
    chosen alpha, beside the target. Each step restyles the marker, the Direct-SAA bars and the target
    line, and states in the title how many datasets meet the target."""
    n, steps, names = data["n_estimators"], data["steps"], data["datasets"]
    if not steps:
        raise ValueError("no Direct-SAA results to show")
    fig = make_subplots(rows=1, cols=2, column_widths=[0.4, 0.6],
                        subplot_titles=(f"score thresholds (N = {n})", "validity under retraining"))
    targets = np.linspace(0.5, 0.99, 99)
    fig.add_trace(go.Scatter(x=targets, y=[robustness_threshold(n, 1 - t) for t in targets], mode="lines",
                             name="p*(N, α) (Direct-SAA)", line=dict(color=PALETTE[0], width=2)), row=1, col=1)
    for k, b in enumerate(data["betas"]):
        fig.add_trace(go.Scatter(x=targets, y=[robust_saa_threshold(n, 1 - t, b) for t in targets], mode="lines",
                                 name=f"ρ*(N, α, β={b:g}) (Robust-SAA)",
                                 line=dict(color=PALETTE[2 + k], width=1.5, dash="dash")), row=1, col=1)
    start = 0
    first = steps[start]
    fig.add_trace(go.Scatter(x=[first["target"]], y=[first["p_star"]], mode="markers", name="chosen α",
                             marker=dict(color="black", size=11, symbol="circle-open", line=dict(width=2))),
                  row=1, col=1)
    fig.add_trace(go.Bar(x=names, y=data["naive"], name="naive", marker_color="#999999"), row=1, col=2)
    fig.add_trace(go.Bar(x=names, y=first["validity"], name="Direct-SAA", marker_color=PALETTE[0]), row=1, col=2)
    fig.add_trace(go.Scatter(x=names, y=[first["target"]] * len(names), mode="lines+markers", name="target 1 − α",
                             line=dict(color="black", dash="dot")), row=1, col=2)
    marker, bars, line = len(fig.data) - 3, len(fig.data) - 2, len(fig.data) - 1

    def title(step):
        met = sum(v >= step["target"] - 1e-9 for v in step["validity"] if not np.isnan(v))
        ran = sum(not np.isnan(v) for v in step["validity"])
        rho = ", ".join(f"ρ*(β={b:g}) = {r:.3f}" for b, r in step["rho_star"].items())
        return (f"1 − α = {step['target']:.2f}: p* = {step['p_star']:.3f}{', ' + rho if rho else ''}; "
                f"Direct-SAA meets the target on {met} of {ran} datasets")

    slider_steps = [dict(method="update", label=f"{s['target']:.2f}",
                         args=[{"x": [[s["target"]], names, names],
                                "y": [[s["p_star"]], s["validity"], [s["target"]] * len(names)]},
                               {"title.text": title(s)}, [marker, bars, line]]) for s in steps]
    fig.update_layout(title=dict(text=title(first), font=dict(size=13)), height=460, template="plotly_white",
                      barmode="group", legend=dict(orientation="h", y=-0.3),
                      sliders=[dict(active=start, steps=slider_steps, currentvalue=dict(prefix="target 1 − α: "),
                                    pad=dict(t=60))])
    fig.update_xaxes(title_text="target 1 − α", row=1, col=1)
    fig.update_yaxes(title_text="threshold on the score", row=1, col=1)
    fig.update_yaxes(title_text="share valid for T1", range=[0, 1.05], row=1, col=2)
    return fig
