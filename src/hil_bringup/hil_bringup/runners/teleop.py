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
``dt`` with ``f_s`` held (a sampled sensor). Recorded arrays are per step (rows = samples).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from hil_dynamics.rigid_body import RigidBody
from hil_teleop.config import TeleopConfig, TeleopRun, earth_and_link
from hil_teleop.coordinates import pose_from_x, x_from_pose
from hil_teleop.slave_law import SlaveSide
from hil_teleop.slave_side import GripContact, PayloadInTheLoop, SlaveArm


def run_teleop(config: TeleopConfig, operator: Callable[[float], np.ndarray], duration_s: float,
               uplink_tamper: Callable[[float], bool] | None = None) -> TeleopRun:
    """Run the closed loop for ``duration_s``. ``uplink_tamper(t)`` True suppresses the uplink send (outage tests)."""
    c = config
    dt = c.dt
    pose_grip_0 = pose_from_x(c.x_grip_0)
    payload = PayloadInTheLoop(RigidBody(c.payload_mass_kg, c.payload_inertia()), pose_grip_0)
    arm = SlaveArm(pose_grip_0, c.arm_droop, c.arm_tau_s)
    contact = GripContact(c.grip_contact_k, c.grip_contact_d)
    link = earth_and_link(c)
    venv, uplink, downlink, held = link.venv, link.uplink, link.downlink, link.held
    slave = SlaveSide(link.law, pose_grip_0)
    n = int(round(duration_s / dt))
    rec = {k: np.zeros((n, 6)) for k in ('f_m', 'x_vir', 'v_vir', 'f_vir', 'x_tv', 'v_s_r', 'v_s_c', 'v_s', 'x_s',
                                          'f_s', 'x_p', 'v_p', 'x_s_earth')}
    rec['x_s_earth'][:] = np.nan
    stale = np.zeros(n, dtype=bool)
    queue = np.zeros(n, dtype=int)
    t_axis = np.arange(n) * dt
    x_s_earth = np.full(6, np.nan)
    for k in range(n):
        t = t_axis[k]
        # -- earth: operator and virtual environment, uplink send
        f_m = np.asarray(operator(t), dtype=float)
        vs = venv.step(f_m)
        if uplink_tamper is None or not uplink_tamper(t):
            uplink.send(t, (f_m, vs.x_vir))
        # -- orbit: delivered commands, wrist wrench, Eq. (3)
        for t_send, msg in uplink.receive(t + 1e-9):
            held.update(t_send, msg)
        cmd_in = held.get(t)
        grip_pose, grip_v = payload.grip()
        f_s = contact.wrench(arm.pose, arm.v, grip_pose, grip_v)
        x_s = x_from_pose(arm.pose)
        f_m_d, x_vir_d = (None, None) if cmd_in is None else cmd_in
        cmd = slave.step(f_m_d, x_vir_d, x_s, f_s, dt, v_s_measured=arm.v)   # the velocity-commanded arm
        arm.step(cmd.v_s_c, f_s, dt)
        payload.step(f_s, dt)
        downlink.send(t, (x_s, f_s))
        for _, (xs_msg, _) in downlink.receive(t + 1e-9):
            x_s_earth = xs_msg
        for key, val in (('f_m', f_m), ('x_vir', vs.x_vir), ('v_vir', vs.v_vir), ('f_vir', vs.f_vir),
                         ('x_tv', vs.x_t), ('v_s_r', cmd.v_s_r), ('v_s_c', cmd.v_s_c), ('v_s', arm.v),
                         ('x_s', x_s), ('f_s', f_s), ('x_p', x_from_pose(grip_pose)), ('v_p', grip_v),
                         ('x_s_earth', x_s_earth)):
            rec[key][k] = val
        stale[k] = cmd.stale
        queue[k] = uplink.queue_length
    return TeleopRun(t_axis, rec['f_m'], rec['x_vir'], rec['v_vir'], rec['f_vir'], rec['x_tv'], rec['v_s_r'],
                     rec['v_s_c'], rec['v_s'], rec['x_s'], rec['f_s'], rec['x_p'], rec['v_p'], stale, queue,
                     rec['x_s_earth'], payload.momentum_world(), c.delay_s, dt)
