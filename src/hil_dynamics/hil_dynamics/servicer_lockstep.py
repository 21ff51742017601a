"""The servicer HIL loop without hardware: admittance, torque law and a simulated real arm.

:class:`GroundArmOnMovingBase` stands in for the lab: the torque-controlled arm bolted to the
admittance-controlled industrial robot, whose flange is assumed to follow the commanded
base motion ``g_s`` exactly, in the lab's gravity. Its dynamics (seed 004 Eq. 20)::

    M_bq^T V_s_dot + M_q ddq + C_qs V_s + C_q dq = tau_q + J_m^T F_e + G

are evaluated with Pinocchio's RNEA (with gravity and the EE wrench as an external force),
not with the Eq. (12) blocks of :mod:`hil_dynamics.servicer`, so it is an independent model
of the hardware.

:class:`ServicerHilLockstep` wires the rules as in seed 004 Fig. 6 and integrates the whole
loop with RKMK4. The admittance (Eq. 18) needs the arm's ``ddq`` and the arm's ``ddq``
depends on the commanded base acceleration ``V_s_dot``: on the real facility this loop is
closed through the measurements; here both are solved together at every integrator stage
(both are linear in ``(V_s_dot, ddq)``), which is the ideal (delay-free) facility.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

import numpy as np
import pinocchio as pin

from hil_dynamics.lie_integrators import rkmk4_step
from hil_dynamics.servicer import (STANDARD_GRAVITY_M_S2, ArmFeedForward, ServicerAdmittance, ServicerModel,
                                   ServicerState, _vector)

# A wrench input: a constant vector, or a function of time [s].
Input = Union[np.ndarray, Callable[[float], np.ndarray]]
# The OBSW joint torques: a constant vector, or a joint controller ``(t, q_arm, dq_arm) -> tau``
# evaluated on the measured arm state (seed 004 Fig. 6: the OBSW closes the loop).
TorqueInput = Union[np.ndarray, Callable[[float, np.ndarray, np.ndarray], np.ndarray]]


class GroundArmOnMovingBase:
    """The real arm on ground (Eq. 20), its base moved along a prescribed trajectory, with gravity.

    Parameters
    ----------
    urdf_xml, ee_frame:
        The servicer URDF and EE frame (Assumption 2: the same arm as in orbit). Only the
        arm's links matter: the base is driven, not simulated.
    gravity_m_s2:
        Lab gravity along the lab's -z [m/s^2].
    """

    def __init__(self, urdf_xml: str, ee_frame: str, gravity_m_s2: float = STANDARD_GRAVITY_M_S2):
        model = pin.buildModelFromXML(urdf_xml, pin.JointModelFreeFlyer())
        model.gravity = pin.Motion(np.array([0.0, 0.0, -float(gravity_m_s2), 0.0, 0.0, 0.0]))
        if not model.existFrame(ee_frame):
            raise ValueError(f'ee_frame {ee_frame!r} is not a frame of the URDF')
        self.model = model
        self.data = model.createData()
        self.n = model.nv - 6
        frame = model.frames[model.getFrameId(ee_frame)]
        self._ee_joint = frame.parentJoint
        self._ee_placement = frame.placement
        self._zero_acc = np.zeros(model.nv)
        self._fext_list = [pin.Force.Zero() for _ in range(model.njoints)]
        self._q = np.empty(model.nq)
        self._v = np.empty(model.nv)

    def _fext(self, wrench_ee):
        self._fext_list[self._ee_joint] = self._ee_placement.act(pin.Force(np.asarray(wrench_ee, dtype=float)))
        return self._fext_list

    def rows(self, pose_base_in_lab: pin.SE3, twist_base_body, q_arm, dq_arm, tau_arm, wrench_ee):
        """Eq. (20) as ``A_qs V_s_dot + A_qq ddq = b``; returns ``(A_qs, A_qq, b)``."""
        q, v = self._q, self._v
        q[:7] = pin.SE3ToXYZQUAT(pose_base_in_lab)
        q[7:] = q_arm
        v[:6] = twist_base_body
        v[6:] = dq_arm
        mass = pin.crba(self.model, self.data, q)
        bias = pin.rnea(self.model, self.data, q, v, self._zero_acc, self._fext(wrench_ee))[6:]
        return mass[6:, :6].copy(), mass[6:, 6:].copy(), np.asarray(tau_arm, dtype=float) - bias

    def joint_acceleration(self, pose_base_in_lab: pin.SE3, twist_base_body, accel_base_body, q_arm, dq_arm, tau_arm,
                           wrench_ee) -> np.ndarray:
        """``ddq`` of the real arm for a prescribed base motion ``(pose, V_s, V_s_dot)``."""
        a_qs, a_qq, b = self.rows(pose_base_in_lab, twist_base_body, q_arm, dq_arm, tau_arm, wrench_ee)
        return np.linalg.solve(a_qq, b - a_qs @ np.asarray(accel_base_body, dtype=float))


@dataclass
class LockstepState:
    """Admittance state plus the real arm's joint state."""

    servicer: ServicerState
    q_arm: np.ndarray
    dq_arm: np.ndarray


