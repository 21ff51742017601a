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

from hil_dynamics import kernels
from hil_dynamics.lie_integrators import FusedRKMK4, rkmk4_step
from hil_dynamics.servicer import (STANDARD_GRAVITY_M_S2, ArmFeedForward, ServicerAdmittance, ServicerModel,
                                   ServicerState, F64_DTYPE, finite_into, finite_vector, finite_vectors)
from hil_common.errors import ConfigError

# A wrench input: a constant vector, or a function of time [s].
Input = Union[np.ndarray, Callable[[float], np.ndarray]]
# The OBSW joint torques: a constant vector, or a joint controller ``(t, q_arm, dq_arm) -> tau``
# evaluated on the measured arm state (seed 004 Fig. 6: the OBSW closes the loop).
TorqueInput = Union[np.ndarray, Callable[[float, np.ndarray, np.ndarray], np.ndarray]]


def _zero_forces(count: int) -> pin.StdVec_Force:
    """External forces for ``rnea``/``aba`` as Pinocchio's own vector: a Python list costs a conversion per call."""
    out = pin.StdVec_Force()
    for _ in range(count):
        out.append(pin.Force.Zero())
    return out


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
            raise ConfigError(f'ee_frame {ee_frame!r} is not a frame of the URDF')
        self.model = model
        self.data = model.createData()
        self.n = model.nv - 6
        frame = model.frames[model.getFrameId(ee_frame)]
        self._ee_joint = frame.parentJoint
        self._ee_placement = frame.placement
        self._zero_acc = np.zeros(model.nv)
        self._fext_list = _zero_forces(model.njoints)
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
            raise ConfigError('admittance, feedforward and ground_arm must describe the same arm')
        self.admittance = admittance
        self.feedforward = feedforward
        self.ground_arm = ground_arm
        self.n = n
        self.q_arm = finite_vector(q_arm_0, n, 'q_arm_0')
        self.dq_arm = finite_vector(dq_arm_0, n, 'dq_arm_0')
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
        """Advance the closed loop by ``dt`` [s] (inputs evaluated at every integrator stage).

        Runs the fused path (:meth:`_step_fused`: six Pinocchio calls per stage, arrays
        allocated once, compiled glue) unless the feed-forward has ``tau_ff2`` and
        ``tau_ff3`` switched differently, which only :meth:`step_reference` computes.
        ``test_fast_paths`` checks that both agree to 1e-12.
        """
        if not dt > 0.0:
            raise ConfigError(f'dt must be > 0, got {dt!r}')
        if self.feedforward.use_ff2 != self.feedforward.use_ff3:
            return self.step_reference(dt, wrench_base_com, tau_obsw, wrench_ee)
        if not (callable(wrench_base_com) or callable(tau_obsw) or callable(wrench_ee)):
            chains = self.compiled_chains()
            if chains is not False:
                return self._step_compiled(dt, wrench_base_com, tau_obsw, wrench_ee, chains)
        return self._step_fused(dt, wrench_base_com, tau_obsw, wrench_ee)

    def compiled_chains(self):
        """The compiled steps' arrays (:meth:`_compiled_setup`, made at the first call), or False where a model is
        not a chain."""
        chains = self.__dict__.get('_chains')
        if chains is None:
            chains = self._chains = self._compiled_setup()
        return chains

    def _compiled_setup(self):
        """The three models as :class:`hil_dynamics.kernels.Chain` arrays (False if one is not a chain)."""
        adm, ff, ground = self.admittance, self.feedforward, self.ground_arm
        co, cf, cg = (kernels.Chain.of(m) for m in (adm.model.model, ff.model.model, ground.model))
        if co is None or cf is None or cg is None:
            return False
        w = type('CompiledWork', (), {})()
        w.co, w.cf, w.cg = co.args(), cf.args(), cg.args()
        w.same_ff = ff.model is adm.model
        w.lab_gravity = np.asarray(ff.lab_model.gravity.vector, dtype=float).copy()
        w.ground_gravity = np.asarray(ground.model.gravity.vector, dtype=float).copy()
        # Assumption 2: the ground arm is the same arm. With identical parameters its mass matrix is the orbit
        # model's (computed once per stage instead of twice): ground_mode 1. If moreover the feed-forward's model
        # is the admittance's, the gravities are equal and the EE wrench acts on the same joint at the same
        # placement, the ground arm's bias is the feed-forward's C(V_s) V_s - J^T F_e plus G (one RNEA less per
        # stage, while G is computed): ground_mode 2.
        frame = adm.model.model.frames[adm.model.ee_frame_id]
        same_mass = all(np.array_equal(a, b) for a, b in zip(w.co, w.cg))
        same_wrench = frame.parentJoint == ground._ee_joint and np.array_equal(frame.placement.homogeneous,
                                                                                ground._ee_placement.homogeneous)
        w.ground_mode = (2 if same_mass and w.same_ff and same_wrench and np.array_equal(w.lab_gravity, w.ground_gravity)
                         else 1 if same_mass else 0)
        w.nominal_in_lab = kernels.pose_array(ff.pose_nominal_in_lab)
        nj = max(adm.model.model.njoints, ff.model.model.njoints, ground.model.njoints)
        w.work, w.work_ic = np.empty((3, 4, nj, 12)), np.empty((nj, 6, 6))
        w.fext_o, w.fext_g = np.zeros((adm.model.model.njoints, 6)), np.zeros((ground.model.njoints, 6))
        w.zero_fext = np.zeros((ff.model.model.njoints, 6))
        w.ee_joint_o, w.ee_placement_o = frame.parentJoint, frame.placement
        w.placement_o, w.placement_g = kernels.pose_array(frame.placement), kernels.pose_array(ground._ee_placement)
        w.poses, w.x = np.empty((2, 12)), np.empty(12 + 2 * self.n)
        w.poses_out, w.x_out = np.empty((2, 12)), np.empty(12 + 2 * self.n)
        w.inputs = np.empty(12 + self.n)        # [F_b; F_e; tau], checked at once (finite_into)
        return w

    def _step_compiled(self, dt, wrench_base_com, tau_obsw, wrench_ee, w) -> LockstepState:
        """:meth:`step_reference` with held inputs as one compiled call
        (:func:`hil_dynamics.kernels.lockstep_rkmk4_step`: Pinocchio's ``rnea``/``crba`` recursions
        on the three chains, the Eq. 18/22/20 solve and the RKMK4 stages)."""
        n, ground = self.n, self.ground_arm
        s = self.admittance.state
        nom_m6, nom_m6_inv = self.admittance.nominal_matrices()
        weights = self.feedforward.kernel_weights()
        f_b, f_e, tau, v_n, v_s, q, dq = (wrench_base_com, wrench_ee, tau_obsw, s.twist_nominal_body,
                                          s.twist_base_rel_body, self.q_arm, self.dq_arm)
        if type(f_b) is type(f_e) is type(v_n) is type(v_s) is type(tau) is type(q) is type(dq) is np.ndarray \
                and f_b.dtype is f_e.dtype is v_n.dtype is v_s.dtype is tau.dtype is q.dtype is dq.dtype is F64_DTYPE \
                and f_b.shape == f_e.shape == v_n.shape == v_s.shape == (6,) and tau.shape == q.shape == dq.shape == (n,):
            # the inputs and the state as they are (float64 vectors; anything else is checked and named by
            # finite_into first): checked, laid out and stepped in one compiled call
            g_n, g_s = s.pose_arrays()
            poses, x = np.empty((2, 12)), np.empty(12 + 2 * n)
            if (kernels.lockstep_shared_inputs_step(g_n, v_n, g_s, v_s, q, dq, dt, f_b, f_e, tau, w.ee_joint_o,
                                                    w.placement_o, w.fext_o, w.fext_g, w.co, w.lab_gravity,
                                                    w.nominal_in_lab, nom_m6, nom_m6_inv, *weights, w.work, w.work_ic,
                                                    poses, x)
                    if w.ground_mode == 2 else       # the one chain for all three (fewer arrays to pass)
                    kernels.lockstep_inputs_step(g_n, v_n, g_s, v_s, q, dq, dt, f_b, f_e, tau, w.ee_joint_o,
                                                 w.placement_o, ground._ee_joint, w.placement_g, w.fext_o, w.fext_g,
                                                 w.zero_fext, w.co, w.cf, w.cg, w.lab_gravity, w.ground_gravity,
                                                 w.nominal_in_lab, nom_m6, nom_m6_inv, *weights, w.same_ff,
                                                 w.ground_mode, w.work, w.work_ic, poses, x)):
                return self._adopt(s.t + dt, poses, x)
        buf = w.inputs                          # views taken here: a copied object keeps no views
        f_b, f_e, tau = buf[:6], buf[6:12], buf[12:]
        finite_into(buf, (f_b, wrench_base_com, 'wrench_base_com'), (f_e, wrench_ee, 'wrench_ee'),
                    (tau, tau_obsw, 'tau_obsw'))
        kernels.ee_wrench_as_fext(f_e, w.ee_joint_o, w.placement_o, ground._ee_joint, w.placement_g, w.fext_o, w.fext_g)
        w.poses[0], w.poses[1] = s.pose_arrays()
        x = w.x
        x[:6], x[6:12], x[12:12 + n], x[12 + n:] = s.twist_nominal_body, s.twist_base_rel_body, self.q_arm, self.dq_arm
        kernels.lockstep_rkmk4_step(w.poses, x, dt, f_b, tau, w.fext_o, w.fext_g, w.zero_fext, w.co, w.cf, w.cg,
                                    w.lab_gravity, w.ground_gravity, w.nominal_in_lab, nom_m6, nom_m6_inv, *weights,
                                    w.same_ff, w.ground_mode, w.work, w.work_ic, w.poses_out, w.x_out)
        x, poses = w.x_out, w.poses_out
        self.admittance.state = ServicerState.of_arrays(s.t + dt, poses[0].copy(), x[:6].copy(), poses[1].copy(),
                                                        x[6:12].copy())
        self.q_arm = x[12:12 + n].copy()
        self.dq_arm = x[12 + n:].copy()
        return self.state

    def _adopt(self, t: float, poses: np.ndarray, x: np.ndarray) -> LockstepState:
        """The state a compiled step wrote (``poses``: ``g_n, g_s``; ``x``: ``V_n, V_s, q, dq``) at ``t``, owning
        those arrays: views into them (nothing writes them again)."""
        n = self.n
        self.admittance.state = ServicerState.of_arrays(t, poses[0], x[:6], poses[1], x[6:12])
        self.q_arm, self.dq_arm = x[12:12 + n], x[12 + n:]
        return self.state

    def step_with_port(self, dt: float, wrench_base_com, tau_obsw, wrench_ee, port, twist_measured,
                       wrench_port) -> tuple[LockstepState, 'PassivityOutput']:
        """The servicer port's passivity observer/controller ``port`` (a 6-DOF
        :class:`hil_dynamics.passivity.PassivityController`: seed 004 Eq. 28, §VI) over the coming step, then
        :meth:`step` under ``F_b + F_pc``: ``port.update(twist_measured, V_s, wrench_port, dt)`` and
        ``step(dt, F_b + out.wrench_pc, tau, F_e)`` (``V_s`` the state's relative base twist), as one compiled
        call (:func:`hil_dynamics.kernels.lockstep_port_step`) for held float64 inputs and the shared chain
        (``ground_mode`` 2); otherwise those two calls. Same state, output and errors (``test_fast_paths``).
        Returns ``(state, out)``."""
        n = self.n
        w = self.__dict__.get('_chains')
        s = self.admittance.state
        v_n, v_s = s.twist_nominal_body, s.twist_base_rel_body
        f_b, f_e, tau, v_m, f_p, q, dq = (wrench_base_com, wrench_ee, tau_obsw, twist_measured, wrench_port,
                                          self.q_arm, self.dq_arm)
        # the inputs, the port's vectors and the state's twists as the kernel takes them (float64, one layout: one
        # compiled specialisation); anything else takes the two calls, which check and name it
        if w and w.ground_mode == 2 and port.n == 6 and dt > 0.0 and \
                self.feedforward.use_ff2 == self.feedforward.use_ff3 and \
                type(f_b) is type(f_e) is type(tau) is type(v_m) is type(f_p) is type(q) is type(dq) is type(v_n) \
                is type(v_s) is np.ndarray and f_b.dtype is f_e.dtype is tau.dtype is v_m.dtype is f_p.dtype is q.dtype \
                is dq.dtype is v_n.dtype is v_s.dtype is F64_DTYPE and f_b.shape == f_e.shape == v_m.shape == f_p.shape \
                == v_n.shape == v_s.shape == (6,) and tau.shape == q.shape == dq.shape == (n,) \
                and v_m.flags.c_contiguous and f_p.flags.c_contiguous and v_s.flags.c_contiguous:
            nom_m6, nom_m6_inv = self.admittance.nominal_matrices()
            g_n, g_s = s.pose_arrays()
            wrench_pc, poses, x = np.empty(6), np.empty((2, 12)), np.empty(12 + 2 * n)
            excess, pending, status = kernels.lockstep_port_step(
                port._acc, port._prev, port.mass_matrix, v_m, f_p, float(dt), 0.0, port.enabled, port.max_rate_per_s,
                port.threshold_j, wrench_pc, g_n, v_n, g_s, v_s, q, dq, f_b, f_e, tau, w.ee_joint_o,
                w.placement_o, w.fext_o, w.fext_g, w.co, w.lab_gravity, w.nominal_in_lab, nom_m6, nom_m6_inv,
                *self.feedforward.kernel_weights(), w.work, w.work_ic, poses, x)
            if status == 0:
                out = port.output(excess, pending, wrench_pc)
                return self._adopt(s.t + dt, poses, x), out
            if status == 2:         # the port observed; the loop's inputs are refused as step() refuses them
                out = port.output(excess, pending, wrench_pc)
                return self.step(dt, f_b + wrench_pc, tau_obsw, wrench_ee), out    # raises, naming the input
        out = port.update(twist_measured, v_s, wrench_port, dt)                    # names a bad port input
        return self.step(dt, np.asarray(wrench_base_com, dtype=float) + out.wrench_pc, tau_obsw, wrench_ee), out

    def _fused_setup(self):
        """Work arrays and Pinocchio data of :meth:`_step_fused`, allocated once."""
        adm, ff, ground, n = self.admittance, self.feedforward, self.ground_arm, self.n
        om = adm.model.model
        w = type('FusedWork', (), {})()
        w.rk = FusedRKMK4(2, 12 + 2 * n)
        w.om, w.d_mass, w.d_base, w.d_s = om, om.createData(), om.createData(), om.createData()
        w.same_ff_model = ff.model is adm.model
        w.fm = ff.model.model
        w.d_ff_b, w.d_ff_s = w.fm.createData(), w.fm.createData()
        w.lab_model, w.lab_data = ff.lab_model, ff.lab_model.createData()
        w.gm, w.d_gm, w.d_gr = ground.model, ground.model.createData(), ground.model.createData()
        w.cfg_o = pin.neutral(om)
        w.cfg_lab = np.empty(om.nq)
        w.cfg_ground = np.empty(ground.model.nq)
        w.vel_b, w.vel_s = np.empty(om.nv), np.empty(om.nv)
        w.zero_o, w.zero_g = np.zeros(om.nv), np.zeros(ground.model.nv)
        frame = om.frames[adm.model.ee_frame_id]
        w.ee_joint_o, w.ee_placement_o = frame.parentJoint, frame.placement
        w.fext_o, w.fext_g = _zero_forces(om.njoints), _zero_forces(ground.model.njoints)
        w.nominal_in_lab = kernels.pose_array(ff.pose_nominal_in_lab)
        w.pose_lab = np.empty(12)
        w.vn_dot, w.delta, w.delta_dot = np.empty(6), np.empty(6), np.empty(6)
        w.lhs, w.rhs, w.sol = np.empty((6 + n, 6 + n)), np.empty(6 + n), np.empty(6 + n)
        w.poses, w.x = np.empty((2, 12)), np.empty(12 + 2 * n)
        w.last_f_e = None
        return w

    def _step_fused(self, dt: float, wrench_base_com: Input, tau_obsw: TorqueInput, wrench_ee: Input) -> LockstepState:
        """:meth:`step_reference` restructured: per stage, ``crba`` and ``rnea`` (with ``F_e`` as an
        external force) on the orbit model give the Eq. (18) rows; ``rnea`` at ``V_s`` gives
        ``tau_ff2 + tau_ff3`` as a difference of Coriolis forces; ``computeGeneralizedGravity`` gives
        ``G``; ``crba`` and ``rnea`` on the ground model give Eq. (20); one compiled solve."""
        w = getattr(self, '_fused', None)
        if w is None:
            w = self._fused = self._fused_setup()
        n, ground = self.n, self.ground_arm
        crba, rnea, nle, gravity = pin.crba, pin.rnea, pin.nonLinearEffects, pin.computeGeneralizedGravity
        stage_kin, solve, xyzquat, pose_mul = (kernels.servicer_stage_kinematics, kernels.lockstep_solve,
                                               kernels.xyzquat_into, kernels.pose_mul_into)
        nominal_acc = kernels.nominal_acceleration_into
        nom_m6, nom_m6_inv = self.admittance.nominal_matrices()
        w_ff1, w_ff23, w_grav = self.feedforward.kernel_weights()
        at = self._at
        const_f_b = None if callable(wrench_base_com) else finite_vector(wrench_base_com, 6, 'wrench_base_com')
        const_f_e = None if callable(wrench_ee) else finite_vector(wrench_ee, 6, 'wrench_ee')
        const_tau = None if callable(tau_obsw) else finite_vector(tau_obsw, n, 'tau_obsw')

        def set_fext(f_e):
            if w.last_f_e is None or not np.array_equal(f_e, w.last_f_e):
                w.fext_o[w.ee_joint_o] = w.ee_placement_o.act(pin.Force(f_e))
                w.fext_g[ground._ee_joint] = ground._ee_placement.act(pin.Force(f_e))
                w.last_f_e = np.array(f_e, dtype=float)
            return w.fext_o

        def derivative(t, poses, x, twists_out, rates_out):
            v_n, v_s, q, dq = x[:6], x[6:12], x[12:12 + n], x[12 + n:]
            f_b = const_f_b if const_f_b is not None else at(wrench_base_com, t)
            f_e = const_f_e if const_f_e is not None else at(wrench_ee, t)
            tau = const_tau if const_tau is not None else np.asarray(tau_obsw(t, q, dq), dtype=float)
            nominal_acc(v_n, nom_m6, nom_m6_inv, w.vn_dot)                # Eq. (4)
            stage_kin(poses[1], v_n, v_s, w.vn_dot, w.delta, w.vel_b, w.delta_dot)          # Eq. (15)
            w.vel_b[6:] = dq
            w.vel_s[:6] = v_s
            w.vel_s[6:] = dq
            cfg = w.cfg_o
            cfg[7:] = q
            fext = set_fext(f_e)
            m_o = crba(w.om, w.d_mass, cfg)
            bias_b = rnea(w.om, w.d_base, cfg, w.vel_b, w.zero_o, fext)                     # C v - J^T F_e at V_b
            if w.same_ff_model:
                bias_s = rnea(w.om, w.d_s, cfg, w.vel_s, w.zero_o, fext)                    # idem at V_s
                ff_b = bias_b
            else:
                bias_s = nle(w.fm, w.d_ff_s, cfg, w.vel_s)
                ff_b = nle(w.fm, w.d_ff_b, cfg, w.vel_b)
            pose_mul(w.nominal_in_lab, poses[1], w.pose_lab)                                # arm base in the lab
            xyzquat(w.pose_lab, w.cfg_lab)
            w.cfg_lab[7:] = q
            grav = gravity(w.lab_model, w.lab_data, w.cfg_lab) if w_grav else w.zero_o       # -G of Eq. (20)
            m_g = crba(w.gm, w.d_gm, w.cfg_lab)
            bias_g = rnea(w.gm, w.d_gr, w.cfg_lab, w.vel_s, w.zero_g, w.fext_g)   # Eq. (20) bias
            solve(m_o, m_g, bias_b, bias_s, ff_b, grav, bias_g, tau, f_b, w.delta_dot, w_ff1, w_ff23, w_grav,
                  w.lhs, w.rhs, w.sol)
            twists_out[0] = v_n
            twists_out[1] = v_s
            rates_out[:6] = w.vn_dot
            rates_out[6:12] = w.sol[:6]
            rates_out[12:12 + n] = dq
            rates_out[12 + n:] = w.sol[6:]

        s = self.admittance.state
        kernels.pose_array(s.pose_nominal_in_orbit, w.poses[0])
        kernels.pose_array(s.pose_base_in_nominal, w.poses[1])
        x = w.x
        x[:6], x[6:12], x[12:12 + n], x[12 + n:] = s.twist_nominal_body, s.twist_base_rel_body, self.q_arm, self.dq_arm
        poses, x = w.rk.step(s.t, dt, w.poses, x, derivative)
        self.admittance.state = ServicerState(s.t + dt, kernels.array_pose(poses[0]), x[:6].copy(),
                                              kernels.array_pose(poses[1]), x[6:12].copy())
        self.q_arm = x[12:12 + n].copy()
        self.dq_arm = x[12 + n:].copy()
        return self.state

    def step_reference(self, dt: float, wrench_base_com: Input, tau_obsw: TorqueInput, wrench_ee: Input) -> LockstepState:
        """The readable step: :meth:`accelerations` (the rules' own methods) under :func:`rkmk4_step`."""
        if not dt > 0.0:
            raise ConfigError(f'dt must be > 0, got {dt!r}')
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
