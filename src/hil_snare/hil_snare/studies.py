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
    cases = {'case 3 (Table 3)': HtvCaptureConfig,
             'case study 0.32 m/s': lambda: HtvCaptureConfig(grapple_in_corner=True, lee_velocity_mps=(0.0, 0.0, 0.32))}
    rows = []
    for name, make in cases.items():
        ref, _ = _run(make(), reference_ms * 1e-3, duration_s)
        for h in steps_ms:
            a, cpu = _run(make(), h * 1e-3, duration_s)
            if not np.all(np.isfinite(a['rel_position_m'])):
                rows.append((name, h, float('inf'), float('inf'), cpu))
                out(f'{name}: dt {h} ms diverged')
                continue
            err = np.abs(a['rel_position_m'] - ref['rel_position_m']).max()
            ferr = abs(a['normal_force_n'].max() - ref['normal_force_n'].max()) / ref['normal_force_n'].max()
            rows.append((name, h, err, ferr, cpu))
            out(f'{name}: dt {h} ms: max |position error| {err * 1e3:.4f} mm, peak force error {ferr * 100:.3f} %, '
                f'cpu {cpu:.1f} s for {duration_s} s')
    return rows


if __name__ == '__main__':
    if sys.argv[1:] == ['step']:
        step_size_study()
