"""``docking_designer``: the minimum simulated mass for a facility's loop delay (seed 003 Eqs. 23-29).

    docking_designer --delay-ms 10 --stiffness 5000 --damping 100 [--mass 2.0] [--servo-lag-ms 5] [--simulate]
    docking_designer --fig6 fig6.png [--k-range 100 1e5] [--b-range 10 2000] [--grid 50]
    docking_designer --twin cisas_docking

For one (Delta, k, b) it prints the Routh-Hurwitz conditions of Eq. (26) (at ``--mass`` if
given, else at the exact minimum mass), the minimum mass by Eq. (29) (first-order Pade, the
seed), by second-order Pade, by the exact delay margin (recommended), and with
``--simulate`` by bisection on a time-domain simulation of the exact-delay loop. With
``--mass`` it says whether that mass is safe. ``--servo-lag-ms`` adds the robot's servo as a
first-order lag ``tau`` (beyond the seed): the exact margin and the simulation then include it,
and the verdict uses it (counting ``tau`` as extra delay instead is conservative). ``--fig6`` draws the map in the style of
seed 003 Fig. 6 (m_min over contact stiffness and damping for Delta = 5, 10, 15 ms).
``--twin SCENARIO`` checks the designer against the MuJoCo lab twin of the CISAS facility
(:mod:`hil_docking.twin_boundary`): the loop delay the twin measurably has, the exact bound for it,
and the twin's own boundary by bisection.
Exit status: 0 stable / report done, 1 the given mass is unstable, 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from hil_docking.designer import (delay_bound_s, exact_map, m_min_exact, m_min_pade, m_min_pade1, m_min_simulated,
                                  pade1_map, routh_hurwitz)
from hil_common.errors import ConfigError

FIG6_DELAYS_S = (0.005, 0.010, 0.015)


def draw_fig6(path: Path, k_range=(1e2, 1e5), b_range=(10.0, 2000.0), grid: int = 50, delays_s=FIG6_DELAYS_S) -> Path:
    """Seed 003 Fig. 6 style: log10 m_min (exact, filled) and Eq. (29) (dashed) over (k, b)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    ks = np.geomspace(*k_range, grid)
    bs = np.geomspace(*b_range, grid)
    fig, axes = plt.subplots(1, len(delays_s), figsize=(5.0 * len(delays_s), 4.4), sharey=True, squeeze=False)
    levels = np.arange(-3, 4.01, 0.5)
    for ax, d in zip(axes[0], delays_s):
        exact = exact_map(d, ks, bs)
        pade = pade1_map(d, ks, bs)
        cs = ax.contourf(ks, bs, np.log10(exact).T, levels=levels, cmap='viridis', extend='both')
        cl = ax.contour(ks, bs, np.log10(pade).T, levels=levels[::2], colors='w', linestyles='--', linewidths=0.8)
        ax.clabel(cl, fmt=lambda v: f'{10 ** v:g} kg', fontsize=7)
        ax.plot(ks, ks * d, 'r-', linewidth=1.2, label=r'$b = k\Delta$: no stable mass below')
        ax.set_xscale('log')
        ax.set_yscale('log')
        ax.set_ylim(*b_range)
        ax.set_xlabel('contact stiffness k [N/m]')
        ax.set_title(f'Delta = {d * 1e3:g} ms')
    axes[0, 0].set_ylabel('contact damping b [N s/m]')
    axes[0, 0].legend(loc='lower right', fontsize=7)
    fig.colorbar(cs, ax=axes[0].tolist(), label='log10 m_min [kg] (exact delay; dashed: Eq. 29, Pade-1)')
    fig.suptitle('Minimum simulated mass for stability (seed 003 Fig. 6)')
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def report(delay_s: float, k: float, b: float, mass_kg: float | None, simulate: bool, out=None,
           lag_s: float = 0.0) -> int:
    out = sys.stdout if out is None else out
    bound = delay_bound_s(k, b)
    if lag_s > 0.0:
        exact_lag = m_min_exact(delay_s, k, b, lag_s=lag_s)
    exact = m_min_exact(delay_s, k, b)
    pade1 = float(m_min_pade1(delay_s, k, b))
    pade2 = m_min_pade(delay_s, k, b, order=2)
    print(f'loop delay Delta = {delay_s * 1e3:.4g} ms, contact k = {k:g} N/m, b = {b:g} N s/m '
          f'(delay bound b/k = {bound * 1e3:.4g} ms)', file=out)
    print('minimum simulated (equivalent) mass:', file=out)
    print(f'  Eq. (29), first-order Pade (seed 003)  {pade1:12.6g} kg   ({(pade1 / exact - 1) * 100:+.1f} % vs exact: '
          f'{"optimistic" if pade1 < exact else "conservative"})', file=out)
    print(f'  second-order Pade                      {pade2:12.6g} kg   ({(pade2 / exact - 1) * 100:+.2f} %)', file=out)
    label = 'exact delay margin (use this)  ' if lag_s == 0.0 else 'exact delay margin, servo ignored'
    print(f'  {label}       {exact:12.6g} kg', file=out)
    if simulate:
        sim = m_min_simulated(delay_s, k, b)
        print(f'  time-domain simulation, exact delay    {sim:12.6g} kg   ({(sim / exact - 1) * 100:+.2f} %, '
              'bisection to 1 %)', file=out)
    if lag_s > 0.0:
        print(f'with the servo lag tau = {lag_s * 1e3:g} ms (delay bound Delta + tau < b/k):', file=out)
        print(f'  exact margin with the lag (use this)   {exact_lag:12.6g} kg', file=out)
        print(f'  lag counted as delay, Delta + tau      {m_min_exact(delay_s + lag_s, k, b):12.6g} kg   (conservative)',
              file=out)
        if simulate:
            sim = m_min_simulated(delay_s, k, b, lag_s=lag_s)
            print(f'  time-domain simulation with the lag    {sim:12.6g} kg   ({(sim / exact_lag - 1) * 100:+.2f} %)',
                  file=out)
        exact = exact_lag
    m_eval = exact if mass_kg is None else mass_kg
    rh = routh_hurwitz(delay_s, k, b, m_eval)
    print(f'Routh-Hurwitz, Eq. (26) (with the erratum 1/2 on k m Delta), at m = {m_eval:.6g} kg (Pade-1 model):', file=out)
    print(f'  m - b Delta/2                      = {rh.first:+.6g}', file=out)
    print(f'  b - k Delta/2                      = {rh.second:+.6g}', file=out)
    print(f'  (m - b Delta/2)(b - k Delta/2) - k m Delta/2 = {rh.third:+.6g}   -> {"stable" if rh.stable else "UNSTABLE"}',
          file=out)
    if mass_kg is None:
        return 0
    safe = mass_kg > exact
    print(f'verdict for m = {mass_kg:g} kg: {"STABLE" if safe else "UNSTABLE"} with the exact delay '
          f'(margin {(mass_kg / exact - 1) * 100:+.1f} %)', file=out)
    return 0 if safe else 1