class ServicerHilLockstep:
    """Seed 004 Fig. 6 closed in simulation: Eq. (18) admittance + Eq. (22) torques + Eq. (20) arm.

    The integrated state is ``(g_n, g_s; V_n, V_s, q, dq)``; inputs ``F_b(t)`` and ``F_e(t)``
    (EE wrench, EE frame) are constants or functions of time, the OBSW torque ``tau`` a
    constant or a joint controller ``tau(t, q, dq)``. The
    orbit state follows from Eq. (23) (:meth:`absolute`).
    """

    def __init__(self, admittance: ServicerAdmittance, feedforward: ArmFeedForward, ground_arm: GroundArmOnMovingBase,
                 q_arm_0, dq_arm_0):
        n = admittance.model.n
        if ground_arm.n != n or feedforward.model.n != n:
            raise ValueError('admittance, feedforward and ground_arm must describe the same arm')
        self.admittance = admittance
        self.feedforward = feedforward
        self.ground_arm = ground_arm
        self.n = n
        self.q_arm = _vector(q_arm_0, n, 'q_arm_0')
        self.dq_arm = _vector(dq_arm_0, n, 'dq_arm_0')
        self.last_torques = None

    @staticmethod
    def _at(value: Input, t: float) -> np.ndarray:
        return np.asarray(value(t) if callable(value) else value, dtype=float)

    def accelerations(self, t, pose_base_in_nominal, twist_nominal_body, twist_base_rel_body, q_arm, dq_arm,
                      wrench_base_com: Input, tau_obsw: TorqueInput, wrench_ee: Input):
        """``(V_n_dot, V_s_dot, ddq, torques)`` of the closed loop at one instant."""
        adm, ff = self.admittance, self.feedforward
        f_b = self._at(wrench_base_com, t)
        f_e = self._at(wrench_ee, t)
        vn_dot = adm.nominal_acceleration(twist_nominal_body)
        m_b, m_bq, rhs, mass = adm.base_rows(pose_base_in_nominal, twist_base_rel_body, twist_nominal_body, vn_dot, q_arm,
                                          dq_arm, f_b, f_e)
        tau = np.asarray(tau_obsw(t, q_arm, dq_arm) if callable(tau_obsw) else tau_obsw, dtype=float)
        torques = ff.torques(tau, q_arm, dq_arm, pose_base_in_nominal, twist_base_rel_body,
                             twist_nominal_body, vn_dot, mass)
        a_qs, a_qq, b = self.ground_arm.rows(ff.pose_nominal_in_lab * pose_base_in_nominal, twist_base_rel_body,
                                             q_arm, dq_arm, torques.tau_q, f_e)
        n = self.n
        lhs = np.empty((6 + n, 6 + n))
        lhs[:6, :6] = m_b
        lhs[:6, 6:] = m_bq
        lhs[6:, :6] = a_qs
        lhs[6:, 6:] = a_qq
        sol = np.linalg.solve(lhs, np.concatenate((rhs, b)))
        return vn_dot, sol[:6], sol[6:], torques

    def step(self, dt: float, wrench_base_com: Input, tau_obsw: TorqueInput, wrench_ee: Input) -> LockstepState:
        """Advance the closed loop by ``dt`` [s] (inputs evaluated at every integrator stage)."""
        if not dt > 0.0:
            raise ValueError(f'dt must be > 0, got {dt!r}')
        n = self.n

        def derivative(t, poses, x):
            vn_dot, vs_dot, ddq, _ = self.accelerations(t, poses[1], x[:6], x[6:12], x[12:12 + n], x[12 + n:],
                                                        wrench_base_com, tau_obsw, wrench_ee)
            return x[:12].reshape(2, 6), np.concatenate((vn_dot, vs_dot, x[12 + n:], ddq))

        s = self.admittance.state
        x = np.concatenate((s.twist_nominal_body, s.twist_base_rel_body, self.q_arm, self.dq_arm))
        (g_n, g_s), x = rkmk4_step(s.t, dt, (s.pose_nominal_in_orbit, s.pose_base_in_nominal), x, derivative)
        self.admittance.state = ServicerState(s.t + dt, g_n, x[:6], g_s, x[6:12])
        self.q_arm = x[12:12 + n].copy()
        self.dq_arm = x[12 + n:].copy()
        return self.state

    @property
    def state(self) -> LockstepState:
        return LockstepState(self.admittance.state, self.q_arm, self.dq_arm)

    def absolute(self) -> tuple[pin.SE3, np.ndarray]:
        """``(g_b, V_b)`` in orbit by Eq. (23)."""
        return self.admittance.state.absolute()


def build_servicer_loop(urdf_xml: str, ee_frame: str, nominal_body, twist_nominal_body_0, pose_base_in_nominal_0,
                        twist_base_rel_body_0, q_arm_0, dq_arm_0, pose_nominal_in_orbit_0: Optional[pin.SE3] = None,
                        pose_nominal_in_lab: Optional[pin.SE3] = None, gravity_m_s2: float = STANDARD_GRAVITY_M_S2,
                        **feedforward_switches) -> ServicerHilLockstep:
    """Convenience: one :class:`ServicerHilLockstep` from a URDF and the initial conditions."""
    model = ServicerModel(urdf_xml, ee_frame)
    adm = ServicerAdmittance(model, nominal_body, twist_nominal_body_0, pose_nominal_in_orbit_0,
                             pose_base_in_nominal_0, twist_base_rel_body_0)
    ff = ArmFeedForward(model, pose_nominal_in_lab, gravity_m_s2, **feedforward_switches)
    ground = GroundArmOnMovingBase(urdf_xml, ee_frame, gravity_m_s2)
    return ServicerHilLockstep(adm, ff, ground, q_arm_0, dq_arm_0)
