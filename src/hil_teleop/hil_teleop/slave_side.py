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

from hil_dynamics.client import ClientAdmittance
from hil_dynamics.rigid_body import RigidBody
from hil_dynamics.se3 import cross3, transform_wrench
from hil_teleop.coordinates import advance_pose_world, x_from_pose
from hil_teleop.gains import diag6
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

    def step(self, v_c, f_s, dt: float) -> None:
        target = np.asarray(v_c, dtype=float) - self.droop * np.asarray(f_s, dtype=float)
        alpha = 1.0 if self.tau_s == 0.0 else -math.expm1(-dt / self.tau_s)
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
