"""Orbit side of the lockstep simulation: slave arm, grip contact and the payload in the loop.

Seed 001's HIL: the slave arm grips a grip mounted on a motion table through an F/T sensor;
the measured wrench drives the massive payload's dynamics and the table reproduces the
computed motion. Here:

* :class:`SlaveArm` — a velocity-commanded arm per Appendix A, Eq. (19): with high-ratio
  gears ``v_s ~= v_s,c``; what is left is the servo's finite stiffness against the external
  force (Eq. 19's second term, a constant velocity droop ``A f_s`` here) and its bandwidth
  (a first-order lag ``tau`` standing for the first term)::

      tau v_s_dot = (v_s,c - A f_s) - v_s

  The end-effector pose integrates the world-aligned velocity
  (``p += r_dot dt``, ``R <- exp(omega dt) R``).
* :class:`GripContact` — the grip/sensor/structure stiffness between the end effector and
  the payload's grip point: a spring-damper on the relative pose (``log`` of the relative
  rotation for the torque). Its value is the wrench the slave applies to the payload,
  which is what the wrist F/T measures (sign of Eq. 3: positive along a pull).
* :class:`PayloadInTheLoop` — the payload admittance: :class:`hil_dynamics.client.ClientAdmittance`
  (seed 004 Eq. 11) with a zero nominal velocity, i.e. the rigid body ``M V_dot + C(V) V = F``
  integrated on SE(3), fed the grip wrench transformed to the payload CoM.

Plain Python, no rclpy.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from hil_dynamics import kernels
from hil_dynamics.client import ClientAdmittance
from hil_dynamics.rigid_body import RigidBody
from hil_dynamics.se3 import cross3, transform_wrench
from hil_teleop.coordinates import advance_pose_world, x_from_pose
from hil_teleop.gains import diag6
from hil_teleop import orbit_kernel as ok
from hil_common.errors import ConfigError


class SlaveArm:
    """Velocity-commanded slave arm (Appendix A): first-order servo with force droop."""

    def __init__(self, pose_ee_in_base: pin.SE3, droop, tau_s: float):
        if not (math.isfinite(tau_s) and tau_s >= 0.0):
            raise ConfigError(f'tau_s must be finite and >= 0, got {tau_s!r}')
        self.droop = diag6('droop', droop)
        self.tau_s = float(tau_s)
        self.pose = pin.SE3(pose_ee_in_base)
        self.v = np.zeros(6)

    @property
    def x(self) -> np.ndarray:
        return x_from_pose(self.pose)

    def lag_factor(self, dt: float) -> float:
        """The servo lag's exact factor over ``dt``: ``v <- v + alpha (target - v)``."""
        return 1.0 if self.tau_s == 0.0 else -math.expm1(-dt / self.tau_s)

    def step(self, v_c, f_s, dt: float) -> None:
        target = np.asarray(v_c, dtype=float) - self.droop * np.asarray(f_s, dtype=float)
        alpha = self.lag_factor(dt)
        v_old = self.v
        self.v = v_old + alpha * (target - v_old)
        v_mid = 0.5 * (v_old + self.v)
        self.pose = advance_pose_world(self.pose, v_mid, dt)


class GripContact:
    """Spring-damper between end effector and grip: the wrist wrench ``f_s`` (world axes, about the grip)."""

    def __init__(self, stiffness, damping):
        self.k = diag6('contact stiffness', stiffness)
        self.d = diag6('contact damping', damping)

    def wrench(self, pose_ee: pin.SE3, v_ee, pose_grip: pin.SE3, v_grip) -> np.ndarray:
        err = np.concatenate((pose_ee.translation - pose_grip.translation,
                              pin.log3(pose_ee.rotation @ pose_grip.rotation.T)))
        return self.k * err + self.d * (np.asarray(v_ee) - np.asarray(v_grip))


