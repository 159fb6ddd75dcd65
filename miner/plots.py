"""Plots of evaluation results (matplotlib is optional: `pip install cmlm-miner[plot]`)."""

from __future__ import annotations

from pathlib import Path

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
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(loc="lower left", fontsize=8)
    figure.tight_layout()
    with atomic_output(path) as handle:
        figure.savefig(handle, format="png")
    plt.close(figure)
