"""Servicer spacecraft with a manipulator, simulated relative to a nominal trajectory (seed 004 §III-B/C).

Frames and symbols (seed 004 Figs. 4, 6, 7; twists body, linear first; wrenches [f; tau]):

* ``g_n = pose_nominal_in_orbit``, ``V_n = twist_nominal_body`` -- the nominal trajectory
  (the client's unforced motion, Eq. 4, shared with :mod:`hil_dynamics.client`).
* ``g_s = pose_base_in_nominal``, ``V_s = twist_base_rel_body`` -- the servicer base
  relative to the nominal: what the admittance-controlled industrial robot reproduces.
* ``g_b = pose_base_in_orbit``, ``V_b = twist_base_body`` -- the base in orbit, Eq. (23):
  ``g_b = g_n g_s``, ``V_b = V_s + Delta V_s`` with ``Delta V_s = Ad_{g_s^-1} V_n`` (Eq. 15).
* ``q, dq`` -- arm joint angles [rad] and rates [rad/s], shared by the simulated and the real
  arm (Assumption 2).
* ``F_b = wrench_base_com`` -- actuation wrench on the base, base body frame about the base
  CoM; ``tau`` -- OBSW joint torques [N m]; ``F_e = wrench_ee`` -- external wrench on the
  end-effector frame, EE axes about the EE origin (``wrench_ee_in_ee``).

The free-floating dynamics (Eq. 12)::

    [M_b    M_bq] [V_b_dot]   [C_b  C_bq] [V_b]   [F_b]   [J_b^T]
    [M_bq^T M_q ] [ddq    ] + [C_qb C_q ] [dq ] = [tau] + [J_m^T] F_e

are taken from Pinocchio on a free-flyer root whose joint frame is the base CoM (the URDF
generators of :mod:`hil_dynamics.models` put the root frame there). Pinocchio's free-flyer
velocity is ``[v; w]`` of the joint frame in its own (local) axes, i.e. the body twist at the
base CoM, linear first: the seed's ``V_b``. ``M`` is ``crba``, ``C`` is
``computeCoriolisMatrix`` (the factorisation with ``M_dot - 2C`` skew-symmetric), and
``J = [J_b J_m]`` is the LOCAL frame Jacobian of the EE, so ``V_ee = J_b V_b + J_m dq`` is the
EE body twist and ``J^T F_e`` the generalised force of ``wrench_ee``. All these terms are
invariant to the base pose (left invariance), so they are evaluated with the base at identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pinocchio as pin

from hil_dynamics.client import RelativeState, relative_mapping
from hil_dynamics import kernels
from hil_dynamics.lie_integrators import FusedRKMK4, rkmk4
from hil_dynamics.rigid_body import RigidBody
from hil_common.errors import ConfigError, InputError
from hil_common.finite import all_finite

STANDARD_GRAVITY_M_S2 = 9.80665


def finite_vectors(*specs) -> list[np.ndarray]:
    """``(value, size, name)`` triples as finite float vectors, or a ValueError naming the bad one.

    One finiteness check over all of them (this runs at every 1 kHz sample).
    """
    out = []
    for value, size, name in specs:
        try:
            arr = np.asarray(value, dtype=float).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f'{name} must be a vector of {size} numbers, got {value!r}') from exc
        if arr.shape[0] != size:
            raise ConfigError(f'{name} must have {size} elements, got {arr.shape[0]}')
        out.append(arr)
    if not np.isfinite(np.concatenate(out)).all():
        (value, _, name), = [spec for spec, arr in zip(specs, out) if not np.isfinite(arr).all()][:1]
        raise ConfigError(f'{name} must be finite, got {np.asarray(value).tolist()}')
    return out


#: NumPy's one native float64 dtype: ``value.dtype is F64_DTYPE`` tells a step's fast path that an array is what its
#: compiled call takes as it is (another byte order is another object, and takes the checked path)
F64_DTYPE = np.dtype(np.float64)


def finite_into(buffer: np.ndarray, *specs) -> None:
    """``(out, value, name)`` triples: each ``value`` copied into ``out``, a view of ``buffer`` (the views
    allocated once by the caller, together covering the 1-D ``buffer``), with one finiteness check of the
    whole buffer. A wrong length, a non-number or a non-finite value raises ConfigError naming it, as
    :func:`finite_vectors` does (``buffer`` may then hold part of it). The form of :func:`finite_vectors`
    for the 1 kHz steps: no allocation, one reduction. An ``out`` that is no longer a view of ``buffer`` (a
    rule copied with ``copy.deepcopy`` or pickled keeps copies, not views) takes the checked path."""
    fast = True
    try:
        for out, value, _ in specs:
            # an array of the shape, into a view of buffer (a copied rule's out is no view: the checked path)
            if type(value) is not np.ndarray or value.shape != out.shape or out.base is not buffer:
                fast = False
                break
            out[:] = value
        if fast and all_finite(buffer):                  # (no NumPy call: hil_common.finite)
            return
    except (ValueError, TypeError):      # numpy's own: the array's values are no numbers
        pass
    # another shape or type, or a non-finite value (or a sum of huge finite ones): checked and named
    for (out, _, _), arr in zip(specs, finite_vectors(*((value, out.shape[0], name) for out, value, name in specs))):
        out[:] = arr


def finite_vector(value, size: int, name: str) -> np.ndarray:
    """One finite float vector of the given size, or a ValueError naming ``name``."""
    return finite_vectors((value, size, name))[0]


_BASE, _ARM = slice(0, 6), slice(6, None)


def _block(matrix: str, rows: slice, cols: slice, doc: str) -> property:
    return property(lambda self: getattr(self, matrix)[rows, cols], doc=doc)


@dataclass
class Eq12Terms:
    """The matrices of seed 004 Eq. (12) at one state; block accessors name the seed's symbols."""

    n: int
    mass_matrix: np.ndarray        # M, (6+n)x(6+n)
    coriolis_matrix: np.ndarray    # C(q, [V_b; dq]), (6+n)x(6+n)
    jacobian_ee: np.ndarray        # [J_b J_m], 6x(6+n), LOCAL (EE body twist)

    M_b = _block('mass_matrix', _BASE, _BASE, 'Locked inertia of the whole servicer at the base CoM frame (6x6).')
    M_bq = _block('mass_matrix', _BASE, _ARM, 'Base-arm coupling inertia (6xn).')
    M_q = _block('mass_matrix', _ARM, _ARM, 'Arm inertia (nxn).')
    C_b = _block('coriolis_matrix', _BASE, _BASE, 'Coriolis block of the base (6x6).')
    C_bq = _block('coriolis_matrix', _BASE, _ARM, 'Coriolis coupling, base rows (6xn).')
    C_qb = _block('coriolis_matrix', _ARM, _BASE, 'Coriolis coupling, arm rows (nx6).')
    C_q = _block('coriolis_matrix', _ARM, _ARM, 'Coriolis block of the arm (nxn).')
    J_b = _block('jacobian_ee', slice(None), _BASE, 'EE body twist from the base twist (6x6).')
    J_m = _block('jacobian_ee', slice(None), _ARM, 'EE body twist from the joint rates (6xn).')


