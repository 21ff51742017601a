"""The servicer as a free-floating multibody in orbit: the absolute reference of seed 004 §V.

Seed 004 validates its relative HIL scheme against a simulation of the same spacecraft in
the orbit frame (the "GNCDE" of §V). For the servicer this is the multibody on a free-flyer
root, with no gravity (free fall in the orbit frame over the capture's minutes, as the seed
assumes), driven by the base wrench ``F_b`` (base body frame, about the base CoM), the joint
torques ``tau`` and the contact wrench on the flange. Its state is the base pose in orbit
``g_b``, the base body twist ``V_b`` and the arm's ``q, dq``; the base pose is integrated on
SE(3) by RKMK4 (:mod:`hil_dynamics.lie_integrators`), the rest with the same Butcher tableau.

* :meth:`FreeFloatingServicer.step` -- one compiled call
  (:func:`hil_dynamics.kernels.free_floating_rkmk4_step`: CRBA and RNEA on the chain, one
  solve per stage), for models that :class:`hil_dynamics.kernels.Chain` describes;
* :meth:`FreeFloatingServicer.step_reference` -- the readable step: Pinocchio's ``aba`` in
  :func:`hil_dynamics.lie_integrators.rkmk4_step`. It is also the path of any other model.

``test_free_floating.py`` checks the two against each other to 1e-12 and the reference
against the conservation of momentum and energy.

Plain Python, no rclpy.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from hil_common.errors import ConfigError
from hil_dynamics import kernels
from hil_dynamics.lie_integrators import rkmk4_step
from hil_dynamics.servicer import F64_DTYPE, finite_into




class FreeFloatingServicer:
    """The servicer multibody on a free-flyer root in the orbit frame, without gravity.

    Parameters
    ----------
    urdf:
        The servicer's URDF (base body first, as :class:`hil_dynamics.servicer.ServicerModel` reads it).
    ee_frame:
        The flange frame on which the contact wrench acts.
    pose_base_in_orbit, twist_base_body, q_arm, dq_arm:
        The initial state: ``g_b``, ``V_b`` (linear first, base axes) [m, rad, m/s, rad/s].
    """

    def __init__(self, urdf: str, ee_frame: str, pose_base_in_orbit: pin.SE3, twist_base_body, q_arm, dq_arm):
        model = pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer())
        model.gravity = pin.Motion.Zero()
        if not model.existFrame(ee_frame):
            raise ConfigError(f'ee_frame {ee_frame!r} is not a frame of the servicer URDF')
        self.model, self.data = model, model.createData()
        self.n = model.nv - 6
        frame = model.frames[model.getFrameId(ee_frame)]
        self._ee_joint, self._pose_flange_in_joint = frame.parentJoint, frame.placement
        self.pose_base_in_orbit = pose_base_in_orbit
        self.twist_base_body = self._vector('twist_base_body', twist_base_body, 6)
        self.q_arm = self._vector('q_arm', q_arm, self.n)
        self.dq_arm = self._vector('dq_arm', dq_arm, self.n)
        self._inputs_buf = np.empty(12 + self.n)     # [F_b; tau_arm; F_flange], checked at once (finite_into)
        chain = kernels.Chain.of(model)
        self._chain = None if chain is None else chain.args()
        if chain is not None:
            self._work, self._work_ic = chain.work, chain.work_ic
            self._fext = np.zeros((model.njoints, 6))
            self._pose_flange_in_joint_arr = kernels.pose_array(self._pose_flange_in_joint)
            self._x = np.empty(6 + 2 * self.n)

    @property
    def pose_base_in_orbit(self) -> pin.SE3:
        """``g_b``, the base CoM frame in orbit."""
        if self._pose_se3 is None:
            self._pose_se3 = kernels.array_pose(self._pose)
        return self._pose_se3

    @property
    def pose_base_in_orbit_array(self) -> np.ndarray:
        """``g_b`` as a 12-array (read only)."""
        return self._pose

    @pose_base_in_orbit.setter
    def pose_base_in_orbit(self, pose: pin.SE3) -> None:
        self._pose = kernels.pose_array(pin.SE3(pose))
        self._pose_se3 = None

    @staticmethod
    def _vector(name: str, value, n: int) -> np.ndarray:
        arr = np.asarray(value, dtype=float).reshape(-1)
        if arr.shape != (n,) or not np.all(np.isfinite(arr)):
            raise ConfigError(f'{name} must be {n} finite numbers, got {np.asarray(value).tolist()!r}')
        return arr.copy()

    def _inputs(self, wrench_base_com, tau_arm, wrench_flange):
        """The inputs in this object's arrays ``(tau = [F_b; tau_arm], wrench_flange)``; a wrong length or a
        non-finite value is refused by name before any state changes (:func:`hil_dynamics.servicer.finite_into`)."""
        buf, n = self._inputs_buf, self.n      # views taken here: a copied object keeps no views
        finite_into(buf, (buf[:6], wrench_base_com, 'wrench_base_com'), (buf[6:6 + n], tau_arm, 'tau_arm'),
                    (buf[6 + n:], wrench_flange, 'wrench_flange'))
        return buf[:6 + n], buf[6 + n:]

    def step(self, dt: float, wrench_base_com, tau_arm, wrench_flange) -> None:
        """Advance by ``dt`` [s] with the inputs held: ``F_b`` (base body frame, about the CoM) [N, N m],
        ``tau`` [N m], the contact wrench on the flange (flange frame) [N, N m]."""
        if self._chain is None:
            self.step_reference(dt, wrench_base_com, tau_arm, wrench_flange)
            return
        n = self.n
        f_b, w_f, v_b, tau, q, dq = wrench_base_com, wrench_flange, self.twist_base_body, tau_arm, self.q_arm, self.dq_arm
        if type(f_b) is type(w_f) is type(v_b) is type(tau) is type(q) is type(dq) is np.ndarray \
                and f_b.dtype is w_f.dtype is v_b.dtype is tau.dtype is q.dtype is dq.dtype is F64_DTYPE \
                and f_b.shape == w_f.shape == v_b.shape == (6,) and tau.shape == q.shape == dq.shape == (n,):
            # the inputs and the state as they are (float64 vectors; anything else is checked and named by
            # finite_into first): checked and laid out in the compiled call
            poses_out, x_out = np.empty((1, 12)), np.empty(6 + 2 * n)
            if kernels.free_floating_inputs_step(self._pose, self.twist_base_body, self.q_arm, self.dq_arm, float(dt),
                                                 wrench_base_com, tau_arm, wrench_flange,
                                                 self._pose_flange_in_joint_arr, self._ee_joint, self._fext,
                                                 self._chain, self._work, self._work_ic, poses_out, x_out):
                self._pose, self._pose_se3 = poses_out[0], None
                self.twist_base_body, self.q_arm, self.dq_arm = x_out[:6], x_out[6:6 + n], x_out[6 + n:]
                return
        tau, wrench_flange = self._inputs(wrench_base_com, tau_arm, wrench_flange)
        fext = self._fext[self._ee_joint]
        fext[:] = 0.0
        kernels._act_force_add(self._pose_flange_in_joint_arr, wrench_flange, fext)
        x, n = self._x, self.n
        x[:6], x[6:6 + n], x[6 + n:] = self.twist_base_body, self.q_arm, self.dq_arm
        poses_out, x_out = np.empty((1, 12)), np.empty(6 + 2 * n)
        kernels.free_floating_rkmk4_step(self._pose.reshape(1, 12), x, float(dt), tau, self._fext, self._chain,
                                         self._work, self._work_ic, poses_out, x_out)
        # the new state owns the kernel's output arrays: views into them, no copies (nothing writes them again)
        self._pose, self._pose_se3 = poses_out[0], None
        self.twist_base_body, self.q_arm, self.dq_arm = x_out[:6], x_out[6:6 + n], x_out[6 + n:]

    def step_reference(self, dt: float, wrench_base_com, tau_arm, wrench_flange) -> None:
        """The readable step: ``a = aba(q, v, tau, f_ext)`` in :func:`rkmk4_step`."""
        tau, wrench_flange = self._inputs(wrench_base_com, tau_arm, wrench_flange)
        model, data, n = self.model, self.data, self.n
        fext = pin.StdVec_Force()
        for j in range(model.njoints):
            fext.append(pin.Force.Zero())
        fext[self._ee_joint] = self._pose_flange_in_joint.act(pin.Force(wrench_flange))

        def derivative(t, poses, x):
            cfg = np.concatenate((pin.SE3ToXYZQUAT(poses[0]), x[6:6 + n]))
            a = pin.aba(model, data, cfg, np.concatenate((x[:6], x[6 + n:])), tau, fext)
            return np.array([x[:6]]), np.concatenate((a[:6], x[6 + n:], a[6:]))

        x0 = np.concatenate((self.twist_base_body, self.q_arm, self.dq_arm))
        (pose,), x = rkmk4_step(0.0, float(dt), [self.pose_base_in_orbit], x0, derivative)
        self.pose_base_in_orbit = pose
        self.twist_base_body, self.q_arm, self.dq_arm = x[:6].copy(), x[6:6 + n].copy(), x[6 + n:].copy()
