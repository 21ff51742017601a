"""Slave-arm velocity command of seed 001, Eq. (2)/(3), computed in orbit.

::

    v_s,c(t) = K_s (G f_m(t - t_delay) - f_s(t))                     (force feedback, scaling)
             + K_c B(phi_s) (x_vir(t - t_delay) - x_s(t))             (coupling to the virtual arm)
             - D (v_s(t - dt) - v_s(t - 2 dt))                        (damping)

``f_m`` and ``x_vir`` arrive from earth ``t_delay`` late (they are the newest delivered
values); ``x_s`` is the slave end-effector position ``[r; phi]`` and ``f_s`` the wrench the
slave applies to the payload, both in the slave base frame (force about the end-effector
origin), so that a positive ``f_s`` along a pull opposes the pull, as Eq. (3) requires.
``v_s`` is the measured slave velocity; with high-ratio gears ``v_s ~= v_s,c``
(Appendix A), which is what the ROS node feeds back when no measurement is available.
Velocities are world-aligned ``[r_dot; omega_world]`` (:mod:`hil_teleop.coordinates`).

If the master command is missing or stale (``None``), the command is zero velocity.
Plain Python, no rclpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hil_teleop.coordinates import advance_pose_world, b_matrix, position_difference
from hil_teleop.gains import TeleopGains
from hil_teleop.virtual_kernel import slave_command
from hil_common.errors import ConfigError


@dataclass
class SlaveCommand:
    """One evaluation of Eq. (3), with its terms (each (6,), world-aligned)."""

    v_s_c: np.ndarray
    v_s_r: np.ndarray
    force_feedback: np.ndarray
    coupling: np.ndarray
    damping: np.ndarray
    stale: bool


def _finite6(name: str, v) -> np.ndarray:
    a = np.asarray(v, dtype=float).reshape(-1)
    if a.shape != (6,) or not math.isfinite(a.sum()):  # a NaN or inf makes the sum non-finite
        raise ConfigError(f'{name} must be 6 finite numbers, got {a.tolist()}')
    return a


class SlaveLaw:
    """Eq. (3) with the velocity history ``v_s(t - dt), v_s(t - 2 dt)`` of the damping term."""

    def __init__(self, gains: TeleopGains):
        self.gains = gains
        self.v_prev = np.zeros(6)    # v_s(t - dt)
        self.v_prev2 = np.zeros(6)   # v_s(t - 2 dt)
        # Load the compiled Eq. (3) now (cached on disk; ./dev compiles it), not in a node's first tick: one call on
        # scratch arrays of the types command passes
        zero = np.zeros(6)
        slave_command(zero, zero, zero, zero, zero, zero, zero, zero, zero, zero, *np.empty((5, 6)))

    def observe_velocity(self, v_s) -> None:
        """Record the slave velocity of the period that just ended (becomes ``v_s(t - dt)``)."""
        self.v_prev2, self.v_prev = self.v_prev, _finite6('v_s', v_s)

    def command(self, f_m_delayed, x_vir_delayed, x_s, f_s) -> SlaveCommand:
        """:meth:`command_reference` in one compiled call (:func:`hil_teleop.virtual_kernel.slave_command`; tested
        against it to 1e-12) for four float64 6-vectors; else, or where the call finds an input not finite, the
        reference, which names it. Same result and errors."""
        vectors = (f_m_delayed, x_vir_delayed, x_s, f_s)
        if not all(type(v) is np.ndarray and v.dtype == np.float64 and v.shape == (6,) for v in vectors):
            return self.command_reference(f_m_delayed, x_vir_delayed, x_s, f_s)
        gains = self.gains
        out = np.empty((5, 6))
        if not slave_command(f_m_delayed, x_vir_delayed, x_s, f_s, self.v_prev, self.v_prev2,
                             gains.k_s * gains.g_eff, gains.k_s_feedback, gains.k_c_eff, gains.d_eff, *out):
            return self.command_reference(f_m_delayed, x_vir_delayed, x_s, f_s)
        return SlaveCommand(out[0], out[1], out[2], out[3], out[4], False)

    def command_reference(self, f_m_delayed, x_vir_delayed, x_s, f_s) -> SlaveCommand:
        """Evaluate Eq. (3). ``f_m_delayed``/``x_vir_delayed`` are ``None`` when stale -> zero command.

        Raises ValueError on malformed or non-finite inputs (the caller counts them).
        """
        zero = np.zeros(6)
        x_s = _finite6('x_s', x_s)
        f_s = _finite6('f_s', f_s)
        if f_m_delayed is None or x_vir_delayed is None:
            return SlaveCommand(zero, zero, zero, zero, zero, True)
        f_m = _finite6('f_m', f_m_delayed)
        x_vir = _finite6('x_vir', x_vir_delayed)
        gains = self.gains
        v_r = gains.reference_velocity(f_m)                                      # Eq. (1)
        ff = -gains.k_s_feedback * f_s
        k_c = gains.k_c_eff
        coupling = k_c * (b_matrix(x_s[3:]) @ position_difference(x_vir, x_s)) if k_c.any() else zero
        damping = -gains.d_eff * (self.v_prev - self.v_prev2)
        return SlaveCommand(v_r + ff + coupling + damping, v_r, ff, coupling, damping, False)


class SlaveSide:
    """One control period of the orbit side: observe ``v_s``, Eq. (3), advance the commanded pose.

    The one implementation of the slave's observe -> command -> advance step, used by the
    slave-law node and both teleop runners (ideal arm and lab twin):

    1. ``v_s(t - dt)`` of Eq. (3)'s damping term is the *measured* slave velocity when there
       is one (forward kinematics of the joint states, or the simulated arm); without a
       measurement it is the command just issued (Appendix A: ``v_s ~= v_s,c``);
    2. :meth:`SlaveLaw.command` evaluates Eq. (3) (zero velocity on a stale command);
    3. the commanded end-effector pose advances by ``v_s,c dt`` (world-aligned), which a
       position-controlled slave robot then tracks.
    """

    def __init__(self, law: SlaveLaw, pose_ee_cmd):
        import pinocchio as pin

        self.law = law
        self.pose_ee_cmd = pin.SE3(pose_ee_cmd)

    def step(self, f_m_delayed, x_vir_delayed, x_s, f_s, dt: float, v_s_measured=None) -> SlaveCommand:
        """Raises ValueError on malformed or non-finite inputs (the commanded pose does not move then)."""
        if v_s_measured is not None:
            self.law.observe_velocity(v_s_measured)
            cmd = self.law.command(f_m_delayed, x_vir_delayed, x_s, f_s)
        else:
            cmd = self.law.command(f_m_delayed, x_vir_delayed, x_s, f_s)
            self.law.observe_velocity(cmd.v_s_c)
        self.pose_ee_cmd = advance_pose_world(self.pose_ee_cmd, cmd.v_s_c, dt)
        return cmd