class ServicerModel:
    """Free-floating servicer (base + n-joint arm) of seed 004 Eq. (12) over Pinocchio.

    Parameters
    ----------
    urdf_xml:
        URDF string whose root link frame is the base CoM (e.g.
        :func:`hil_dynamics.models.servicer_lbr_urdf`); loaded with a free-flyer root.
    ee_frame:
        Name of the end-effector / gripper frame where ``F_e`` acts.
    """

    def __init__(self, urdf_xml: str, ee_frame: str):
        model = pin.buildModelFromXML(urdf_xml, pin.JointModelFreeFlyer())
        model.gravity = pin.Motion.Zero()      # in orbit: gravity-free (seed 004 Eq. 12)
        if not model.existFrame(ee_frame):
            raise ConfigError(f'ee_frame {ee_frame!r} is not a frame of the URDF')
        lever = model.inertias[1].lever
        if np.linalg.norm(lever) > 1e-9:
            raise ConfigError(f'the URDF root frame must be at the base CoM (seed 004 Eq. 12), CoM offset {lever.tolist()} m')
        if model.nq != model.nv + 1 or any(j.nq != 1 or j.nv != 1 for j in model.joints[2:]):
            raise ConfigError('the arm must have 1-DOF revolute/prismatic joints only')
        self.model = model
        self.data = model.createData()
        self.n = model.nv - 6
        self.ee_frame = ee_frame
        self.ee_frame_id = model.getFrameId(ee_frame)
        self.joint_names = [model.names[j] for j in range(2, model.njoints)]
        self._q = pin.neutral(model)           # base at identity; arm angles written in place
        self._v = np.zeros(model.nv)
        # the EE frame's pose and Jacobian in one compiled call (kernels.frame_pose_and_jacobian) for a chain
        chain = kernels.Chain.of(model)
        self._ee_kin = None
        if chain is not None:
            frame = model.frames[self.ee_frame_id]
            self._ee_kin = (chain.parents, chain.placements, chain.kind, chain.axis, int(frame.parentJoint),
                            kernels.pose_array(frame.placement), np.empty((model.njoints, 12)), np.empty((2, 12)))
            self.ee_pose_array_and_jacobian(np.zeros(self.n))     # loaded now, not in a node's first tick

    # -- configuration helpers -------------------------------------------------------
    def configuration(self, pose_base: pin.SE3, q_arm) -> np.ndarray:
        """Pinocchio configuration ``[p; quat (x y z w); q]`` of a base pose and joint angles."""
        out = np.empty(self.model.nq)
        out[:7] = pin.SE3ToXYZQUAT(pose_base)
        out[7:] = q_arm
        return out

    def _identity_config(self, q_arm) -> np.ndarray:
        self._q[7:] = q_arm
        return self._q

    # -- kinematics (base CoM frame at the identity) -----------------------------------
    def frame_pose_and_jacobian(self, q_arm, frame: str | int | None = None) -> tuple[pin.SE3, np.ndarray]:
        """``(pose_frame_in_base, J)`` of a frame (default: the EE frame) at joint angles ``q``.

        ``J`` (6x(6+n), Pinocchio ``LOCAL``) maps ``[V_b; dq]`` to the frame's body twist, so for
        the EE frame it is ``[J_b J_m]`` of seed 004 Eq. (12)."""
        fid = self.ee_frame_id if frame is None else (frame if isinstance(frame, int) else self.model.getFrameId(frame))
        cfg = self._identity_config(q_arm)
        pin.forwardKinematics(self.model, self.data, cfg)        # the joints, then this one frame (not all)
        pose = pin.SE3(pin.updateFramePlacement(self.model, self.data, fid))
        return pose, pin.computeFrameJacobian(self.model, self.data, cfg, fid, pin.LOCAL)

    @property
    def ee_chain(self):
        """The EE frame's compiled kinematics as :func:`hil_dynamics.kernels.frame_pose_and_jacobian` and
        :func:`~hil_dynamics.kernels.latched_grasp_step` take them, ``(parents, placements, kind, axis, ee_joint,
        pose_ee_in_joint, xs, tmp)`` (the last two are work arrays), or None for a model that is not a chain."""
        return self._ee_kin

    def ee_pose_array_and_jacobian(self, q_arm) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`frame_pose_and_jacobian` of the EE frame with the pose as a 12-array
        (:func:`hil_dynamics.kernels.pose_array`) and ``J`` C-contiguous (a compiled caller's layout), both new.
        One compiled call for a free-flyer chain (:func:`hil_dynamics.kernels.frame_pose_and_jacobian`;
        ``test_servicer_eq12`` holds it to Pinocchio's), else Pinocchio. A ``q_arm`` that is not ``n`` numbers
        raises InputError (a ValueError)."""
        kin = self._ee_kin
        if kin is None:
            cfg = self._identity_config(q_arm)
            pin.forwardKinematics(self.model, self.data, cfg)        # the joints, then this one frame (not all)
            pose = kernels.pose_array(pin.updateFramePlacement(self.model, self.data, self.ee_frame_id))
            return pose, np.ascontiguousarray(pin.computeFrameJacobian(self.model, self.data, cfg, self.ee_frame_id,
                                                                        pin.LOCAL))
        q = q_arm
        if not (type(q) is np.ndarray and q.dtype is F64_DTYPE and q.shape == (self.n,) and q.flags.c_contiguous):
            # anything else as a contiguous float64 vector: the kernel keeps one compiled version (a strided view
            # would make Numba compile another, in whatever callback first passed one)
            q = np.ascontiguousarray(q_arm, dtype=float).reshape(-1)
            if q.shape != (self.n,):
                raise InputError(f'q_arm must have {self.n} values, got {q.shape[0]}')
        pose, jac = np.empty(12), np.empty((6, self.model.nv))
        parents, placements, kind, axis, ee_joint, frame_in_joint, xs, tmp = kin
        kernels.frame_pose_and_jacobian(parents, placements, kind, axis, q, ee_joint, frame_in_joint, xs, pose, jac,
                                        tmp)
        return pose, jac

    def tool_pose_and_jacobian(self, q_arm, pose_tool_in_flange: pin.SE3) -> tuple[pin.SE3, np.ndarray]:
        """``(pose_tool_in_base, J_tool)`` of a tool rigidly held by the EE frame (the flange):
        ``V_tool = J_tool [V_b; dq]``, ``J_tool = Ad_{g_ft^-1} J_flange`` (the stack's one tool FK)."""
        pose_flange_in_base, jac_flange = self.frame_pose_and_jacobian(q_arm)
        return pose_flange_in_base * pose_tool_in_flange, pose_tool_in_flange.toActionMatrixInverse() @ jac_flange

    def _velocity(self, twist_base_body, dq_arm) -> np.ndarray:
        v = np.empty(self.model.nv)
        v[:6] = twist_base_body
        v[6:] = dq_arm
        return v

    # -- Eq. (12) ------------------------------------------------------------------
    def terms(self, q_arm, twist_base_body, dq_arm) -> Eq12Terms:
        """``M, C, J`` of Eq. (12) at joint angles ``q``, base twist ``V_b`` and joint rates ``dq``."""
        model, data = self.model, self.data
        q = self._identity_config(q_arm)
        v = self._velocity(twist_base_body, dq_arm)
        mass = pin.crba(model, data, q).copy()
        coriolis = pin.computeCoriolisMatrix(model, data, q, v).copy()
        jac = pin.computeFrameJacobian(model, data, q, self.ee_frame_id, pin.LOCAL).copy()
        return Eq12Terms(self.n, mass, coriolis, jac)

    def mass_matrix(self, q_arm) -> np.ndarray:
        return pin.crba(self.model, self.data, self._identity_config(q_arm)).copy()

    def coriolis_matrix(self, q_arm, twist_base_body, dq_arm) -> np.ndarray:
        v = self._velocity(twist_base_body, dq_arm)
        return pin.computeCoriolisMatrix(self.model, self.data, self._identity_config(q_arm), v).copy()

    def coriolis_force(self, q_arm, twist_base_body, dq_arm) -> np.ndarray:
        """``C(q, v) v`` for ``v = [V_b; dq]`` ((6+n,), gravity-free)."""
        v = self._velocity(twist_base_body, dq_arm)
        return pin.nonLinearEffects(self.model, self.data, self._identity_config(q_arm), v).copy()

    def ee_jacobian(self, q_arm) -> np.ndarray:
        """``[J_b J_m]`` (6x(6+n)): EE body twist from ``[V_b; dq]`` (:meth:`ee_pose_array_and_jacobian`'s)."""
        return self.ee_pose_array_and_jacobian(q_arm)[1]

    def generalized_force(self, jacobian_ee, wrench_base_com, tau_arm, wrench_ee) -> np.ndarray:
        """Right-hand side of Eq. (12): ``[F_b; tau] + J^T F_e``."""
        out = jacobian_ee.T @ np.asarray(wrench_ee, dtype=float)
        out[:6] += wrench_base_com
        out[6:] += tau_arm
        return out


# -- relative-to-nominal kinematics (Eq. 15 and its derivative) ---------------------------
def delta_twist(pose_base_in_nominal: pin.SE3, twist_nominal_body) -> np.ndarray:
    """``Delta V_s = Ad_{g_s^-1} V_n`` (seed 004 Eq. 15)."""
    return pose_base_in_nominal.actInv(pin.Motion(np.asarray(twist_nominal_body, dtype=float))).vector


def delta_twist_rate(pose_base_in_nominal: pin.SE3, twist_base_rel_body, twist_nominal_body,
                     accel_nominal_body) -> np.ndarray:
    """``Delta V_s_dot = Ad_{g_s^-1} V_n_dot - [V_s, Delta V_s]`` (time derivative of Eq. 15).

    Uses ``d/dt Ad_{g^-1} = -ad_V Ad_{g^-1}`` for ``g_dot = g V^``. By Eq. (15) this is also
    ``V_b_dot - V_s_dot``.
    """
    g_s = pose_base_in_nominal
    delta = g_s.actInv(pin.Motion(np.asarray(twist_nominal_body, dtype=float)))
    out = g_s.actInv(pin.Motion(np.asarray(accel_nominal_body, dtype=float)))
    return (out - pin.Motion(np.asarray(twist_base_rel_body, dtype=float)).cross(delta)).vector


@dataclass
class ServicerInitialState:
    """Initial conditions of seed 004 §III-C for the servicer admittance."""

    pose_base_in_nominal: pin.SE3   # g_s(0)
    twist_base_body: np.ndarray     # V_b(0)
    twist_base_rel_body: np.ndarray  # V_s(0)


def servicer_initial_state(pose_client_in_orbit_0: pin.SE3, twist_client_body_0, pose_base_in_orbit_0: pin.SE3,
                           twist_base_body_0=None) -> ServicerInitialState:
    """Seed 004 §III-C: ``V_b(0) = Ad_{g_bt} V_t(0)``, ``V_s(0) = V_b(0) - Ad_{g_s^-1} V_t(0)``.

    The nominal starts on the client (``g_n(0) = g_t(0)``, ``V_n(0) = V_t(0)``), so
    ``g_s(0) = g_t(0)^-1 g_b(0)``. ``g_bt = g_b^-1 g_t`` is the client pose in the base frame.
    Without ``twist_base_body_0`` the base starts moving rigidly with the client
    (``V_b(0) = Ad_{g_bt} V_t(0)``), which gives ``V_s(0) = 0``: the lab robot starts at rest.
    """
    twist_t0 = finite_vector(twist_client_body_0, 6, 'twist_client_body_0')
    g_s0 = pose_client_in_orbit_0.actInv(pose_base_in_orbit_0)
    if twist_base_body_0 is None:
        g_bt = pose_base_in_orbit_0.actInv(pose_client_in_orbit_0)
        twist_b0 = g_bt.act(pin.Motion(twist_t0)).vector
    else:
        twist_b0 = finite_vector(twist_base_body_0, 6, 'twist_base_body_0')
    twist_s0 = twist_b0 - delta_twist(g_s0, twist_t0)
    return ServicerInitialState(g_s0, twist_b0, twist_s0)


class ServicerState(RelativeState):
    """State of the servicer admittance at time ``t`` [s]: ``g_n, V_n, g_s, V_s``
    (:class:`hil_dynamics.client.RelativeState`; ``absolute()`` is ``(g_b, V_b)`` by Eq. 23)."""

    __slots__ = ()
    REL_NAMES = ('pose_base_in_nominal', 'twist_base_rel_body')

    @property
    def pose_base_in_nominal(self) -> pin.SE3:
        """``g_s``."""
        return self._pose(1)

    @property
    def twist_base_rel_body(self) -> np.ndarray:
        """``V_s``."""
        return self._twist_rel


class ServicerAdmittance:
    """Admittance rule of seed 004 Eq. (18), integrated on SE(3) with RKMK4.

    ``M_b V_s_dot + M_bq ddq + C_b V_b + C_bq dq = J_b^T F_e + F_b - M_b Delta V_s_dot`` with
    ``V_b = V_s + Delta V_s`` (Eq. 15). The nominal (Eq. 4, the client's unforced motion)
    is integrated in the same step, exactly as :class:`hil_dynamics.client.ClientAdmittance`
    does, so both admittances see the same ``g_n`` at every step.

    Parameters
    ----------
    model:
        The servicer's :class:`ServicerModel`.
    nominal_body:
        Mass properties of the client whose unforced motion is the nominal (``M_t`` of Eq. 4).
    twist_nominal_body_0, pose_nominal_in_orbit_0:
        ``V_n(0) = V_t(0)`` and ``g_n(0) = g_t(0)``.
    pose_base_in_nominal_0, twist_base_rel_body_0:
        ``g_s(0)``, ``V_s(0)`` (see :func:`servicer_initial_state`).
    """

    def __init__(self, model: ServicerModel, nominal_body: RigidBody, twist_nominal_body_0,
                 pose_nominal_in_orbit_0: Optional[pin.SE3], pose_base_in_nominal_0: pin.SE3, twist_base_rel_body_0,
                 t0: float = 0.0):
        self.model = model
        self.nominal_body = nominal_body
        g_n0 = pin.SE3.Identity() if pose_nominal_in_orbit_0 is None else pin.SE3(pose_nominal_in_orbit_0)
        self.state = ServicerState(float(t0), g_n0, finite_vector(twist_nominal_body_0, 6, 'twist_nominal_body_0'),
                                   pin.SE3(pose_base_in_nominal_0),
                                   finite_vector(twist_base_rel_body_0, 6, 'twist_base_rel_body_0'))
        self._zero_wrench = np.zeros(6)
        # Load the compiled step now (cached on disk; ./dev compiles it), not in a node's first tick.
        w = self._fused = self._fused_setup()
        if w.chain is not None:
            n = model.n
            kernels.admittance_rkmk4_step(np.tile(kernels.pose_array(pin.SE3.Identity()), (2, 1)), np.zeros(12), 1e-3,
                                          np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(6), w.fext, w.zero_fext,
                                          w.chain, *self.nominal_matrices(), w.work, w.work_ic, w.poses_out, w.x_out)
            g = kernels.pose_array(pin.SE3.Identity())      # and the step on the samples as held (step's path)
            kernels.admittance_inputs_step(g, np.zeros(6), g.copy(), np.zeros(6), 1e-3, np.zeros(n), np.zeros(n),
                                           np.zeros(n), np.zeros(6), np.zeros(6), w.ee_joint, w.placement, w.fext,
                                           w.zero_fext, w.chain, *self.nominal_matrices(), w.work, w.work_ic,
                                           np.empty((2, 12)), np.empty(12))
        self.nominal_acceleration(self.state.twist_nominal_body)          # and what the nodes and a re-basing call
        self.state.load_kernels()
        if isinstance(self.nominal_body, RigidBody):       # and a hold's or a dropped step's (advance_nominal)
            from hil_dynamics.client import unforced_nominal

            unforced_nominal(self.nominal_body, self.state.pose_nominal_in_orbit, self.state.twist_nominal_body, 0.0,
                             1e-3)

    def rebase(self, pose_nominal_in_orbit: pin.SE3, twist_nominal_body, nominal_body=None) -> ServicerState:
        """Switch to another nominal keeping ``g_b``, ``V_b`` (Eq. 23); ``nominal_body`` gives its
        Eq. (4) mass properties (None keeps the current ones). See :mod:`hil_dynamics.rebase`."""
        from hil_dynamics.rebase import rebase_relative

        s = self.state
        twist_nominal_body = finite_vector(twist_nominal_body, 6, 'twist_nominal_body')
        g_s, v_s = rebase_relative(s.pose_nominal_in_orbit, s.twist_nominal_body, s.pose_base_in_nominal,
                                   s.twist_base_rel_body, pose_nominal_in_orbit, twist_nominal_body)
        if nominal_body is not None:
            self.nominal_body = nominal_body     # read at every step (nominal_matrices)
        self.state = ServicerState(s.t, pin.SE3(pose_nominal_in_orbit), twist_nominal_body, g_s, v_s)
        return self.state

    def rebase_nominal_twist(self, twist_nominal_body, nominal_body=None, twist_rel_body=None) -> ServicerState:
        """:meth:`rebase` onto a nominal of the same pose (``g_n' = g_n``, so ``g_s`` stays) with the twist
        ``V_n'``: the increment of a re-basing ramp (:class:`hil_dynamics.rebase.PlannedRebase`), on arrays
        (:meth:`hil_dynamics.client.RelativeState.with_nominal_twist`, which refuses a bad twist first; with
        ``twist_rel_body``, ``V_s'`` computed with it and checked by the ramp's kernel, ``with_twists``)."""
        state = (self.state.with_nominal_twist(twist_nominal_body) if twist_rel_body is None
                 else self.state.with_twists(twist_nominal_body, twist_rel_body))
        if nominal_body is not None:
            self.nominal_body = nominal_body     # read at every step (nominal_matrices)
        self.state = state
        return state

    def advance_nominal(self, duration_s: float, dt_s: float) -> ServicerState:
        """Move the mission's clock on by ``duration_s`` before it starts: the nominal follows its
        unforced motion (Eq. 4), the relative state stays (the base co-moving with the nominal), as
        :meth:`hil_dynamics.client.ClientAdmittance.advance_nominal` does for the client, so the
        two admittances share the nominal of a common mission epoch; after a re-basing, the re-based one's."""
        from hil_dynamics.client import unforced_nominal

        s = self.state
        if isinstance(self.nominal_body, RigidBody):
            g_n, v_n = unforced_nominal(self.nominal_body, s.pose_nominal_in_orbit, s.twist_nominal_body, duration_s,
                                        dt_s)
        else:                                # a re-based nominal (hil_dynamics.rebase.NominalBody)
            from hil_dynamics.rebase import free_motion

            g_n, v_n = free_motion(self.nominal_body, s.pose_nominal_in_orbit, s.twist_nominal_body, duration_s, dt_s)
        self.state = ServicerState(s.t + float(duration_s), g_n, v_n, s.pose_base_in_nominal, s.twist_base_rel_body)
        return self.state

    def nominal_acceleration(self, twist_nominal_body) -> np.ndarray:
        """``V_n_dot`` of Eq. (4): the unforced rigid-body motion of the nominal
        (:func:`hil_dynamics.kernels.nominal_acceleration_into` with :meth:`nominal_matrices`; the body's own
        ``acceleration`` is its readable form)."""
        out = np.empty(6)
        kernels.nominal_acceleration_into(np.asarray(twist_nominal_body, dtype=float).reshape(6), *self.nominal_matrices(),
                                          out)
        return out

    def base_rows(self, pose_base_in_nominal: pin.SE3, twist_base_rel_body, twist_nominal_body, accel_nominal_body,
                  q_arm, dq_arm, wrench_base_com, wrench_ee):
        """Eq. (18) as linear rows in the unknowns: ``M_b V_s_dot + M_bq ddq = rhs``.

        Returns ``(M_b, M_bq, rhs, M)`` with ``rhs = J_b^T F_e + F_b - M_b Delta V_s_dot -
        C_b V_b - C_bq dq`` and ``M`` the full Eq. (12) mass matrix.
        """
        model = self.model
        m_vs = pin.Motion(np.asarray(twist_base_rel_body, dtype=float))
        delta = pose_base_in_nominal.actInv(pin.Motion(np.asarray(twist_nominal_body, dtype=float)))  # Eq. (15)
        twist_b = (m_vs + delta).vector
        delta_dot = (pose_base_in_nominal.actInv(pin.Motion(np.asarray(accel_nominal_body, dtype=float)))
                     - m_vs.cross(delta)).vector
        mass = model.mass_matrix(q_arm)
        m_b = mass[:6, :6]
        coriolis_b = model.coriolis_force(q_arm, twist_b, dq_arm)[:6]          # C_b V_b + C_bq dq
        jac_b = model.ee_jacobian(q_arm)[:, :6]
        rhs = jac_b.T @ wrench_ee + wrench_base_com - m_b @ delta_dot - coriolis_b
        return m_b, mass[:6, 6:], rhs, mass

    def base_acceleration(self, q_arm, dq_arm, ddq_arm, wrench_base_com, wrench_ee, state: ServicerState | None = None):
        """``V_s_dot`` of Eq. (18) given the measured joint motion (at ``state``, default the current one)."""
        s = self.state if state is None else state
        vn_dot = self.nominal_acceleration(s.twist_nominal_body)
        m_b, m_bq, rhs, _ = self.base_rows(s.pose_base_in_nominal, s.twist_base_rel_body, s.twist_nominal_body,
                                           vn_dot, q_arm, dq_arm, wrench_base_com, wrench_ee)
        return np.linalg.solve(m_b, rhs - m_bq @ ddq_arm)

    def step(self, dt: float, q_arm, dq_arm, ddq_arm, wrench_base_com, wrench_ee) -> ServicerState:
        """Advance by ``dt`` [s] with the measured arm state and wrenches held over the step.

        ``q_arm, dq_arm, ddq_arm`` come from the real arm (Assumption 2: same as in orbit),
        ``wrench_base_com`` is ``F_b`` from the OBSW and ``wrench_ee`` the measured ``F_e``
        (EE frame). All are held constant over the step (zero-order hold of samples), so the
        Eq. (12) matrices are computed once and only the Coriolis terms per RKMK stage.

        This is the fused form of :meth:`step_reference` (same terms, one ``nonLinearEffects``
        per stage, compiled glue, work arrays allocated once); ``test_fast_paths`` checks that
        both agree to 1e-12.
        """
        if not dt > 0.0:
            raise ConfigError(f'dt must be > 0, got {dt!r}')
        w = self.__dict__.get('_fused')
        if w is None:
            w = self._fused = self._fused_setup()
        if w.chain is not None:
            n, s = self.model.n, self.state
            q, dq, ddq, f_b, f_e, v_n, v_s = (q_arm, dq_arm, ddq_arm, wrench_base_com, wrench_ee, s.twist_nominal_body,
                                              s.twist_base_rel_body)
            if type(q) is type(dq) is type(ddq) is type(f_b) is type(f_e) is type(v_n) is type(v_s) is np.ndarray \
                    and q.dtype is dq.dtype is ddq.dtype is f_b.dtype is f_e.dtype is F64_DTYPE \
                    and v_n.dtype is v_s.dtype is F64_DTYPE and q.shape == dq.shape == ddq.shape == (n,) \
                    and f_b.shape == f_e.shape == v_n.shape == v_s.shape == (6,):
                # the samples and the state as they are (float64 vectors; anything else is checked and named by
                # finite_into first): checked, laid out and stepped in one compiled call
                g_n, g_s = s.pose_arrays()
                poses, x = np.empty((2, 12)), np.empty(12)
                nom_m6, nom_m6_inv = self.nominal_matrices()
                if kernels.admittance_inputs_step(g_n, v_n, g_s, v_s, dt, q, dq, ddq, f_b, f_e, w.ee_joint, w.placement,
                                                  w.fext, w.zero_fext, w.chain, nom_m6, nom_m6_inv, w.work, w.work_ic,
                                                  poses, x):
                    # the new state owns the kernel's output arrays: views into them (nothing writes them again)
                    self.state = ServicerState.of_arrays(s.t + dt, poses[0], x[:6], poses[1], x[6:])
                    return self.state
            buf = w.inputs                      # views taken here: a copied rule keeps no views
            q, dq, ddq, f_b, f_e = buf[:n], buf[n:2 * n], buf[2 * n:3 * n], buf[3 * n:3 * n + 6], buf[3 * n + 6:]
            finite_into(buf, (q, q_arm, 'q_arm'), (dq, dq_arm, 'dq_arm'), (ddq, ddq_arm, 'ddq_arm'),
                        (f_b, wrench_base_com, 'wrench_base_com'), (f_e, wrench_ee, 'wrench_ee'))
            return self._step_compiled(dt, q, dq, ddq, f_b, f_e, w)
        return self.step_pinocchio(dt, q_arm, dq_arm, ddq_arm, wrench_base_com, wrench_ee)

    def step_pinocchio(self, dt: float, q_arm, dq_arm, ddq_arm, wrench_base_com, wrench_ee) -> ServicerState:
        """:meth:`step` with Pinocchio's ``crba``/``computeFrameJacobian``/``nonLinearEffects`` and
        compiled glue (the path for a model that is not a free-flyer chain of 1-DOF joints)."""
        n = self.model.n
        q, dq, ddq, f_b, f_e = finite_vectors((q_arm, n, 'q_arm'), (dq_arm, n, 'dq_arm'), (ddq_arm, n, 'ddq_arm'),
                                              (wrench_base_com, 6, 'wrench_base_com'), (wrench_ee, 6, 'wrench_ee'))
        w = self.__dict__.get('_fused')
        if w is None:
            w = self._fused = self._fused_setup()
        model = self.model
        pm = model.model
        cfg = w.cfg
        cfg[7:] = q
        mass = pin.crba(pm, w.d_mass, cfg)
        jac = pin.computeFrameJacobian(pm, w.d_jac, cfg, model.ee_frame_id, pin.LOCAL)
        kernels.admittance_constants(mass, jac, f_e, f_b, ddq, w.m_b, w.m_b_inv, w.const)
        w.vel[6:] = dq
        nom_m6, nom_m6_inv = self.nominal_matrices()
        nominal_acc, stage_kin, rates, nle = (kernels.nominal_acceleration_into, kernels.servicer_stage_kinematics,
                                              kernels.admittance_rates, pin.nonLinearEffects)

        def derivative(t, poses, x, twists_out, rates_out):
            nominal_acc(x[:6], nom_m6, nom_m6_inv, w.vn_dot)                 # Eq. (4)
            stage_kin(poses[1], x[:6], x[6:], w.vn_dot, w.delta, w.vel_b, w.delta_dot)       # Eq. (15)
            bias = nle(pm, w.d_nle, cfg, w.vel)                                              # C_b V_b + C_bq dq
            rates(w.const, w.m_b_inv, bias, w.delta_dot, w.vn_dot, x, twists_out, rates_out)  # Eq. (18)

        s = self.state
        kernels.pose_array(s.pose_nominal_in_orbit, w.poses[0])
        kernels.pose_array(s.pose_base_in_nominal, w.poses[1])
        w.x[:6], w.x[6:] = s.twist_nominal_body, s.twist_base_rel_body
        poses, x = w.rk.step(s.t, dt, w.poses, w.x, derivative)
        self.state = ServicerState(s.t + dt, kernels.array_pose(poses[0]), x[:6].copy(),
                                   kernels.array_pose(poses[1]), x[6:].copy())
        return self.state

    def nominal_matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """``(M, M^-1)`` (6x6) of the body whose unforced motion is the nominal (Eq. 4), read at every
        step so that a re-based nominal is honoured."""
        nominal = self.__dict__.get('_nominal') or self.nominal_body
        return nominal.mass_matrix, nominal.mass_matrix_inv

    def _step_compiled(self, dt, q, dq, ddq, f_b, f_e, w) -> ServicerState:
        """:meth:`step` as one compiled call (:func:`hil_dynamics.kernels.admittance_rkmk4_step`)."""
        w.fext[w.ee_joint] = 0.0                # the EE wrench as the EE joint's external force
        kernels._act_force_add(w.placement, f_e, w.fext[w.ee_joint])
        s = self.state
        w.poses[0], w.poses[1] = s.pose_arrays()
        w.x[:6], w.x[6:] = s.twist_nominal_body, s.twist_base_rel_body
        nom_m6, nom_m6_inv = self.nominal_matrices()
        kernels.admittance_rkmk4_step(w.poses, w.x, dt, q, dq, ddq, f_b, w.fext, w.zero_fext, w.chain, nom_m6,
                                      nom_m6_inv, w.work, w.work_ic, w.poses_out, w.x_out)
        x = w.x_out
        self.state = ServicerState.of_arrays(s.t + dt, w.poses_out[0].copy(), x[:6].copy(), w.poses_out[1].copy(),
                                             x[6:].copy())
        return self.state

    def _fused_setup(self):
        """Work arrays and Pinocchio data of :meth:`step`, allocated once."""
        pm = self.model.model
        w = type('FusedWork', (), {})()
        chain = kernels.Chain.of(pm)
        w.chain = None if chain is None else chain.args()
        if chain is not None:
            w.work, w.work_ic = chain.work, chain.work_ic
            w.fext, w.zero_fext = np.zeros((pm.njoints, 6)), np.zeros((pm.njoints, 6))
            frame = pm.frames[self.model.ee_frame_id]
            w.ee_joint, w.ee_placement = frame.parentJoint, frame.placement
            w.placement = kernels.pose_array(frame.placement)
            w.poses_out, w.x_out = np.empty((2, 12)), np.empty(12)
            w.inputs = np.empty(3 * self.model.n + 12)    # [q; dq; ddq; F_b; F_e], checked at once (finite_into)
        w.rk = FusedRKMK4(2, 12)
        w.d_mass, w.d_jac, w.d_nle = pm.createData(), pm.createData(), pm.createData()
        w.cfg, w.vel = pin.neutral(pm), np.zeros(pm.nv)
        w.vel_b = w.vel[:6]
        w.vn_dot, w.delta, w.delta_dot, w.const = np.empty(6), np.empty(6), np.empty(6), np.empty(6)
        w.m_b, w.m_b_inv = np.empty((6, 6)), np.empty((6, 6))
        w.poses, w.x = np.empty((2, 12)), np.empty(12)
        return w

    def step_reference(self, dt: float, q_arm, dq_arm, ddq_arm, wrench_base_com, wrench_ee) -> ServicerState:
        """The readable form of :meth:`step` on ``pin.SE3``/``pin.Motion`` with :func:`rkmk4`."""
        if not dt > 0.0:
            raise ConfigError(f'dt must be > 0, got {dt!r}')
        n = self.model.n
        q, dq, ddq, f_b, f_e = finite_vectors((q_arm, n, 'q_arm'), (dq_arm, n, 'dq_arm'), (ddq_arm, n, 'ddq_arm'),
                                              (wrench_base_com, 6, 'wrench_base_com'), (wrench_ee, 6, 'wrench_ee'))
        model = self.model
        mass = model.mass_matrix(q)
        jac_b = model.ee_jacobian(q)[:, :6]
        m_b_inv = np.linalg.inv(mass[:6, :6])
        # M_b^-1 times the terms of Eq. (18) that do not depend on the integrated state.
        const = m_b_inv @ (jac_b.T @ f_e + f_b - mass[:6, 6:] @ ddq)
        minv_t = self.nominal_body.mass_matrix_inv
        inertia_t = self.nominal_body.inertia
        pin_model, pin_data = model.model, model.data
        config = model.configuration(pin.SE3.Identity(), q)
        velocity = np.empty(pin_model.nv)
        velocity[6:] = dq
        nle = pin.nonLinearEffects
        motion = pin.Motion

        def derivative(t, poses, vecs):
            g_s = poses[1]
            m_vn, m_vs = vecs
            vn_dot = motion(-(minv_t @ inertia_t.vxiv(m_vn).vector))             # Eq. (4)
            delta = g_s.actInv(m_vn)                                             # Eq. (15)
            velocity[:6] = (m_vs + delta).vector                                 # V_b
            h_b = nle(pin_model, pin_data, config, velocity)[:6]                 # C_b V_b + C_bq dq
            # Eq. (18): V_s_dot = M_b^-1 (...) - Delta V_s_dot, Delta V_s_dot = Ad V_n_dot - [V_s, Delta V_s].
            vs_dot = motion(const - m_b_inv @ h_b) - g_s.actInv(vn_dot) + m_vs.cross(delta)
            return (m_vn, m_vs), (vn_dot, vs_dot)

        s = self.state
        (g_n, g_s), (m_vn, m_vs) = rkmk4(s.t, dt, (s.pose_nominal_in_orbit, s.pose_base_in_nominal),
                                         [motion(s.twist_nominal_body), motion(s.twist_base_rel_body)], derivative)
        self.state = ServicerState(s.t + dt, g_n, m_vn.vector.copy(), g_s, m_vs.vector.copy())
        return self.state

    def absolute(self) -> tuple[pin.SE3, np.ndarray]:
        return self.state.absolute()


@dataclass
class ArmTorques:
    """Eq. (22) split in its terms [N m]; ``tau_q`` is what is commanded to the real arm."""

    tau_q: np.ndarray
    tau_ff1: np.ndarray
    tau_ff2: np.ndarray
    tau_ff3: np.ndarray
    gravity: np.ndarray   # G of Eq. (20): generalised gravity force on the joints (tau_q has -G)


class ArmFeedForward:
    """The arm torque law of seed 004 Eq. (22)::

        tau_q = tau - G + M_bq^T (V_s_dot - V_b_dot)                      (tau_ff1)
                        + (C_q(dq, V_s) - C_q(dq, V_b)) dq                 (tau_ff2)
                        + C_qs(dq, V_s) V_s - C_qb(dq, V_b) V_b            (tau_ff3)

    ``V_s_dot - V_b_dot = -Delta V_s_dot`` by Eq. (15), so ``tau_ff1`` needs no joint
    acceleration. ``G`` is the gravity force on the real arm on ground, whose base pose in
    the lab is ``pose_nominal_in_lab * g_s`` (the lab frame the relative motion is realised
    in), with gravity along the lab's -z. Each term can be switched off (for tests).

    Parameters
    ----------
    model:
        The servicer model (Assumption 2: the real arm has the same parameters).
    pose_nominal_in_lab:
        Lab pose of the nominal frame, i.e. where the facility realises ``g_s = I``.
    gravity_m_s2:
        Magnitude of the lab gravity [m/s^2], along lab -z.
    """

    def __init__(self, model: ServicerModel, pose_nominal_in_lab: Optional[pin.SE3] = None,
                 gravity_m_s2: float = STANDARD_GRAVITY_M_S2, use_ff1: bool = True, use_ff2: bool = True,
                 use_ff3: bool = True, use_gravity: bool = True):
        gravity_m_s2 = float(gravity_m_s2)
        if not np.isfinite(gravity_m_s2) or gravity_m_s2 < 0.0:
            raise ConfigError(f'gravity_m_s2 must be finite and >= 0, got {gravity_m_s2!r}')
        self.model = model
        self.pose_nominal_in_lab = pin.SE3.Identity() if pose_nominal_in_lab is None else pin.SE3(pose_nominal_in_lab)
        self.use_ff1, self.use_ff2, self.use_ff3, self.use_gravity = use_ff1, use_ff2, use_ff3, use_gravity
        # A separate Pinocchio model with the lab gravity for G.
        self.lab_model = model.model.copy()
        self.lab_model.gravity = pin.Motion(np.array([0.0, 0.0, -gravity_m_s2, 0.0, 0.0, 0.0]))
        self.lab_data = self.lab_model.createData()
        # Load the compiled command now (cached on disk; ./dev compiles it), not in a node's first tick (its result
        # is thrown away; nothing of the law changes but its work arrays, made now instead)
        n = model.n
        self.torque_command(np.zeros(n), np.zeros(n), np.zeros(n), kernels.pose_array(pin.SE3.Identity()), np.zeros(6),
                            np.zeros(6), np.zeros(6))

    def gravity_torque(self, pose_base_in_nominal: pin.SE3, q_arm) -> np.ndarray:
        """``G`` of Eq. (20): the generalised gravity force on the joints of the arm on ground."""
        q_lab = self.model.configuration(self.pose_nominal_in_lab * pose_base_in_nominal, q_arm)
        return -pin.computeGeneralizedGravity(self.lab_model, self.lab_data, q_lab)[6:].copy()

    def torques(self, tau_obsw, q_arm, dq_arm, pose_base_in_nominal: pin.SE3, twist_base_rel_body,
                twist_nominal_body, accel_nominal_body, mass_matrix=None) -> ArmTorques:
        """Eq. (22) at the current state; ``tau_obsw`` is ``tau`` from the OBSW [N m].

        ``mass_matrix`` (the Eq. 12 ``M`` at ``q_arm``) may be passed when already computed.
        Raises ValueError naming ``tau_obsw``, ``q_arm`` or ``dq_arm`` if one is malformed.

        Fused form of :meth:`torques_reference`: ``C(q, v)`` is linear in ``v``, so
        ``tau_ff2 = C([V_s - V_b; 0])_q dq`` needs one Coriolis matrix instead of two, and
        ``tau_ff2 + tau_ff3 = (C(v_s) v_s - C(v_b) v_b)_q`` is a difference of two
        ``nonLinearEffects``. ``test_fast_paths`` checks both forms agree to 1e-12.
        """
        model = self.model
        n = model.n
        tau_obsw, q_arm, dq_arm = finite_vectors((tau_obsw, n, 'tau_obsw'), (q_arm, n, 'q_arm'), (dq_arm, n, 'dq_arm'))
        w = self.__dict__.get('_fused')
        if w is None:
            pm = model.model
            w = self._fused = type('FusedWork', (), {})()
            w.d_mass, w.d_cor, w.d_s, w.d_b = pm.createData(), pm.createData(), pm.createData(), pm.createData()
            w.cfg, w.vel_s, w.vel_b, w.vel_d = pin.neutral(pm), np.zeros(pm.nv), np.zeros(pm.nv), np.zeros(pm.nv)
            w.twist_b = w.vel_b[:6]
            w.pose, w.delta, w.delta_dot = np.empty(12), np.empty(6), np.empty(6)
            w.pose_lab, w.cfg_lab = np.empty(12), np.empty(pm.nq)
            w.nominal_in_lab = kernels.pose_array(self.pose_nominal_in_lab)
        pm = model.model
        kernels.pose_array(pose_base_in_nominal, w.pose)
        v_s = np.asarray(twist_base_rel_body, dtype=float)
        kernels.servicer_stage_kinematics(w.pose, np.asarray(twist_nominal_body, dtype=float), v_s,
                                          np.asarray(accel_nominal_body, dtype=float), w.delta, w.twist_b, w.delta_dot)
        cfg = w.cfg
        cfg[7:] = q_arm
        zero = np.zeros(n)
        tau_ff1 = zero
        if self.use_ff1:
            mass = pin.crba(pm, w.d_mass, cfg) if mass_matrix is None else mass_matrix
            tau_ff1 = -(mass[6:, :6] @ w.delta_dot)
        tau_ff2 = tau_ff3 = zero
        if self.use_ff2 or self.use_ff3:
            w.vel_d[:6] = -w.delta                                           # V_s - V_b
            ff2 = pin.computeCoriolisMatrix(pm, w.d_cor, cfg, w.vel_d)[6:, 6:] @ dq_arm
            if self.use_ff2:
                tau_ff2 = ff2
            if self.use_ff3:
                w.vel_s[:6] = v_s
                w.vel_s[6:] = dq_arm
                w.vel_b[6:] = dq_arm
                tau_ff3 = (pin.nonLinearEffects(pm, w.d_s, cfg, w.vel_s)[6:]
                           - pin.nonLinearEffects(pm, w.d_b, cfg, w.vel_b)[6:] - ff2)
        gravity = zero
        if self.use_gravity:
            kernels.pose_mul_into(w.nominal_in_lab, w.pose, w.pose_lab)
            kernels.xyzquat_into(w.pose_lab, w.cfg_lab)
            w.cfg_lab[7:] = q_arm
            gravity = -pin.computeGeneralizedGravity(self.lab_model, self.lab_data, w.cfg_lab)[6:]
        tau_q = tau_obsw - gravity + tau_ff1 + tau_ff2 + tau_ff3
        return ArmTorques(tau_q, tau_ff1, tau_ff2, tau_ff3, gravity)

    def torque_command(self, tau_obsw, q_arm, dq_arm, pose_base_in_nominal, twist_base_rel_body, twist_nominal_body,
                       accel_nominal_body) -> np.ndarray:
        """``tau_q`` of Eq. (22), what the real arm is commanded, in one compiled call
        (:func:`hil_dynamics.kernels.arm_torque_command`: the chain's CRBA and RNEAs). ``pose_base_in_nominal``
        is a ``pin.SE3`` or a 12-array (:meth:`hil_dynamics.client.RelativeState.pose_arrays`). The terms
        apart: :meth:`torques`; for a model that is not a free-flyer chain, or with ``tau_ff2`` and ``tau_ff3``
        switched differently, it is :meth:`torques`' ``tau_q``. ``test_fast_paths`` holds it to
        :meth:`torques_reference` to 1e-12. Raises ValueError naming a malformed input."""
        w = self.__dict__.get('_command')
        if w is None:
            w = self._command = self._command_setup()
        n = self.model.n
        if w is False or self.use_ff2 != self.use_ff3:       # the switches are read at every call, as torques does
            pose = pose_base_in_nominal if isinstance(pose_base_in_nominal, pin.SE3) else kernels.array_pose(
                np.asarray(pose_base_in_nominal, dtype=float))
            tau_obsw, q_arm, dq_arm, v_s, v_n, vn_dot = finite_vectors(
                (tau_obsw, n, 'tau_obsw'), (q_arm, n, 'q_arm'), (dq_arm, n, 'dq_arm'),
                (twist_base_rel_body, 6, 'twist_base_rel_body'), (twist_nominal_body, 6, 'twist_nominal_body'),
                (accel_nominal_body, 6, 'accel_nominal_body'))
            return self.torques(tau_obsw, q_arm, dq_arm, pose, v_s, v_n, vn_dot).tau_q
        buf = w.inputs                            # views taken here: a copied object keeps no views
        tau, q, dq = buf[:n], buf[n:2 * n], buf[2 * n:3 * n]
        v_s, v_n, vn_dot = buf[3 * n:3 * n + 6], buf[3 * n + 6:3 * n + 12], buf[3 * n + 12:]
        finite_into(buf, (tau, tau_obsw, 'tau_obsw'), (q, q_arm, 'q_arm'), (dq, dq_arm, 'dq_arm'),
                    (v_s, twist_base_rel_body, 'twist_base_rel_body'), (v_n, twist_nominal_body, 'twist_nominal_body'),
                    (vn_dot, accel_nominal_body, 'accel_nominal_body'))
        if isinstance(pose_base_in_nominal, pin.SE3):
            pose = kernels.pose_array(pose_base_in_nominal, w.pose)
        else:
            pose = pose_base_in_nominal
        tau_q = np.empty(n)
        kernels.arm_torque_command(pose, v_n, v_s, vn_dot, q, dq, tau, *w.chain, w.lab_gravity, w.nominal_in_lab,
                                   *self.kernel_weights(), w.work, w.work_ic, w.tw, tau_q)
        return tau_q

    def hold_torques(self, pose_base_in_nominal, q_arm) -> np.ndarray:
        """The arm's torques while the servicer side holds: only its gravity compensation, ``-G`` of Eq. (20)
        (``-``:meth:`gravity_torque`), in one compiled call (:func:`hil_dynamics.kernels.hold_torque_command`, the
        chain's RNEA; ``test_fast_paths`` holds it to :meth:`gravity_torque` to 1e-12). ``pose_base_in_nominal`` is
        a ``pin.SE3`` or a 12-array; for a model that is not a free-flyer chain it is ``-gravity_torque``. Raises
        ValueError naming a malformed ``q_arm``."""
        w = self.__dict__.get('_command')
        if w is None:
            w = self._command = self._command_setup()
        if w is False:
            pose = pose_base_in_nominal if isinstance(pose_base_in_nominal, pin.SE3) else kernels.array_pose(
                np.asarray(pose_base_in_nominal, dtype=float))
            return -self.gravity_torque(pose, finite_vectors((q_arm, self.model.n, 'q_arm'))[0])
        pose = kernels.pose_array(pose_base_in_nominal, w.pose) if isinstance(pose_base_in_nominal, pin.SE3) \
            else pose_base_in_nominal
        tau_q = np.empty(self.model.n)
        q = np.ascontiguousarray(finite_vectors((q_arm, self.model.n, 'q_arm'))[0])
        kernels.hold_torque_command(pose, *self.hold_args(q), tau_q)
        return tau_q

    def hold_args(self, q_arm) -> tuple:
        """``kernels.hold_torque_command``'s arguments after the pose and before the torques, for the joints
        ``q_arm`` (a float64 array; a compiled caller passes the array it keeps the measured joints in)."""
        w = self._command
        return (q_arm, *w.chain, w.lab_gravity, w.nominal_in_lab, w.work, w.tw)

    def kernel_weights(self) -> tuple[float, float, float]:
        """The compiled Eq. (22) steps' switches, ``(tau_ff1, tau_ff2 + tau_ff3, G)`` as 1.0 or 0.0 (they take
        ``tau_ff2`` and ``tau_ff3`` together: callers with the two switched differently take the readable path)."""
        return (1.0 if self.use_ff1 else 0.0, 1.0 if (self.use_ff2 and self.use_ff3) else 0.0,
                1.0 if self.use_gravity else 0.0)

    def _command_setup(self):
        """Work arrays of :meth:`torque_command` (False: the model is no free-flyer chain)."""
        chain = kernels.Chain.of(self.model.model)
        if chain is None:
            return False
        w = type('CommandWork', (), {})()
        n, nv = self.model.n, self.model.model.nv
        w.chain = chain.args()
        w.work, w.work_ic = chain.work, chain.work_ic
        w.tw = np.empty((6 + nv, nv))
        w.inputs = np.empty(3 * n + 18)     # [tau; q; dq; V_s; V_n; V_n_dot], checked at once (finite_into)
        w.pose = np.empty(12)
        w.lab_gravity = np.asarray(self.lab_model.gravity.vector, dtype=float).copy()
        w.nominal_in_lab = kernels.pose_array(self.pose_nominal_in_lab)
        return w

    def torques_reference(self, tau_obsw, q_arm, dq_arm, pose_base_in_nominal: pin.SE3, twist_base_rel_body,
                          twist_nominal_body, accel_nominal_body, mass_matrix=None) -> ArmTorques:
        """The readable form of :meth:`torques`: Eq. (22) term by term from the Eq. (12) blocks."""
        model = self.model
        n = model.n
        tau_obsw, q_arm, dq_arm = finite_vectors((tau_obsw, n, 'tau_obsw'), (q_arm, n, 'q_arm'), (dq_arm, n, 'dq_arm'))
        m_vs = pin.Motion(np.asarray(twist_base_rel_body, dtype=float))
        delta = pose_base_in_nominal.actInv(pin.Motion(np.asarray(twist_nominal_body, dtype=float)))   # Eq. (15)
        twist_s = m_vs.vector
        twist_b = (m_vs + delta).vector
        zero = np.zeros(model.n)
        tau_ff1 = zero
        if self.use_ff1:
            delta_dot = (pose_base_in_nominal.actInv(pin.Motion(np.asarray(accel_nominal_body, dtype=float)))
                         - m_vs.cross(delta)).vector
            mass = model.mass_matrix(q_arm) if mass_matrix is None else mass_matrix
            tau_ff1 = -mass[6:, :6] @ delta_dot
        tau_ff2 = tau_ff3 = zero
        if self.use_ff2 or self.use_ff3:
            c_s = model.coriolis_matrix(q_arm, twist_s, dq_arm)[6:]
            c_b = model.coriolis_matrix(q_arm, twist_b, dq_arm)[6:]
            if self.use_ff2:
                tau_ff2 = (c_s[:, 6:] - c_b[:, 6:]) @ dq_arm
            if self.use_ff3:
                tau_ff3 = c_s[:, :6] @ twist_s - c_b[:, :6] @ twist_b
        gravity = self.gravity_torque(pose_base_in_nominal, q_arm) if self.use_gravity else zero
        tau_q = tau_obsw - gravity + tau_ff1 + tau_ff2 + tau_ff3
        return ArmTorques(tau_q, tau_ff1, tau_ff2, tau_ff3, gravity)


def _held_f64(*arrays_and_sizes) -> bool:
    """Each array is a C-contiguous float64 vector of its size (what the compiled steps take as they are)."""
    for a, size in arrays_and_sizes:
        if not (type(a) is np.ndarray and a.dtype is F64_DTYPE and a.shape == (size,) and a.flags.c_contiguous):
            return False
    return True


def side_port_args(adm, ff, port, acc, prev, dt, q, dq, ddq, f_b, f_e, v_meas, tau) -> tuple[tuple, tuple]:
    """The arguments of :func:`hil_dynamics.kernels.side_port_step` on ``adm``'s state, its and ``ff``'s work arrays
    and the port's accumulators ``acc``, ``prev``, and the arrays it writes ``(F_pc, poses, x, tau_q)``."""
    s, fused, command, n = adm.state, adm._fused, ff._command, adm.model.n
    g_n, g_s = s.pose_arrays()
    nom_m6, nom_m6_inv = adm.nominal_matrices()
    wrench_pc, poses, x, tau_q = np.empty(6), np.empty((2, 12)), np.empty(12), np.empty(n)
    args = (acc, prev, port.mass_matrix, v_meas, dt, port.enabled, port.max_rate_per_s, port.threshold_j, wrench_pc,
            *adm.model.ee_chain, g_n, s.twist_nominal_body, g_s, s.twist_base_rel_body, q, dq, ddq, f_b, f_e, tau,
            fused.ee_joint, fused.placement, fused.fext, fused.zero_fext, fused.chain, nom_m6, nom_m6_inv, fused.work,
            fused.work_ic, poses, x, command.chain, command.lab_gravity, command.nominal_in_lab, *ff.kernel_weights(),
            command.work, command.work_ic, command.tw, tau_q)
    return args, (wrench_pc, poses, x, tau_q)


def _side_port_call(adm, ff, port, acc, prev, dt, q, dq, ddq, f_b, f_e, v_meas, tau):
    """:func:`hil_dynamics.kernels.side_port_step` on :func:`side_port_args`: ``(E_obs, pending, status, F_pc, poses,
    x, tau_q)``."""
    args, (wrench_pc, poses, x, tau_q) = side_port_args(adm, ff, port, acc, prev, dt, q, dq, ddq, f_b, f_e, v_meas, tau)
    excess, pending, status = kernels.side_port_step(*args)
    return excess, pending, status, wrench_pc, poses, x, tau_q


def load_port_step(adm: ServicerAdmittance, ff: ArmFeedForward, port) -> None:
    """Load :func:`port_step`'s compiled call now (where the rule is built, not in a node's first sample), on copies
    of the port's accumulators: nothing of ``adm``, ``ff`` or ``port`` changes (the work arrays are scratch)."""
    if adm.__dict__.get('_fused') is None:
        adm._fused = adm._fused_setup()
    if ff.__dict__.get('_command') is None:
        ff._command = ff._command_setup()
    if adm._fused.chain is None or ff._command is False or adm.model.ee_chain is None or port.n != 6:
        return
    n = adm.model.n
    _side_port_call(adm, ff, port, port._acc.copy(), port._prev.copy(), 1e-3, np.zeros(n), np.zeros(n), np.zeros(n),
                    np.zeros(6), np.zeros(6), np.zeros(6), np.zeros(n))
    ff.hold_torques(adm.state.pose_arrays()[1], np.zeros(n))      # and a hold's torques (the work arrays: scratch)


def port_step(adm: ServicerAdmittance, ff: ArmFeedForward, port, dt: float, q_arm, dq_arm, ddq_arm, wrench_base_com,
              wrench_ee, twist_measured=None, tau_obsw=None):
    """One step of the live servicer side (``servicer_admittance_node``, the fused hot path) with its table port.

    * ``V_n_dot`` of Eq. (4) at the state before the step;
    * the port's passivity observer/controller ``port`` (a 6-DOF
      :class:`hil_dynamics.passivity.PassivityController`, seed 004 Eq. 28, §VI) over the step:
      ``port.update(twist_measured or V_s, V_s, J_b^T F_e, dt)``, ``V_s`` the relative base twist before the step;
    * :meth:`ServicerAdmittance.step` under ``F_b + F_pc`` (Eq. 18, the samples as held);
    * with ``tau_obsw``, Eq. (22)'s ``tau_q`` at the new state (:meth:`ArmFeedForward.torque_command` with that
      ``V_n_dot``), else None.

    Returns ``(state, port_output, tau_q)``. For held float64 inputs, a free-flyer chain and ``tau_ff2`` switched as
    ``tau_ff3``, one compiled call (:func:`hil_dynamics.kernels.side_port_step`); otherwise the calls above one after
    the other. Both give the same results (to 1e-12: the port wrench's sum) and refuse the same inputs with the
    same errors, after the same changes (``test_fast_paths``)."""
    inputs = (q_arm, dq_arm, ddq_arm, wrench_base_com, wrench_ee, tau_obsw)
    call = port_step_args(adm, ff, port, dt, *inputs[:5], twist_measured, tau_obsw)
    if call is not None:
        done = port_step_outcome(adm, ff, port, dt, inputs, kernels.side_port_step(*call[0]), call[1])
        if done is not None:
            return done
    s = adm.state
    v_n, v_s = s.twist_nominal_body, s.twist_base_rel_body
    v_m = v_s if twist_measured is None else twist_measured
    vn_dot = adm.nominal_acceleration(v_n)
    jac_b = adm.model.ee_jacobian(q_arm)[:, :6]
    out = port.update(v_m, v_s, jac_b.T @ np.asarray(wrench_ee, dtype=float), dt)
    state = adm.step(dt, q_arm, dq_arm, ddq_arm, np.asarray(wrench_base_com, dtype=float) + out.wrench_pc, wrench_ee)
    if tau_obsw is None:
        return state, out, None
    return state, out, ff.torque_command(tau_obsw, q_arm, dq_arm, state.pose_arrays()[1], state.twist_base_rel_body,
                                         state.twist_nominal_body, vn_dot)


def port_step_args(adm: ServicerAdmittance, ff: ArmFeedForward, port, dt: float, q_arm, dq_arm, ddq_arm, wrench_base_com,
                   wrench_ee, twist_measured, tau_obsw) -> tuple[tuple, tuple] | None:
    """:func:`port_step`'s compiled call prepared (:func:`side_port_args`), or None where it takes the calls one
    after the other (no torques wanted, inputs that are not held float64 vectors, no free-flyer chain, ...)."""
    s = adm.state
    v_n, v_s = s.twist_nominal_body, s.twist_base_rel_body
    v_m = v_s if twist_measured is None else twist_measured
    n = adm.model.n
    fused, command, kin = adm.__dict__.get('_fused'), ff.__dict__.get('_command'), adm.model.ee_chain
    if fused is None:
        fused = adm._fused = adm._fused_setup()
    if command is None:
        command = ff._command = ff._command_setup()
    if tau_obsw is not None and fused.chain is not None and command is not False and kin is not None \
            and ff.use_ff2 == ff.use_ff3 and port.n == 6 and dt > 0.0 \
            and _held_f64((q_arm, n), (dq_arm, n), (ddq_arm, n), (tau_obsw, n), (wrench_base_com, 6), (wrench_ee, 6),
                          (v_m, 6), (v_n, 6), (v_s, 6)):
        return side_port_args(adm, ff, port, port._acc, port._prev, float(dt), q_arm, dq_arm, ddq_arm, wrench_base_com,
                              wrench_ee, v_m, tau_obsw)
    return None


def port_step_outcome(adm: ServicerAdmittance, ff: ArmFeedForward, port, dt: float, inputs: tuple, result: tuple,
                      outputs: tuple):
    """:func:`port_step`'s result after its compiled call returned ``result`` = ``(E_obs, pending, status)`` on
    :func:`port_step_args`' output arrays; ``inputs`` = ``(q_arm, dq_arm, ddq_arm, wrench_base_com, wrench_ee,
    tau_obsw)``. None when the port refused its input (status 1, nothing changed): the calls one after the other
    then raise the error."""
    excess, pending, status = result
    if status == 1:
        return None
    q_arm, dq_arm, ddq_arm, wrench_base_com, wrench_ee, tau_obsw = inputs
    wrench_pc, poses, x, tau_q = outputs
    s = adm.state
    out = port.output(excess, pending, wrench_pc)
    if status == 2:         # the port observed; the step's inputs refused as step() refuses them (it raises)
        state = adm.step(dt, q_arm, dq_arm, ddq_arm, wrench_base_com + wrench_pc, wrench_ee)
    else:
        # the new state owns the kernel's output arrays (nothing writes them again)
        state = adm.state = ServicerState.of_arrays(s.t + dt, poses[0], x[:6], poses[1], x[6:])
    if status == 0:
        return state, out, tau_q
    vn_dot = adm.nominal_acceleration(s.twist_nominal_body)
    return state, out, ff.torque_command(tau_obsw, q_arm, dq_arm, state.pose_arrays()[1], state.twist_base_rel_body,
                                         state.twist_nominal_body, vn_dot)
