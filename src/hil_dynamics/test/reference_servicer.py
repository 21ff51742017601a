"""Independent reference for seed 004 Eq. (12): the absolute free-floating servicer.

Pinocchio's articulated-body algorithm (``aba``) on the free-flyer model, integrated in the
orbit frame: state ``(g_b; V_b, q, dq)``. The base wrench ``F_b`` enters as the free-flyer
joint torque (its local frame is the base CoM frame) and ``F_e`` as an external force on the
EE's parent joint. None of the Eq. (12) blocks, the nominal, the admittance, the torque law
or the simulated ground arm of ``hil_dynamics.servicer*`` is used.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from hil_dynamics import kernels
from hil_dynamics.lie_integrators import FusedRKMK4


class AbsoluteServicer:
    def __init__(self, urdf_xml, ee_frame, pose_base_in_orbit_0, twist_base_body_0, q_arm_0, dq_arm_0):
        self.model = pin.buildModelFromXML(urdf_xml, pin.JointModelFreeFlyer())
        self.model.gravity = pin.Motion.Zero()
        self.data = self.model.createData()
        self.n = self.model.nv - 6
        frame = self.model.frames[self.model.getFrameId(ee_frame)]
        self._ee_joint = frame.parentJoint
        self._ee_placement = frame.placement
        self.t = 0.0
        self.pose_base_in_orbit = pin.SE3(pose_base_in_orbit_0)
        self.x = np.concatenate((twist_base_body_0, q_arm_0, dq_arm_0)).astype(float)
        # The same integrator on arrays with its work allocated once (test_fast_paths checks it
        # against the generic rkmk4), and Pinocchio's own force vector (a list is converted per call).
        self._rk = FusedRKMK4(1, self.x.size)
        self._fext = pin.StdVec_Force()
        for _ in range(self.model.njoints):
            self._fext.append(pin.Force.Zero())
        self._cfg, self._vel, self._tau, self._pose = (np.empty(self.model.nq), np.empty(self.model.nv),
                                                       np.empty(self.model.nv), np.empty((1, 12)))

    def config(self, pose, q_arm):
        return np.concatenate((pin.SE3ToXYZQUAT(pose), q_arm))

    def acceleration(self, t, pose, x, wrench_base_com, tau, wrench_ee):
        n = self.n
        q = self.config(pose, x[6:6 + n])
        v = np.concatenate((x[:6], x[6 + n:]))
        fext = [pin.Force.Zero() for _ in range(self.model.njoints)]
        fext[self._ee_joint] = self._ee_placement.act(pin.Force(wrench_ee(t)))
        tau_full = np.concatenate((wrench_base_com(t), tau(t, x[6:6 + n], x[6 + n:])))
        return pin.aba(self.model, self.data, q, v, tau_full, fext).copy()

    def step(self, dt, wrench_base_com, tau, wrench_ee):
        n, model, data, cfg, vel, tau_full, fext = self.n, self.model, self.data, self._cfg, self._vel, self._tau, self._fext

        def f(t, poses, x, twists_out, rates_out):
            kernels.xyzquat_into(poses[0], cfg)
            cfg[7:] = x[6:6 + n]
            vel[:6], vel[6:] = x[:6], x[6 + n:]
            fext[self._ee_joint] = self._ee_placement.act(pin.Force(np.asarray(wrench_ee(t), dtype=float)))
            tau_full[:6], tau_full[6:] = wrench_base_com(t), tau(t, x[6:6 + n], x[6 + n:])
            a = pin.aba(model, data, cfg, vel, tau_full, fext)
            twists_out[0] = x[:6]
            rates_out[:6], rates_out[6:6 + n], rates_out[6 + n:] = a[:6], x[6 + n:], a[6:]

        kernels.pose_array(self.pose_base_in_orbit, self._pose[0])
        poses, x = self._rk.step(self.t, dt, self._pose, self.x, f)
        self.pose_base_in_orbit, self.x = kernels.array_pose(poses[0]), x.copy()
        self.t += dt

    @property
    def twist_base_body(self):
        return self.x[:6]

    @property
    def q_arm(self):
        return self.x[6:6 + self.n]

    @property
    def dq_arm(self):
        return self.x[6 + self.n:]

    def centroidal_momentum(self):
        """``[p; L]`` of the whole servicer, orbit axes, about the system CoM."""
        q = self.config(self.pose_base_in_orbit, self.q_arm)
        v = np.concatenate((self.twist_base_body, self.dq_arm))
        return pin.computeCentroidalMomentum(self.model, self.data, q, v).vector.copy()
