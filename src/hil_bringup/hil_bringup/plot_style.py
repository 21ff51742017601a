"""One style for every mission's figures (matplotlib, Agg backend; no rclpy).

* every axis gets a quantity and a unit (:func:`label`), and never offset notation
  (``-4.9999`` plus ``+-1e-4`` ticks): :func:`figure` turns it off on every axis;
* attitudes are plotted as rotation vectors (``log`` of the rotation, seed 004 Fig. 10 plots
  quaternion components for the same reason), never as roll-pitch-yaw through gimbal lock;
  errors between attitudes as the angle of the relative rotation (:func:`rotation_vectors`,
  :func:`angle_between`);
* every dashed or dotted line carries a legend entry (:func:`mark_events` labels the phase
  lines it draws);
* :func:`save` writes the PNG at one resolution and closes the figure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

DPI = 110
#: Line styles: the system under test, the independent reference, a difference.
UNDER_TEST = {'color': 'tab:blue', 'lw': 1.3}
REFERENCE = {'color': 'k', 'ls': '--', 'lw': 1.0}
DIFFERENCE = {'color': 'tab:red', 'lw': 0.8}
EVENT_STYLES = ({'color': 'tab:green', 'ls': ':'}, {'color': 'tab:purple', 'ls': '-.'},
                {'color': 'tab:brown', 'ls': '--'}, {'color': 'tab:gray', 'ls': ':'})


def pyplot():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    return plt


def figure(nrows: int = 1, ncols: int = 1, width: float = 8.0, row_height: float = 2.4, sharex: bool = True,
           title: str | None = None):
    """``fig, axes`` (a 2-D array) with grids on and offset notation off on every axis."""
    plt = pyplot()
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, row_height * nrows + 0.6), sharex=sharex, squeeze=False)
    for ax in axes.flat:
        ax.grid(True, alpha=0.3)
        ax.ticklabel_format(axis='both', style='plain', useOffset=False)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig, axes


def label(ax, quantity: str, unit: str, xlabel: str | None = None) -> None:
    """``quantity [unit]`` on the y axis (and ``xlabel`` on x, e.g. ``'t [s]'``)."""
    ax.set_ylabel(f'{quantity} [{unit}]')
    if xlabel:
        ax.set_xlabel(xlabel)


def mark_events(ax, events: dict, names=None) -> None:
    """Vertical lines at ``events`` (name -> time [s]), each labelled in the legend."""
    for k, name in enumerate(names if names is not None else list(events)):
        if name in events and events[name] is not None:
            ax.axvline(events[name], lw=0.9, label=f'{name} ({events[name]:.1f} s)', **EVENT_STYLES[k % len(EVENT_STYLES)])


def legend(ax, **kw) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, **{'loc': 'best', **kw})


def error_axis(ax, t, error, label_text: str, floor: float = 1e-16) -> None:
    """An error that spans decades (integrator accuracy to millimetres) on a log axis, floored at ``floor``."""
    ax.semilogy(t, np.maximum(np.abs(np.asarray(error, dtype=float)), floor), label=label_text, **DIFFERENCE)
    legend(ax)


def save(fig, path: Path) -> Path:
    fig.tight_layout(rect=(0.0, 0.0, 1.0, 0.97) if fig._suptitle is not None else None)
    fig.savefig(path, dpi=DPI)
    pyplot().close(fig)
    return Path(path)


def rotation_vectors(rpy) -> np.ndarray:
    """Rotation vectors ``log(R)`` [rad] of roll-pitch-yaw rows (continuous through pitch = 90 deg)."""
    import pinocchio as pin

    return np.array([pin.log3(pin.rpy.rpyToMatrix(*row)) for row in np.asarray(rpy, dtype=float)])


def angle_between(rpy_a, rpy_b) -> np.ndarray:
    """Angle of ``R_b^T R_a`` [rad] row by row: the attitude error as one number."""
    import pinocchio as pin

    return np.array([np.linalg.norm(pin.log3(pin.rpy.rpyToMatrix(*b).T @ pin.rpy.rpyToMatrix(*a)))
                     for a, b in zip(np.asarray(rpy_a, dtype=float), np.asarray(rpy_b, dtype=float))])


def scaled(values, unit: str):
    """``(values, unit)`` rescaled to milli or micro units when they are small (for ``m`` and ``rad``)."""
    v = np.asarray(values, dtype=float)
    peak = float(np.nanmax(np.abs(v))) if v.size and np.isfinite(v).any() else 0.0
    if unit in ('m', 'rad') and 0.0 < peak < 1e-3:
        return v * 1e6, 'u' + unit
    if unit in ('m', 'rad') and 0.0 < peak < 1.0:
        return v * 1e3, 'm' + unit
    return v, unit
