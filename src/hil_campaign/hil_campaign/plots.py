"""Plots written next to a campaign's table.

* ``success_map.png`` -- the success criterion over two parameters (``plots.success_map``):
  each parameter pair coloured by the fraction of its runs that succeeded, ``k/n`` beside it;
  runs that failed with an error are crossed out.
* ``histograms.png`` -- one panel per metric (``plots.histograms``): histograms of the numeric
  metrics over the successful rows, counts of true/false for booleans.
* ``curves.png`` -- metrics against one parameter (``plots.curves``), one colour per value of a
  second parameter and one line style per metric (mean over the completed runs of each point;
  NaN leaves a gap), e.g. the simulated boundary beside the designer's bounds.
* ``boundary.png`` -- for a bisection: every run (parameter against the first grid parameter,
  coloured by success) and the boundary estimate with its final bracket.

Matplotlib with the Agg backend. Plain Python, no rclpy.
"""

from __future__ import annotations

import math
from pathlib import Path

from hil_campaign.results import finite


def _plt():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    _plt().close(fig)
    return path


def _successes(campaign, table) -> list[bool]:
    rows = table.to_pylist()
    return [campaign.success(r) for r in rows]


def _numeric(values) -> bool:
    return all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values)


def success_map(campaign, table, out_dir: Path) -> Path | None:
    if not campaign.success_map or campaign.success is None:
        return None
    plt = _plt()
    xname, yname = campaign.success_map
    xs, ys = table.column(xname).to_pylist(), table.column(yname).to_pylist()
    status = table.column('status').to_pylist()
    ok = _successes(campaign, table)
    cells: dict = {}
    for x, y, s, good in zip(xs, ys, status, ok):
        cell = cells.setdefault((x, y), [0, 0, 0])      # successes, runs, errors
        cell[0] += good
        cell[1] += 1
        cell[2] += s != 'ok'
    fig, ax = plt.subplots(figsize=(7, 5.5))
    keys = list(cells)
    numeric = _numeric([k[0] for k in keys]) and _numeric([k[1] for k in keys])
    px = [k[0] for k in keys] if numeric else [str(k[0]) for k in keys]
    py = [k[1] for k in keys] if numeric else [str(k[1]) for k in keys]
    frac = [cells[k][0] / cells[k][1] for k in keys]
    sc = ax.scatter(px, py, c=frac, cmap='RdYlGn', vmin=0.0, vmax=1.0, s=260, edgecolors='k')
    for k, x, y in zip(keys, px, py):
        good, n, errors = cells[k]
        ax.annotate(f'{good}/{n}', (x, y), textcoords='offset points', xytext=(0, 13), ha='center', fontsize=8)
        if errors:
            ax.scatter([x], [y], marker='x', color='k', s=120)
    fig.colorbar(sc, ax=ax, label=f'fraction of runs with {campaign.success.label()}')
    ax.set(xlabel=xname, ylabel=yname, title=f'{campaign.name}: success map ({len(status)} runs; x: error)')
    ax.margins(0.12)
    ax.grid(alpha=0.3)
    return _save(fig, out_dir / 'success_map.png')


def histograms(campaign, table, out_dir: Path) -> Path | None:
    panels = []
    ok_rows = [s == 'ok' for s in table.column('status').to_pylist()]
    for name in campaign.histograms:
        values = [v for v, ok in zip(table.column(name).to_pylist(), ok_rows) if ok]
        if values and all(isinstance(v, bool) for v in values if v is not None):
            panels.append((name, 'bool', values))
        else:
            data = finite(values)
            if data:
                panels.append((name, 'num', data))
    if not panels:
        return None
    plt = _plt()
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, (name, kind, data) in zip(axes.flat, panels):
        if kind == 'bool':
            counts = [sum(1 for v in data if v is False), sum(1 for v in data if v is True)]
            ax.bar(['false', 'true'], counts, color=['tab:red', 'tab:green'])
            ax.set_ylabel('runs')
        else:
            ax.hist(data, bins=min(20, max(5, len(data) // 2)), color='tab:blue', alpha=0.8)
            ax.set_ylabel('runs')
        ax.set_title(f'{name} ({len(data)} runs)', fontsize=9)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis('off')
    fig.suptitle(f'{campaign.name}: metrics over the runs that completed (status ok)')
    return _save(fig, out_dir / 'histograms.png')


def boundary_curve(campaign, table, boundaries: list, out_dir: Path) -> Path | None:
    if campaign.bisection is None or not boundaries:
        return None
    plt = _plt()
    pname = campaign.bisection.parameter
    xname = next(iter(campaign.grid), None)
    ok = _successes(campaign, table)
    points = table.column('point').to_pylist()
    xs = table.column(xname).to_pylist() if xname else points
    fig, ax = plt.subplots(figsize=(7, 5))
    ys = table.column(pname).to_pylist()
    ax.scatter([x for x, g in zip(xs, ok) if g], [y for y, g in zip(ys, ok) if g], marker='o', color='tab:green',
               label=f'{campaign.success.label()}')
    ax.scatter([x for x, g in zip(xs, ok) if not g], [y for y, g in zip(ys, ok) if not g], marker='x', color='tab:red',
               label='not')
    bx = [b[xname] if xname else b['point'] for b in boundaries]
    by = [b['boundary'] for b in boundaries]
    err = [0.5 * (b['high'] - b['low']) if not math.isnan(b['boundary']) else 0.0 for b in boundaries]
    ax.errorbar(bx, by, yerr=err, color='k', marker='s', capsize=4, label='boundary (final bracket)')
    ax.set(xlabel=xname or 'point', ylabel=pname, title=f'{campaign.name}: boundary by bisection')
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, out_dir / 'boundary.png')


def curves(campaign, table, out_dir: Path) -> Path | None:
    spec = getattr(campaign, 'curves', None)
    if not spec:
        return None
    plt = _plt()
    xname, sname = spec['x'], spec['series']
    status = table.column('status').to_pylist()
    xs = table.column(xname).to_pylist()
    ss = table.column(sname).to_pylist() if sname else [None] * len(xs)
    styles = ['-o', '--s', ':^', '-.v', '-D', '--x']
    fig, ax = plt.subplots(figsize=(7, 5))
    series = sorted({s for s in ss if s is not None}) if sname else [None]
    colors = plt.rcParams['axes.prop_cycle'].by_key()['color']
    for j, metric in enumerate(spec['metrics']):
        values = table.column(metric).to_pylist()
        for i, sv in enumerate(series):
            pts: dict = {}
            for x, s, v, st in zip(xs, ss, values, status):
                if st == 'ok' and s == sv and isinstance(x, (int, float)) and isinstance(v, (int, float)):
                    pts.setdefault(x, []).append(float(v))
            if not pts:
                continue
            px = sorted(pts)
            py = [sum(pts[x]) / len(pts[x]) for x in px]
            label = metric if sname is None else f'{metric}, {sname} = {sv:g}'
            ax.plot(px, py, styles[j % len(styles)], color=colors[i % len(colors)], label=label, ms=5)
    ax.set(xlabel=xname, ylabel=', '.join(spec['metrics']) if len(spec['metrics']) < 3 else 'metrics',
           title=f'{campaign.name}: metrics over {xname}')
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, out_dir / 'curves.png')


def write_plots(campaign, table, boundaries: list, out_dir: Path) -> list[Path]:
    out = [success_map(campaign, table, out_dir), histograms(campaign, table, out_dir),
           boundary_curve(campaign, table, boundaries, out_dir), curves(campaign, table, out_dir)]
    return [p for p in out if p is not None]