def twin_report(scenario: str) -> None:
    """The boundary in the lab twin against the designer's (:mod:`hil_docking.twin_boundary`), printed."""
    from hil_docking.graph import scenario_file
    from hil_docking.scenario import load_docking_scenario
    from hil_docking.twin_boundary import m_min_in_twin, twin_loop_delay_s

    path = scenario_file(scenario)
    sc = load_docking_scenario(path)
    k, b, dt = sc.orbital_contact.stiffness_n_m, sc.orbital_contact.damping_ns_m, sc.control_period_s
    guess = float(m_min_exact(sc.loop_delay_s + 0.5 * dt, k, b))
    frequency_hz = float(np.sqrt(k / guess) / (2.0 * np.pi))
    tau = twin_loop_delay_s(path, frequency_hz)
    designer = float(m_min_exact(tau + 0.5 * dt, k, b))
    print(f'lab twin of {sc.name}: k = {k:g} N/m, b = {b:g} N s/m (the applied law, compensation none)')
    print(f'  loop delay measured at {frequency_hz:.1f} Hz (servo, sensor, filter): {tau * 1e3:.1f} ms '
          f'(scenario: {sc.loop_delay_s * 1e3:g} ms)')
    print(f"  designer's exact bound for it (+ half a control period): m_min = {designer:.3f} kg")
    lo, hi = m_min_in_twin(path, designer * 0.5, designer * 8.0, rel_tol=0.03)
    print(f'  the twin, bisected: unstable at {lo:.3f} kg, stable at {hi:.3f} kg ({hi / designer:.2f} x the bound)')


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog='docking_designer', description=__doc__.split('\n\n')[0])
    parser.add_argument('--delay-ms', type=float, help='total loop delay Delta = Delta_1 + Delta_2 [ms]')
    parser.add_argument('--stiffness', type=float, help='orbital contact stiffness k [N/m]')
    parser.add_argument('--damping', type=float, help='orbital contact damping b [N s/m]')
    parser.add_argument('--mass', type=float, default=None, help='simulated equivalent mass to check [kg]')
    parser.add_argument('--servo-lag-ms', type=float, default=0.0, help="robot servo first-order lag tau [ms] (default 0)")
    parser.add_argument('--simulate', action='store_true', help='also bisect on a time-domain simulation (a few s)')
    parser.add_argument('--fig6', type=Path, default=None, help='draw the Fig. 6 map to this PNG')
    parser.add_argument('--twin', metavar='SCENARIO', default=None,
                        help="find the boundary in the MuJoCo lab twin of the CISAS facility for a docking scenario (name "
                             "or YAML path): its measured loop delay, the designer's bound for it, the twin's bisected "
                             'boundary (about 20 s)')
    parser.add_argument('--k-range', type=float, nargs=2, default=(1e2, 1e5), metavar=('K_MIN', 'K_MAX'))
    parser.add_argument('--b-range', type=float, nargs=2, default=(10.0, 2000.0), metavar=('B_MIN', 'B_MAX'))
    parser.add_argument('--grid', type=int, default=50)
    args = parser.parse_args(argv)
    status = 0
    try:
        one = (args.delay_ms, args.stiffness, args.damping)
        if any(v is not None for v in one):
            if any(v is None for v in one):
                raise ConfigError('--delay-ms, --stiffness and --damping go together')
            if args.mass is not None and not (np.isfinite(args.mass) and args.mass > 0.0):
                raise ConfigError(f'mass_kg must be finite and > 0, got {args.mass!r}')
            if not (np.isfinite(args.servo_lag_ms) and args.servo_lag_ms >= 0.0):
                raise ConfigError(f'servo lag must be finite and >= 0 ms, got {args.servo_lag_ms!r}')
            status = report(args.delay_ms * 1e-3, args.stiffness, args.damping, args.mass, args.simulate,
                            lag_s=args.servo_lag_ms * 1e-3)
        elif args.twin is not None:
            twin_report(args.twin)
        elif args.fig6 is None:
            parser.print_help()
            return 2
        if args.fig6 is not None:
            for name, (lo, hi) in (('--k-range', args.k_range), ('--b-range', args.b_range)):
                if not (0.0 < lo < hi):
                    raise ConfigError(f'{name} must be 0 < min < max, got {lo!r} {hi!r}')
            print(f'wrote {draw_fig6(args.fig6, tuple(args.k_range), tuple(args.b_range), args.grid)}')
    except ValueError as exc:
        print(f'docking_designer: error: {exc}', file=sys.stderr)
        return 2
    return status


if __name__ == '__main__':
    sys.exit(main())
