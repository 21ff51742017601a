"""Offline studies behind docs/snare.md: the integrator step-size study (plain Python).

``python -m hil_snare.studies step`` runs seed 000's case 3 (Table 3 start) and the case study
at 0.32 m/s with RK4/RKMK4 at several fixed steps and compares each with a 0.25 ms reference:
the GF's relative position error and the peak wire force error.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from hil_snare.runner import HtvCaptureConfig, build_htv_capture, run


def _run(cfg: HtvCaptureConfig, dt: float, duration: float, every_s: float = 0.02):
    cfg.dt_s = dt
    system, ctrl, poses, x = build_htv_capture(cfg)
    t0 = time.process_time()
    trace, _, _ = run(system, ctrl, poses, x, duration, dt, cfg.control_period_s, record_every=max(1, round(every_s / dt)))
    return trace.arrays(), time.process_time() - t0


def step_size_study(steps_ms=(0.5, 1.0, 2.0, 4.0), reference_ms=0.25, duration_s=4.0, out=print):
    """Each case against the reference step: case 3 over its whole 10 s (through the pinch at the drive's
    stall), the case study over ``duration_s``. Rows ``(case, dt_ms, max position error [m], peak force
    error (fraction), cpu [s])``; the printout adds the largest wire-force error at any recorded instant."""
    cases = {'case 3 (Table 3)': (HtvCaptureConfig, 10.0),
             'case study 0.32 m/s': (lambda: HtvCaptureConfig(grapple_in_corner=True, lee_velocity_mps=(0.0, 0.0, 0.32)),
                                     duration_s)}
    rows = []
    for name, (make, duration_s) in cases.items():
        ref, _ = _run(make(), reference_ms * 1e-3, duration_s)
        for h in steps_ms:
            a, cpu = _run(make(), h * 1e-3, duration_s)
            if not np.all(np.isfinite(a['rel_position_m'])):
                rows.append((name, h, float('inf'), float('inf'), cpu))
                out(f'{name}: dt {h} ms diverged')
                continue
            err = np.abs(a['rel_position_m'] - ref['rel_position_m']).max()
            ferr = abs(a['normal_force_n'].max() - ref['normal_force_n'].max()) / ref['normal_force_n'].max()
            series = np.abs(a['normal_force_n'] - ref['normal_force_n']).max()
            rows.append((name, h, err, ferr, cpu))
            out(f'{name}: dt {h} ms: max |position error| {err * 1e3:.4f} mm, peak force error {ferr * 100:.3f} %, '
                f'largest wire force error {series:.2f} N, cpu {cpu:.1f} s for {duration_s} s')
    return rows


if __name__ == '__main__':
    if sys.argv[1:] == ['step']:
        step_size_study()


def case_study(lo=0.03, hi=0.6, iterations=5, out=print):
    """Seed 000 §6: bisection of the limiting LEE speed, nominal and with mu, c, tightening time varied."""
    import dataclasses

    from hil_snare.contact import SnareWireLaw
    from hil_snare.runner import IntegrationDiverged, bisect_capture_limit

    variants = {'nominal (Table 4)': {}, 'mu 0.04': {'law': SnareWireLaw(mu=0.04)}, 'mu 0.16': {'law': SnareWireLaw(mu=0.16)},
                'c 0.4e7': {'law': SnareWireLaw(c_kg_per_sm2=0.415e7)}, 'c 1.7e7': {'law': SnareWireLaw(c_kg_per_sm2=1.66e7)},
                'tightening 3 s': {'tightening_time_s': 3.0}, 'tightening 8 s': {'tightening_time_s': 8.0}}
    results = {}
    for name, over in variants.items():
        def make(v, over=over):
            cfg = HtvCaptureConfig(grapple_in_corner=True, lee_velocity_mps=(0.0, 0.0, v), duration_s=6.0)
            cfg = dataclasses.replace(cfg, **over)
            cfg.duration_s = cfg.tightening_time_s + 1.0
            return cfg
        try:
            lo_v, hi_v, log = bisect_capture_limit(make, lo, hi, iterations)
        except IntegrationDiverged as exc:
            out(f'{name}: diverged ({exc})')
            continue
        results[name] = (lo_v, hi_v, log)
        out(f'{name}: captured up to {lo_v}, failed at {hi_v}; ' + '; '.join(f'{v:.3f}: {o.reason}' for v, o in log))
    return results


if __name__ == '__main__' and sys.argv[1:] == ['case']:
    case_study()
