"""Deterministic lockstep runner of seed 001's delayed teleoperation (no DDS).

One loop at the controller period ``dt`` wires the same rule objects the ROS nodes use:

earth:  operator ``f_m(t)`` -> :class:`VirtualEnvironment` (Eqs. 4-10) -> uplink
orbit:  uplink (``f_m``, ``x_vir``, ``t_delay`` late) -> :class:`HeldCommand` ->
        :class:`SlaveLaw` (Eq. 3) -> :class:`SlaveArm` (Appendix A) <-> :class:`GripContact`
        (wrist wrench ``f_s``) <-> :class:`PayloadInTheLoop` (ClientAdmittance, zero nominal)
        -> downlink (``x_s``, ``f_s``) back to earth.

Per step, at time ``t_k = k dt``: the operator and the virtual environment advance, the
uplink message is sent; the orbit side takes whatever is due, measures ``f_s`` on the
current state, computes Eq. (3), then the arm and the payload advance together over
``dt`` with ``f_s`` held (a sampled sensor): :class:`hil_teleop.slave_side.OrbitSide`, one compiled call a
period on the objects' state (its reference runs the objects). Recorded arrays are per step (rows = samples).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from hil_teleop import orbit_kernel as ok
from hil_teleop.config import TeleopConfig, TeleopRun, earth_and_link
from hil_teleop.slave_side import OrbitSide


def run_teleop(config: TeleopConfig, operator: Callable[[float], np.ndarray], duration_s: float,
               uplink_tamper: Callable[[float], bool] | None = None, compiled_orbit: bool = True) -> TeleopRun:
    """Run the closed loop for ``duration_s``. ``uplink_tamper(t)`` True suppresses the uplink send (outage tests).
    The orbit side runs in one compiled call a period (:meth:`OrbitSide.step`); ``compiled_orbit=False`` runs its
    readable reference (:meth:`OrbitSide.step_reference`) instead, for the tests that compare both."""
    c = config
    dt = c.dt
    link = earth_and_link(c)
    venv, uplink, downlink, held = link.venv, link.uplink, link.downlink, link.held
    orbit = OrbitSide.of_config(c, link.law)
    orbit_step = orbit.step if compiled_orbit else orbit.step_reference
    n = int(round(duration_s / dt))
    earth = np.zeros((n, 5, 6))          # f_m, x_vir, v_vir, f_vir, x_tv
    rows = np.zeros((n, ok.N_O, 6))      # the orbit side's (orbit_kernel.O_*)
    x_s_earth_rec = np.full((n, 6), np.nan)
    stale = np.zeros(n, dtype=bool)
    queue = np.zeros(n, dtype=int)
    t_axis = np.arange(n) * dt
    x_s_earth = None
    for k in range(n):
        t = t_axis[k]
        # -- earth: operator and virtual environment, uplink send
        f_m = np.asarray(operator(t), dtype=float)
        vs = venv.step(f_m)
        if uplink_tamper is None or not uplink_tamper(t):
            uplink.send(t, (f_m, vs.x_vir))
        # -- orbit: delivered commands, then the period (wrist wrench, Eq. 3, arm and payload)
        for t_send, msg in uplink.receive(t + 1e-9):
            held.update(t_send, msg)
        out, stale[k] = orbit_step(held.get(t))
        x_s, f_s = out[ok.O_X_S], out[ok.O_F_S]
        downlink.send(t, (x_s, f_s))
        for _, (xs_msg, _) in downlink.receive(t + 1e-9):
            x_s_earth = xs_msg
        e = earth[k]
        e[0], e[1], e[2], e[3], e[4] = f_m, vs.x_vir, vs.v_vir, vs.f_vir, vs.x_t
        rows[k] = out
        if x_s_earth is not None:
            x_s_earth_rec[k] = x_s_earth
        queue[k] = uplink.queue_length
    orbit.sync()
    return TeleopRun(t_axis, earth[:, 0], earth[:, 1], earth[:, 2], earth[:, 3], earth[:, 4], rows[:, ok.O_V_R],
                     rows[:, ok.O_V_C], rows[:, ok.O_V_S], rows[:, ok.O_X_S], rows[:, ok.O_F_S], rows[:, ok.O_X_P],
                     rows[:, ok.O_V_P], stale, queue, x_s_earth_rec, orbit.payload.momentum_world(), c.delay_s, dt)
