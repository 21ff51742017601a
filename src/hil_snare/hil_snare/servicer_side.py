"""The SSRMS as the servicer side of a HIL snare capture (plain Python, no rclpy).

In the lab the wires are physical: the LEE mock-up on one robot closes on the GF mock-up on the
other, and the F/T sensor measures the wire wrench. This rule plays the flexible-joint arm of
seed 000 Eqs. (3)-(5) around that measurement: the measured wrench at the LEE enters through
``J_e^T F_e``, the camera-frame PD (Eqs. 6-7) drives the motors, and the LEE's pose and body
twist come out, to be streamed to the robot carrying the LEE mock-up.

It is :class:`hil_snare.system.SnareSystem` without the simulated target and wires: the same
joint law, the same model and the same controller; one RK4 step per sample with the wrench held.
Not wired into a node or launch file yet (docs/snare.md, Open).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from hil_snare.arms import build_model
from hil_snare.control import CameraFrameController
from hil_snare.system import ArmConfig
from hil_common.errors import ConfigError


class FlexibleArmServicer:
    def __init__(self, arm: ArmConfig, q0, kp: float = 120.0, kd: float = 240.0):
        if arm.base != 'fixed':
            raise ConfigError("the servicer side needs a fixed base (arm.base = 'fixed')")
        self.arm = arm
        self.model = build_model(arm.spec, 'fixed', arm.pose_base_in_world)
        self.data = self.model.createData()
        self.frame_id = self.model.getFrameId('lee')
        self.n = arm.spec.n_joints
        q0 = np.asarray(q0, dtype=float)
        self.x = np.concatenate([q0, np.zeros(self.n), q0, np.zeros(self.n)])   # q_a, v_a, q_m, v_m
        self.controller = CameraFrameController(self.model, q0, kp, kd)
        self.tau_c = np.zeros(self.n)
        self.t = 0.0
        self._derivative(self.x, np.zeros(6))    # compile the joint law now, not at the first step of a live run

    def _derivative(self, x, wrench_lee_local):
        n = self.n
        q, v, qm, vm = x[:n], x[n:2 * n], x[2 * n:3 * n], x[3 * n:]
        tau_g = self.arm.joint_law.torque(qm - q, vm - v)
        jac = pin.computeFrameJacobian(self.model, self.data, q, self.frame_id, pin.LOCAL)
        a = pin.aba(self.model, self.data, q, v, tau_g + jac.T @ wrench_lee_local)
        am = (self.tau_c - self.arm.motor_damping_nms_per_rad * vm - tau_g) / self.arm.motor_inertia_kgm2
        return np.concatenate([v, a, vm, am])

    def step(self, dt_s: float, wrench_lee_local, twist_cmd_camera=None, control: bool = True):
        """Advance by ``dt_s`` with the measured LEE wrench ``[f; tau]`` (LEE frame, about its origin) held.

        Returns ``(pose_lee_in_world, twist_lee_body)`` at the end of the step.
        """
        w = np.asarray(wrench_lee_local, dtype=float)
        n = self.n
        if control:
            self.tau_c = self.controller.update(dt_s, self.x[:n], self.x[n:2 * n], twist_cmd_camera)
        x = self.x
        k1 = self._derivative(x, w)
        k2 = self._derivative(x + 0.5 * dt_s * k1, w)
        k3 = self._derivative(x + 0.5 * dt_s * k2, w)
        k4 = self._derivative(x + dt_s * k3, w)
        self.x = x + dt_s / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        self.t += dt_s
        return self.lee_state()

    def lee_state(self):
        n = self.n
        pin.forwardKinematics(self.model, self.data, self.x[:n], self.x[n:2 * n])
        pose = pin.updateFramePlacement(self.model, self.data, self.frame_id)
        twist = pin.getFrameVelocity(self.model, self.data, self.frame_id, pin.LOCAL).vector
        return pose, twist

    def energy(self) -> float:
        """Link and motor kinetic energy + gearbox energy [J]."""
        n = self.n
        q, v, qm, vm = self.x[:n], self.x[n:2 * n], self.x[2 * n:3 * n], self.x[3 * n:]
        mass = pin.crba(self.model, self.data, q)
        mass = np.triu(mass) + np.triu(mass, 1).T
        return (0.5 * float(v @ mass @ v) + 0.5 * self.arm.motor_inertia_kgm2 * float(vm @ vm)
                + self.arm.joint_law.energy(qm - q))
