"""Plots of evaluation results (matplotlib is optional: `pip install cmlm-miner[plot]`)."""

from __future__ import annotations

from pathlib import Path

from miner.histograms import merged_histograms, pairs_kept_curve
from miner.io import atomic_output


class PlotError(ImportError, ValueError):
    """matplotlib is not installed."""


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only; never needs a display
        import matplotlib.pyplot as plt
    except ImportError:  # a ValueError too, so commands report it in one line after writing their other outputs
        raise PlotError("plots need matplotlib: pip install 'cmlm-miner[plot]'") from None
    return plt


def plot_threshold_curve(curve: dict, thresholds: dict[str, float], title: str, path: str | Path) -> None:
    """Precision, recall and F1 against the margin threshold, with the named thresholds as vertical lines."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.5), dpi=120)
    for key, style in (("f1", "-"), ("precision", "--"), ("recall", ":")):
        axes.plot(curve["scores"], curve[key], style, label=key.capitalize() if key != "f1" else "F1")
    for (label, value), color in zip(thresholds.items(), ("tab:red", "tab:purple", "tab:gray")):
        if value is not None:
            axes.axvline(value, color=color, linewidth=1, label=f"{label} {value:.4f}")
    axes.set_xlabel("margin threshold (pairs with score >= threshold are extracted)")
    axes.set_ylabel("score")
    axes.set_ylim(0, 1.02)
    _save(plt, figure, axes, title, path, legend="lower left", fontsize=8)


def _save(plt, figure, axes, title: str, path: str | Path, legend: str, fontsize: int) -> None:
    """A figure's title, grid and legend, written as a PNG atomically, and closed."""
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(loc=legend, fontsize=fontsize)
    figure.tight_layout()
    with atomic_output(path) as handle:
        figure.savefig(handle, format="png")
    plt.close(figure)


def plot_pairs_by_threshold(histograms: dict[str, list[list]], threshold: float | None, title: str,
                            path: str | Path, most: int = 10) -> None:
    """How many mined pairs a margin threshold keeps: pairs with margin >= x against x, on a log scale, for all
    language pairs together and the `most` largest each; the threshold mined at as a vertical line (the pairs
    below it were not kept, so the curves start there)."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.5), dpi=120)
    largest = sorted(histograms, key=lambda pair: (-sum(n for _, n in histograms[pair]), pair))[:most]
    together = ([(f"all {len(histograms)} language pairs", merged_histograms(histograms.values()), "-")]
                if len(histograms) > 1 else [])  # one language pair: its own line says it all
    for label, histogram, style in together + [(pair, histograms[pair], "--" if together else "-")
                                               for pair in largest]:
        if histogram:
            edges, kept = pairs_kept_curve(histogram)
            axes.step(edges, kept, style, where="post", label=label, linewidth=1.5 if style == "-" else 1)
    if threshold is not None:
        axes.axvline(threshold, color="tab:red", linewidth=1, label=f"threshold {threshold:g}")
    axes.set_xlabel("margin threshold")
    axes.set_ylabel("pairs at or above it")
    axes.set_yscale("log")
    _save(plt, figure, axes, title, path, legend="upper right", fontsize=7)