class PayloadInTheLoop:
    """Seed 001's HIL payload: ClientAdmittance with zero nominal velocity and the payload's inertia."""

    def __init__(self, body: RigidBody, pose_payload_in_base: pin.SE3, pose_grip_in_payload: pin.SE3 | None = None):
        self.body = body
        self.rule = ClientAdmittance(body, np.zeros(6))
        self.pose_payload_0 = pin.SE3(pose_payload_in_base)
        self.pose_grip_in_payload = pin.SE3.Identity() if pose_grip_in_payload is None else pin.SE3(pose_grip_in_payload)

    @property
    def pose(self) -> pin.SE3:
        """Payload CoM frame in the base: ``g_0 g_c`` (the nominal stays at ``g_0``)."""
        return self.pose_payload_0 * self.rule.state.pose_client_in_nominal

    @property
    def twist_body(self) -> np.ndarray:
        return self.rule.state.twist_client_rel_body

    def grip(self) -> tuple[pin.SE3, np.ndarray]:
        """Grip pose in the base and its world-aligned velocity ``[r_dot; omega_world]``."""
        g = self.pose
        v = self.twist_body
        r_grip = self.pose_grip_in_payload.translation
        rot = g.rotation
        return g * self.pose_grip_in_payload, np.concatenate((rot @ (v[:3] + cross3(v[3:], r_grip)), rot @ v[3:]))

    def wrench_com_body(self, wrench_world_at_grip) -> np.ndarray:
        """World-axes wrench about the grip point -> body wrench about the CoM."""
        w = np.asarray(wrench_world_at_grip, dtype=float)
        r_grip_world = (self.pose * self.pose_grip_in_payload).rotation
        w_grip = np.concatenate((r_grip_world.T @ w[:3], r_grip_world.T @ w[3:]))
        return transform_wrench(self.pose_grip_in_payload, w_grip)

    def step(self, wrench_world_at_grip, dt: float) -> None:
        self.rule.step(self.wrench_com_body(wrench_world_at_grip), dt)

    def momentum_world(self) -> np.ndarray:
        """``[p; L]`` in base axes, L about the base origin."""
        return self.body.momentum_in_parent(self.pose, self.twist_body)


