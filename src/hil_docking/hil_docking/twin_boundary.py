"""The designer's stability boundary found again in the MuJoCo lab twin (issue 13 item 4; no rclpy).

The designer (:mod:`hil_docking.designer`, seed 003 Eqs. 23-29) bounds the facility loop
``m x'' = -(k x_r + b x_r')`` with the robot's delay (and, beyond the seed, a first-order servo lag).
In the twin the loop runs through its real pieces instead (:class:`hil_docking.twin_mission.TwinDockingLab`):
the position servo of the CISAS arm (4 ms transport delay, the position loop, the joint PID), the
probe's spring of ``k_L``, MuJoCo's contact, the F/T sensor and the driver's chain. The simulated
mass is a 1-D admittance along the docking axis, pushed into the plate by a constant ``push_n``
(so the probe stays in contact and the loop is the designer's linear one around ``x0 = push / k``),
with the virtual force of compensation ``none`` (``f_V = (k - k_L) x + (b - b_L) x'``: the applied
law is the orbital ``k``, ``b``), integrated at the control period.

:func:`loop_growth_in_twin` is the growth of the oscillation envelope, as
:func:`hil_docking.designer.envelope_growth` measures it (max ``|x - x0|`` over the last quarter of
the run over the second quarter, about the settled position, neither below :data:`NOISE_FLOOR_M`;
> 1: unstable); :func:`m_min_in_twin` bisects on the mass.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hil_common.errors import ConfigError

#: Oscillations below this are the sensor's noise through the loop, not the loop's mode: a stable loop
#: settles to 4-9 um about its equilibrium (0.05 N noise, the 0.25 N dead band) and would read a growth
#: of that noise's ups and downs. 50 um is 1 % of the push's 4 mm.
NOISE_FLOOR_M = 5e-5


def loop_growth_in_twin(scenario_file: Path, mass_kg: float, periods: float = 30.0, push_n: float = 20.0,
                        launch_arguments: dict | None = None, series: list | None = None) -> float:
    """Envelope growth of the twin's facility loop for a simulated ``mass_kg`` (> 1: unstable; 1: both
    quarters at the noise floor, settled)."""
    from hil_docking.scenario import load_docking_scenario
    from hil_docking.twin_mission import TwinDockingLab

    if not mass_kg > 0.0:
        raise ConfigError(f'mass_kg must be > 0, got {mass_kg!r}')
    # the probe 1 mm before the plate: the push brings it into contact, the step excites the loop
    lab = TwinDockingLab(scenario_file, launch_arguments,
                         start_dr_lvlh=-1e-3 * load_docking_scenario(scenario_file).docking_axis_lvlh)
    sc = lab.scenario
    k, b = sc.orbital_contact.stiffness_n_m, sc.orbital_contact.damping_ns_m
    k_l, b_l = sc.facility.lumped.stiffness_n_m, sc.facility.lumped.damping_ns_m
    axis, dt = lab.axis, lab.dt
    x0 = push_n / k
    t_final = periods * 2.0 * np.pi * np.sqrt(mass_kg / k)
    try:
        lab.start()
        x, v = float(lab.mockup.pose_lvlh(lab.twin.joint_state('chaser').positions).translation @ axis), 0.0
        last, xs = None, []
        for _ in range(int(np.ceil(t_final / dt))):
            force, position, _t = lab.measure()
            p = float(position @ axis)
            rate = 0.0 if last is None else (p - last) / dt
            last = p
            f_v = (k - k_l) * p + (b - b_l) * rate if p > 0.0 else 0.0
            a = (push_n - force - f_v) / mass_kg
            x, v = x + v * dt + 0.5 * a * dt * dt, v + a * dt
            lab.command(x * axis, v * axis)
            xs.append(p)
            if series is not None:
                series.append((p, force, f_v))
            if abs(p - x0) > 10.0 * x0:            # far beyond the push's equilibrium: diverging
                return float('inf')
    finally:
        lab.close()
    xs = np.asarray(xs)
    n = len(xs)
    # about the equilibrium the loop settles at (the driver's dead band shifts it from x0 by up to 0.25 N / k)
    dev = np.abs(xs - np.median(xs[n // 2:]))
    late, early = (max(float(d.max()), NOISE_FLOOR_M) for d in (dev[3 * n // 4:], dev[n // 4:n // 2]))
    return late / early


def m_min_in_twin(scenario_file: Path, lo_kg: float, hi_kg: float, rel_tol: float = 0.05, periods: float = 30.0,
                  launch_arguments: dict | None = None) -> tuple[float, float]:
    """The bracket ``(unstable, stable)`` of the twin's boundary in ``m``, bisected (geometrically) from
    ``(lo_kg, hi_kg)``, whose ends must be unstable and stable, to ``rel_tol``."""
    growth = {m: loop_growth_in_twin(scenario_file, m, periods, launch_arguments=launch_arguments) for m in (lo_kg, hi_kg)}
    if not (0.0 < lo_kg < hi_kg and growth[lo_kg] > 1.0 >= growth[hi_kg]):
        raise ConfigError(f'bracket ({lo_kg}, {hi_kg}) kg does not hold the boundary (growth {growth})')
    while hi_kg / lo_kg - 1.0 > rel_tol:
        mid = float(np.sqrt(lo_kg * hi_kg))
        if loop_growth_in_twin(scenario_file, mid, periods, launch_arguments=launch_arguments) > 1.0:
            lo_kg = mid
        else:
            hi_kg = mid
    return lo_kg, hi_kg


def twin_loop_delay_s(scenario_file: Path, frequency_hz: float, amplitude_m: float = 1e-3, cycles: float = 8.0,
                      launch_arguments: dict | None = None) -> float:
    """The delay the twin's facility puts into the loop at ``frequency_hz``, measured as a lab would: the
    mock-up commanded along the docking axis in a sine about 2 mm into the plate, and the force the driver
    chain reports fitted to the lumped law of the *commanded* motion delayed by ``tau``
    (``k_L x_c(t - tau) + b_L x_c'(t - tau)``, least squares over ``tau`` in 0.1 ms steps, the first cycle
    left out). It holds the transport delay, the servo's lag, the sensor's filter and the sampling."""
    from hil_docking.scenario import load_docking_scenario
    from hil_docking.twin_mission import TwinDockingLab

    sc = load_docking_scenario(scenario_file)
    lab = TwinDockingLab(scenario_file, launch_arguments, start_dr_lvlh=-1e-3 * sc.docking_axis_lvlh)
    k_l, b_l = sc.facility.lumped.stiffness_n_m, sc.facility.lumped.damping_ns_m
    axis, dt, w = lab.axis, lab.dt, 2.0 * np.pi * frequency_hz
    centre = 2e-3 + amplitude_m
    try:
        lab.start()
        for k in range(int(0.5 / dt)):                      # into the plate, and settle
            lab.measure()
            lab.command(min(1.0, k * dt / 0.3) * centre * axis, np.zeros(3))
        t, f = [], []
        for k in range(int(np.ceil(cycles / frequency_hz / dt))):
            force, _p, _ts = lab.measure()
            s = (k + 1) * dt
            lab.command((centre + amplitude_m * np.sin(w * s)) * axis, amplitude_m * w * np.cos(w * s) * axis)
            t.append(k * dt)
            f.append(force)
    finally:
        lab.close()
    t, f = np.asarray(t), np.asarray(f)
    keep = t >= 1.0 / frequency_hz

    def law(tau):
        s = t[keep] - tau
        return k_l * (centre + amplitude_m * np.sin(w * s)) + b_l * amplitude_m * w * np.cos(w * s)
    taus = np.arange(0.0, 0.05, 1e-4)
    errors = [float(np.sum((f[keep] - law(tau)) ** 2)) for tau in taus]
    return float(taus[int(np.argmin(errors))])