class OrbitSide:
    """One control period of seed 001's orbit side in the lockstep (:func:`hil_bringup.runners.teleop.run_teleop`):
    the grip's pose and velocity, the wrist wrench ``f_s`` (:class:`GripContact`), ``x_s``, the slave's step
    (:class:`hil_teleop.slave_law.SlaveSide`: Eq. 3 on the measured ``v_s``, the commanded pose), then the arm
    (:class:`SlaveArm`) and the payload (:class:`PayloadInTheLoop`) over ``dt`` with ``f_s`` held.

    :meth:`step_reference` runs the rule objects; :meth:`step` runs the same period in one compiled call
    (:func:`hil_teleop.orbit_kernel.orbit_step`, tested against it to 1e-12) on a state array entered from the
    objects. While :meth:`step` runs, the objects lag: :meth:`sync` writes the state back into them (the runner
    calls it at the end). Both return the period's rows (``orbit_kernel.O_*``: ``f_s``, ``x_s``, Eq. 3's command and
    terms, the grip's ``x`` and velocity, the arm's new ``v_s``) and whether the command was stale."""

    def __init__(self, slave, arm: SlaveArm, contact: GripContact, payload: PayloadInTheLoop, dt: float):
        if not (math.isfinite(dt) and dt > 0.0):
            raise ConfigError(f'dt must be finite and > 0, got {dt!r}')
        self.slave, self.arm, self.contact, self.payload, self.dt = slave, arm, contact, payload, float(dt)
        gains = slave.law.gains
        self._c6 = np.array([contact.k, contact.d, arm.droop, gains.k_s * gains.g_eff, gains.k_s_feedback,
                             gains.k_c_eff, gains.d_eff], dtype=float)
        self._cs = np.zeros(ok.N_CS)
        self._s = np.zeros(ok.N_S)
        self._objects_current = True
        self._enter()

    @classmethod
    def of_config(cls, c, law) -> 'OrbitSide':
        """The orbit side of a run of ``c`` (:class:`hil_teleop.config.TeleopConfig`) with the slave law ``law``: the
        arm and the payload's grip at ``x_grip_0``, the payload at rest."""
        from hil_teleop.coordinates import pose_from_x
        from hil_teleop.slave_law import SlaveSide

        pose_grip_0 = pose_from_x(c.x_grip_0)
        payload = PayloadInTheLoop(RigidBody(c.payload_mass_kg, c.payload_inertia()), pose_grip_0)
        return cls(SlaveSide(law, pose_grip_0), SlaveArm(pose_grip_0, c.arm_droop, c.arm_tau_s),
                   GripContact(c.grip_contact_k, c.grip_contact_d), payload, c.dt)

    def _enter(self) -> None:
        """The state array (and the constants that follow the objects) from the objects."""
        s, cs, rule, law = self._s, self._cs, self.payload.rule, self.slave.law
        kernels.pose_array(self.arm.pose, s[ok.S_ARM:ok.S_ARM + 12])
        s[ok.S_ARM_V:ok.S_ARM_V + 6] = self.arm.v
        (g_n, v_n, g_c, v_c), (mass, inertia9, inertia_inv9, m6, m6_inv) = rule.step_arrays()
        for at, a in ((ok.S_GN, g_n), (ok.S_VN, v_n), (ok.S_GC, g_c), (ok.S_VC, v_c), (ok.S_VPREV, law.v_prev),
                      (ok.S_VPREV2, law.v_prev2)):
            s[at:at + a.shape[0]] = a
        kernels.pose_array(self.slave.pose_ee_cmd, s[ok.S_EE_CMD:ok.S_EE_CMD + 12])
        s[ok.S_T] = rule.state.t
        kernels.pose_array(self.payload.pose_payload_0, cs[ok.CS_POSE_0:ok.CS_POSE_0 + 12])
        kernels.pose_array(self.payload.pose_grip_in_payload, cs[ok.CS_GRIP:ok.CS_GRIP + 12])
        cs[ok.CS_INERTIA:ok.CS_INERTIA + 9], cs[ok.CS_INERTIA_INV:ok.CS_INERTIA_INV + 9] = inertia9, inertia_inv9
        cs[ok.CS_MASS], cs[ok.CS_ALPHA], cs[ok.CS_DT] = mass, self.arm.lag_factor(self.dt), self.dt
        self._nom = np.array([m6, m6_inv], dtype=float)
        self._objects_current = True

    def sync(self) -> None:
        """The objects take the state :meth:`step` moved on (their pose objects built anew)."""
        if self._objects_current:
            return
        s, law = self._s, self.slave.law
        self.arm.pose = kernels.array_pose(s[ok.S_ARM:ok.S_ARM + 12])
        self.arm.v = s[ok.S_ARM_V:ok.S_ARM_V + 6].copy()
        law.v_prev, law.v_prev2 = s[ok.S_VPREV:ok.S_VPREV + 6].copy(), s[ok.S_VPREV2:ok.S_VPREV2 + 6].copy()
        self.slave.pose_ee_cmd = kernels.array_pose(s[ok.S_EE_CMD:ok.S_EE_CMD + 12])
        self.payload.rule.adopt(float(s[ok.S_T]), tuple(s[at:at + n].copy() for at, n in (
            (ok.S_GN, 12), (ok.S_VN, 6), (ok.S_GC, 12), (ok.S_VC, 6))))
        self._objects_current = True

    def step(self, command) -> tuple[np.ndarray, bool]:
        """One period in one compiled call; ``command`` the held delayed ``(f_m, x_vir)`` or None (stale). Where the
        call refuses (something not finite), :meth:`step_reference` runs it and raises as the rule objects do."""
        fresh = command is not None
        f_m, x_vir = command if fresh else (_ZERO6, _ZERO6)
        if not (type(f_m) is np.ndarray and type(x_vir) is np.ndarray and f_m.dtype == np.float64
                and x_vir.dtype == np.float64 and f_m.shape == x_vir.shape == (6,)):
            return self.step_reference(command)
        out = np.empty((ok.N_O, 6))
        if ok.orbit_step(self._s, self._c6, self._cs, self._nom, f_m, x_vir, fresh, out) != ok.OK:
            return self.step_reference(command)
        self._objects_current = False
        return out, not fresh

    def step_reference(self, command) -> tuple[np.ndarray, bool]:
        """The period on the rule objects (readable; the runner's loop body before the compiled call)."""
        self.sync()
        arm, payload, dt = self.arm, self.payload, self.dt
        try:
            grip_pose, grip_v = payload.grip()
            f_s = self.contact.wrench(arm.pose, arm.v, grip_pose, grip_v)
            x_s = x_from_pose(arm.pose)
            f_m_d, x_vir_d = (None, None) if command is None else command
            cmd = self.slave.step(f_m_d, x_vir_d, x_s, f_s, dt, v_s_measured=arm.v)
            arm.step(cmd.v_s_c, f_s, dt)
            payload.step(f_s, dt)
        finally:
            self._enter()                 # the state array follows the objects, also after a refused input
        out = np.empty((ok.N_O, 6))
        for row, value in ((ok.O_F_S, f_s), (ok.O_X_S, x_s), (ok.O_V_C, cmd.v_s_c), (ok.O_V_R, cmd.v_s_r),
                           (ok.O_FF, cmd.force_feedback), (ok.O_COUPLING, cmd.coupling), (ok.O_DAMPING, cmd.damping),
                           (ok.O_X_P, x_from_pose(grip_pose)), (ok.O_V_P, grip_v), (ok.O_V_S, arm.v)):
            out[row] = value
        return out, cmd.stale


_ZERO6 = np.zeros(6)
