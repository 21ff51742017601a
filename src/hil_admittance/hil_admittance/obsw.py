"""Example on-board (OBSW) controller for the Envisat capture (seed 004 §III-C Fig. 7, §V).

This is the *controller under test* slot: a user replaces it with their own. It reads only
what an on-board computer has -- the absolute states of Eq. (23) (client ``g_t, V_t``,
servicer base ``g_b, V_b``, orbit frame, body twists) and the arm's joints ``q, dq`` -- and
outputs the base wrench ``F_b`` (base body frame, about the base CoM) and the joint torques
``tau``, plus the gripper command. It never sees lab quantities.

Phases (seed 004 §V):

1. ``sync`` -- the base regulates its pose relative to the tumbling client:
   ``F_b = C_b V_b + C_bq dq - K_b e_b - D_b (V_b - V_b*)``, with ``g_b* = g_t g_bt*``
   the desired base pose, ``V_b* = Ad_{g_b^-1 g_t} V_t`` the base twist of rigid co-motion
   with the client, ``e_b = log6(g_b*^-1 g_b)``; the arm holds its joints (joint PD).
2. ``approach`` (from ``sync_duration_s``) -- the base keeps synchronising; the tool follows a
   minimum-jerk path, fixed in the client frame, from where it is to the grasp fixture,
   with a Cartesian compliance ``tau = h_q + J_m^T Lambda (-w^2 e_x - 2 zeta w (V_tool - V_fixture)) - D_n dq``
   (``h_q = C_qb V_b + C_q dq`` the Eq. 12 Coriolis feed-forward, ``Lambda`` the tool inertia
   of the arm on its free base); the synchronisation phase holds ``q`` with a joint PD.
3. ``grasp`` -- once the path is done and the tool is within tolerance of the fixture and
   slow relative to it, the gripper closes; the compliance keeps tracking while it closes.
4. ``post_grasp`` -- thrusters off (``F_b = 0``); the arm rigidises the stack and dissipates the
   relative motion (seed 004 §IV-B, and the rigidisation of [3] §6.2.2 it mentions): it
   applies to the base, through the grasped tool, the wrench ``W_b = -K_r e_r - D_r V_r`` of an
   impedance about the base-client relative pose at closure (``e_r``, and ``V_r`` the base
   twist relative to the client, base axes), ``tau = J_m^T W_tool`` with ``W_tool`` the
   opposite of ``W_b`` seen at the tool, plus a soft joint PD about the angles at closure
   ``-M_red (w^2 (q - q_grasp) + d dq)``. Damping the heavy base through a joint damper on
   the light wrist would need gains a sampled law cannot apply; the relative twist varies
   slowly, so this loop can.

Plain Python, no rclpy: the controller node, the lockstep runner and the absolute
reference all call :meth:`ObswController.update` at the OBSW rate. It runs the arithmetic
compiled (:mod:`hil_admittance.obsw_kernel`, one call per update; issue 17) and keeps the phase
logic here; :meth:`ObswController.update_reference` is the readable law it is tested against.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from hil_dynamics.kernels import array_pose, pose_array
from hil_dynamics.servicer import ServicerModel
from hil_dynamics.profiles import min_jerk
from hil_common.errors import ConfigError
from hil_admittance import obsw_kernel as kernel

SYNC, APPROACH, GRASP, POST_GRASP = 'sync', 'approach', 'grasp', 'post_grasp'
PHASES = (SYNC, APPROACH, GRASP, POST_GRASP)


@dataclass
class ObswGains:
    """Gains and limits of the example controller (SI units; linear first where 6-vectors).

    The arm gains are bandwidths [rad/s] shaped by the on-board inertia (the arm inertia
    reduced by the free-floating base, ``M_q - M_bq^T M_b^-1 M_bq``, and its Cartesian
    image at the tool), so that no joint, however light, is over-damped by a sampled law.
    """

    base_stiffness: np.ndarray = field(default_factory=lambda: np.array([1800.0] * 3 + [1000.0] * 3))
    base_damping: np.ndarray = field(default_factory=lambda: np.array([3600.0] * 3 + [2000.0] * 3))
    tool_bandwidth_rad_s: np.ndarray = field(default_factory=lambda: np.array([1.2] * 3 + [1.2] * 3))
    tool_damping_ratio: float = 1.0
    joint_hold_bandwidth_rad_s: float = 2.0     # sync phase joint PD
    null_damping_per_s: float = 1.0             # joint damping in the approach [1/s, times the arm inertia]
    # Rigidisation after the grasp: an impedance of the base relative to the client about their
    # relative pose at closure, applied by the arm (thrusters off) ...
    post_grasp_base_stiffness: np.ndarray = field(default_factory=lambda: np.array([450.0] * 3 + [250.0] * 3))
    post_grasp_base_damping: np.ndarray = field(default_factory=lambda: np.array([1800.0] * 3 + [1000.0] * 3))
    # ... plus a joint PD about the angles at closure shaped by the arm inertia (the arm's
    # null space); the damping rate must stay below 1/dt of the OBSW rate.
    post_grasp_bandwidth_rad_s: float = 5.0
    post_grasp_damping_per_s: float = 50.0
    sync_duration_s: float = 9.0                # seed 004 §V: synchronisation 0-9 s
    approach_duration_s: float = 20.0
    grasp_position_tol_m: float = 0.005
    grasp_angle_tol_rad: float = 0.0175
    grasp_speed_tol_m_s: float = 0.005
    grasp_settle_s: float = 0.6                 # closing time of the gripper: keep tracking meanwhile
    max_force_n: float = 200.0                  # thruster saturation (per axis)
    max_torque_nm: float = 100.0                # attitude actuator saturation (per axis)
    max_joint_torque_nm: float = 60.0           # arm torque limit (per joint)

    def __post_init__(self):
        for name, value in vars(self).items():
            arr = np.asarray(value, dtype=float)
            if not np.all(np.isfinite(arr)) or np.any(arr < 0.0):
                raise ConfigError(f'{name} must be finite and >= 0, got {arr.tolist()}')
            if arr.ndim == 1 and arr.shape != (6,):
                raise ConfigError(f'{name} must have 6 elements, got {arr.shape[0]}')


@dataclass
class ObswCommand:
    phase: str
    wrench_base_com: np.ndarray    # F_b [N, N m], base body frame
    tau_arm: np.ndarray            # tau [N m]
    close_gripper: bool
    base_error: np.ndarray         # e_b = log6(g_b*^-1 g_b) (linear first) [m, rad]
    tool_error: np.ndarray         # tool to fixture (target) error in tool axes [m, rad]


class ObswController:
    """The example OBSW rule (see the module docstring).

    Parameters
    ----------
    model:
        The on-board servicer model (``ServicerModel``; its EE frame is the arm flange).
    pose_tool_in_flange:
        Gripper tool frame on the flange.
    pose_grasp_in_client:
        Grasp fixture (LAR) in the client CoM frame.
    pose_tool_at_grasp_in_grasp:
        Where the tool must be, in the fixture frame, to close the gripper.
    pose_base_in_client_desired:
        ``g_bt*`` of the synchronisation phase (the base relative to the client).
    q_hold:
        Joint angles held during synchronisation.
    """

    @property
    def takes_pose_arrays(self) -> bool:
        """:meth:`update` takes the poses as 12-arrays too (a runner holding its states as arrays passes them so);
        False for a subclass that overrides ``update`` (a user's controller in this slot gets ``pin.SE3``)."""
        return type(self).update is ObswController.update

    def __init__(self, model: ServicerModel, pose_tool_in_flange: pin.SE3, pose_grasp_in_client: pin.SE3,
                 pose_tool_at_grasp_in_grasp: pin.SE3, pose_base_in_client_desired: pin.SE3, q_hold,
                 gains: ObswGains | None = None):
        self.model = model
        self.gains = gains or ObswGains()
        self.pose_tool_in_flange = pin.SE3(pose_tool_in_flange)
        self.pose_target_in_client = pose_grasp_in_client * pose_tool_at_grasp_in_grasp
        self.pose_base_in_client_desired = pin.SE3(pose_base_in_client_desired)
        self.q_hold = np.asarray(q_hold, dtype=float).reshape(model.n).copy()
        self.phase = SYNC
        self.phase_times = {SYNC: 0.0}
        self._path_start: pin.SE3 | None = None      # tool pose in the client frame at approach start
        self._path_log = np.zeros(6)
        self._q_grasp = self.q_hold.copy()
        self._pose_base_in_client_grasp: pin.SE3 | None = None
        # The compiled law's arrays, with the model, the gains and the frames above read once (None: the model
        # is no free-flyer chain, update runs update_reference). `_fast_state` are the state attributes the
        # arrays hold, so that one re-assigned elsewhere (update_reference) is read again.
        self._fast = kernel.ObswArrays.of(model, self.gains, self.pose_tool_in_flange, self.pose_target_in_client,
                                          self.pose_base_in_client_desired, self.q_hold)
        self._fast_state = [None, None, None, None]
        if self._fast is not None:       # load the compiled law now (cached; ./dev compiles it), not in a first tick
            self._fast.step(kernel.MODE_SYNC, kernel.KINEMATICS | kernel.LAW, 0.0)

    # -- kinematics from on-board states ----------------------------------------------
    def tool_kinematics(self, pose_base_in_orbit: pin.SE3, q_arm):
        """``(g_tool in orbit, J_tool)`` with ``V_tool = J_tool [V_b; dq]`` (tool body twist)."""
        pose_tool_in_base, jac_tool = self.model.tool_pose_and_jacobian(q_arm, self.pose_tool_in_flange)
        return pose_base_in_orbit * pose_tool_in_base, jac_tool

    def joint_angles_for_tool(self, pose_tool_in_base: pin.SE3, q_seed, iterations: int = 100) -> np.ndarray:
        """Joint angles placing the tool at ``pose_tool_in_base`` (Gauss-Newton from ``q_seed``)."""
        q = np.asarray(q_seed, dtype=float).copy()
        for _ in range(iterations):
            pose, jac = self.tool_kinematics(pin.SE3.Identity(), q)
            err = pin.log6(pose.actInv(pose_tool_in_base)).vector
            if np.linalg.norm(err) < 1e-12:
                break
            q += np.linalg.lstsq(jac[:, 6:], err, rcond=None)[0]
        return q

    def _switch(self, phase: str, t: float) -> None:
        self.phase = phase
        self.phase_times[phase] = float(t)

    # -- the rule ------------------------------------------------------------------------
    def update_reference(self, t: float, pose_client_in_orbit: pin.SE3, twist_client_body, pose_base_in_orbit: pin.SE3,
                         twist_base_body, q_arm, dq_arm) -> ObswCommand:
        """The readable law (seed 004 §III-C, §V; the module docstring) with Pinocchio on ``pin.SE3``:
        :meth:`update` is its compiled form and ``test_obsw_fast`` holds the two to 1e-12."""
        g = self.gains
        m = self.model
        v_t = np.asarray(twist_client_body, dtype=float)
        v_b = np.asarray(twist_base_body, dtype=float)
        q = np.asarray(q_arm, dtype=float)
        dq = np.asarray(dq_arm, dtype=float)
        g_t, g_b = pose_client_in_orbit, pose_base_in_orbit
        # Base: synchronisation with the client (phases 1-3).
        pose_client_in_base = g_b.actInv(g_t)
        twist_sync = pose_client_in_base.act(pin.Motion(v_t)).vector            # V_b* = Ad_{g_bt} V_t
        base_err = pin.log6(self.pose_base_in_client_desired.actInv(pose_client_in_base.inverse())).vector
        # Tool: where it is and where the fixture target is (both in orbit).
        pose_tool, jac_tool = self.tool_kinematics(g_b, q)
        pose_target = g_t * self.pose_target_in_client
        pose_target_in_tool = pose_tool.actInv(pose_target)
        twist_tool = jac_tool @ np.concatenate((v_b, dq))
        # Body twist, in tool axes, of the client-fixed point at the tool origin (rigid co-motion).
        twist_comove_in_tool = pose_tool.actInv(g_t).act(pin.Motion(v_t)).vector
        tool_err = -pin.log6(pose_target_in_tool).vector                       # tool relative to the target
        rel_speed = float(np.linalg.norm(twist_tool[:3] - twist_comove_in_tool[:3]))

        # Phase logic.
        if self.phase == SYNC and t >= g.sync_duration_s:
            self._switch(APPROACH, t)
            self._path_start = g_t.actInv(pose_tool)
            self._path_log = pin.log6(self._path_start.actInv(self.pose_target_in_client)).vector
        if self.phase == APPROACH and t >= self.phase_times[APPROACH] + g.approach_duration_s:
            if (np.linalg.norm(tool_err[:3]) <= g.grasp_position_tol_m and np.linalg.norm(tool_err[3:]) <= g.grasp_angle_tol_rad
                    and rel_speed <= g.grasp_speed_tol_m_s):
                self._switch(GRASP, t)
        if self.phase == GRASP and t >= self.phase_times[GRASP] + g.grasp_settle_s:
            self._switch(POST_GRASP, t)
            self._q_grasp = q.copy()
            self._pose_base_in_client_grasp = pose_client_in_base.inverse()

        mass = m.mass_matrix(q)
        m_red = mass[6:, 6:] - mass[6:, :6] @ np.linalg.solve(mass[:6, :6], mass[:6, 6:])   # arm on a free base
        if self.phase == POST_GRASP:
            pose_base_in_client = pose_client_in_base.inverse()
            err_rel = pin.log6(self._pose_base_in_client_grasp.actInv(pose_base_in_client)).vector
            twist_rel = v_b - twist_sync                                         # base relative to client, base axes
            wrench_base = -g.post_grasp_base_stiffness * err_rel - g.post_grasp_base_damping * twist_rel
            pose_base_in_tool = pose_tool.actInv(g_b)
            wrench_tool = -pose_base_in_tool.act(pin.Force(wrench_base)).vector
            w = g.post_grasp_bandwidth_rad_s
            tau = jac_tool[:, 6:].T @ wrench_tool - m_red @ (w * w * (q - self._q_grasp) + g.post_grasp_damping_per_s * dq)
            return ObswCommand(self.phase, np.zeros(6), self._clip(tau, g.max_joint_torque_nm), True, base_err, tool_err)

        h = m.coriolis_force(q, v_b, dq)       # [C_b V_b + C_bq dq; C_qb V_b + C_q dq] of Eq. (12)
        f_b = h[:6] - g.base_stiffness * base_err - g.base_damping * (v_b - twist_sync)
        f_b = np.concatenate((self._clip(f_b[:3], g.max_force_n), self._clip(f_b[3:], g.max_torque_nm)))
        if self.phase == SYNC:
            w = g.joint_hold_bandwidth_rad_s
            tau = h[6:] - m_red @ (w * w * (q - self.q_hold) + 2.0 * w * dq)
        else:
            s = min_jerk((t - self.phase_times[APPROACH]) / g.approach_duration_s)
            pose_ref = g_t * self._path_start * pin.exp6(pin.Motion(s * self._path_log))
            pose_ref_in_tool = pose_tool.actInv(pose_ref)
            err = -pin.log6(pose_ref_in_tool).vector
            jac_m = jac_tool[:, 6:]
            lam = np.linalg.inv(jac_m @ np.linalg.solve(m_red, jac_m.T))                # tool inertia
            w = g.tool_bandwidth_rad_s
            accel = -w * w * err - 2.0 * g.tool_damping_ratio * w * (twist_tool - twist_comove_in_tool)
            tau = h[6:] + jac_m.T @ (lam @ accel) - g.null_damping_per_s * (m_red @ dq)
        return ObswCommand(self.phase, f_b, self._clip(tau, g.max_joint_torque_nm), self.phase in (GRASP, POST_GRASP),
                           base_err, tool_err)

    def update(self, t: float, pose_client_in_orbit, twist_client_body, pose_base_in_orbit, twist_base_body, q_arm,
               dq_arm) -> ObswCommand:
        """The rule at time ``t`` [s] from the on-board states (:meth:`update_reference`'s inputs; the poses as
        ``pin.SE3`` or 12-arrays, :func:`hil_dynamics.kernels.pose_array`): the same command, phases and side
        effects, with the arithmetic in :func:`hil_admittance.obsw_kernel.obsw_step` and the phase logic here.

        Normally one compiled call (kinematics and law); two while the grasp waits on this call's tool error
        (the approach time over, the gripper open), for the law then depends on the phase they decide.
        The law's gains and limits, the frames and ``q_hold`` are those at construction; the phase durations
        and the grasp tolerances are read at each call, as :meth:`update_reference` reads them.
        """
        w = self._fast
        if w is None:
            as_se3 = [p if isinstance(p, pin.SE3) else array_pose(np.asarray(p, dtype=float).reshape(12))
                      for p in (pose_client_in_orbit, pose_base_in_orbit)]
            return self.update_reference(t, as_se3[0], twist_client_body, as_se3[1], twist_base_body, q_arm, dq_arm)
        g = self.gains
        n = w.n
        poses, vecs = w.poses, w.vecs
        # Inputs into the work arrays (copied: the compiled call always sees the same array types).
        flags = kernel.KINEMATICS | kernel.LAW
        if isinstance(pose_client_in_orbit, pin.SE3):
            w.homogeneous[0] = pose_client_in_orbit.homogeneous
            flags |= kernel.CLIENT_HOMOGENEOUS
        else:
            poses[kernel.P_CLIENT] = pose_client_in_orbit
        if isinstance(pose_base_in_orbit, pin.SE3):
            w.homogeneous[1] = pose_base_in_orbit.homogeneous
            flags |= kernel.BASE_HOMOGENEOUS
        else:
            poses[kernel.P_BASE] = pose_base_in_orbit
        vecs[kernel.V_TWIST_CLIENT, :6] = twist_client_body
        vel = vecs[kernel.V_VELOCITY]
        vel[:6] = twist_base_body
        vel[6:] = dq_arm
        vecs[kernel.V_Q, :n] = q_arm
        # Phase logic that depends on the time only (update_reference's order).
        if self.phase == SYNC and t >= g.sync_duration_s:
            self._switch(APPROACH, t)
            flags |= kernel.START_PATH
        may_grasp = self.phase == APPROACH and t >= self.phase_times[APPROACH] + g.approach_duration_s
        if self.phase == GRASP and t >= self.phase_times[GRASP] + g.grasp_settle_s:
            self._switch(POST_GRASP, t)
            flags |= kernel.LATCH_GRASP
        if may_grasp:                        # the grasp waits on this call's tool error: the kinematics first
            w.step(kernel.MODE_PATH, flags & ~kernel.LAW, 0.0)
            self._fast_store(flags)
            flags = kernel.LAW                   # the inputs and the kinematics are in the arrays now
            tool_err = vecs[kernel.V_TOOL_ERROR, :6]
            if (np.linalg.norm(tool_err[:3]) <= g.grasp_position_tol_m
                    and np.linalg.norm(tool_err[3:]) <= g.grasp_angle_tol_rad
                    and w.scalars[kernel.S_REL_SPEED] <= g.grasp_speed_tol_m_s):
                self._switch(GRASP, t)
            if self.phase == GRASP and t >= self.phase_times[GRASP] + g.grasp_settle_s:
                self._switch(POST_GRASP, t)
                flags |= kernel.LATCH_GRASP
        phase = self.phase
        s = 0.0
        if phase == SYNC:
            mode = kernel.MODE_SYNC
        elif phase == POST_GRASP:
            mode = kernel.MODE_POST_GRASP
            if not flags & kernel.LATCH_GRASP:
                self._fast_read_state(2, self._pose_base_in_client_grasp, poses[kernel.P_BASE_IN_CLIENT_GRASP])
                self._fast_read_state(3, self._q_grasp, vecs[kernel.V_Q_GRASP, :n])
        else:
            mode = kernel.MODE_PATH
            s = min_jerk((t - self.phase_times[APPROACH]) / g.approach_duration_s)
            if not flags & kernel.START_PATH:
                self._fast_read_state(0, self._path_start, poses[kernel.P_PATH_START])
                self._fast_read_state(1, self._path_log, vecs[kernel.V_PATH_LOG, :6])
        w.step(mode, flags, s)
        self._fast_store(flags)
        return self.loop_command()

    def loop_command(self) -> ObswCommand:
        """The command of the newest compiled call (:meth:`update`'s, or a compiled loop's that ran the rule's ticks
        on :meth:`loop_ticks`): the arrays' outputs, copied, in the current phase."""
        vecs, n = self._fast.vecs, self._fast.n
        return ObswCommand(self.phase, vecs[kernel.V_WRENCH_BASE, :6].copy(), vecs[kernel.V_TAU, :n].copy(),
                           self.phase in (GRASP, POST_GRASP), vecs[kernel.V_BASE_ERROR, :6].copy(),
                           vecs[kernel.V_TOOL_ERROR, :6].copy())

    def loop_ticks(self):
        """For a compiled loop that runs this rule's ticks itself (``hil_bringup.runners.mission_kernel``): ``(mode,
        t_approach, approach_s, t_limit, args)``, where a tick before ``t_limit`` [s] switches no phase and is
        :func:`hil_admittance.obsw_kernel.obsw_step` (``KINEMATICS | LAW``) of ``mode``, at the path fraction
        ``min_jerk((t - t_approach) / approach_s)`` in ``MODE_PATH``, on ``args`` (the inputs written into their
        arrays first, as :meth:`update` writes them; :meth:`loop_command` reads the outputs). None without the
        compiled form. The loop gets the command of each tick at the time :meth:`update` would have given it (the
        same calls on the same arrays)."""
        w = self._fast
        if w is None:
            return None
        g, phase = self.gains, self.phase
        t_approach = self.phase_times.get(APPROACH, 0.0)
        if phase == SYNC:
            mode, limit = kernel.MODE_SYNC, g.sync_duration_s
        elif phase == POST_GRASP:
            mode, limit = kernel.MODE_POST_GRASP, np.inf
            self._fast_read_state(2, self._pose_base_in_client_grasp, w.poses[kernel.P_BASE_IN_CLIENT_GRASP])
            self._fast_read_state(3, self._q_grasp, w.vecs[kernel.V_Q_GRASP, :w.n])
        else:
            mode = kernel.MODE_PATH
            limit = (t_approach + g.approach_duration_s if phase == APPROACH
                     else self.phase_times[GRASP] + g.grasp_settle_s)
            self._fast_read_state(0, self._path_start, w.poses[kernel.P_PATH_START])
            self._fast_read_state(1, self._path_log, w.vecs[kernel.V_PATH_LOG, :6])
        return mode, float(t_approach), float(g.approach_duration_s), float(limit), w.args

    def _fast_store(self, flags: int) -> None:
        """The side effects of a compiled call that started the path or latched the grasp, as
        :meth:`update_reference` leaves them (``pin.SE3`` poses, copied arrays)."""
        w = self._fast
        if flags & kernel.START_PATH:
            self._path_start = array_pose(w.poses[kernel.P_PATH_START])
            self._path_log = w.vecs[kernel.V_PATH_LOG, :6].copy()
            self._fast_state[0], self._fast_state[1] = self._path_start, self._path_log
        if flags & kernel.LATCH_GRASP:
            self._pose_base_in_client_grasp = array_pose(w.poses[kernel.P_BASE_IN_CLIENT_GRASP])
            self._q_grasp = w.vecs[kernel.V_Q_GRASP, :w.n].copy()
            self._fast_state[2], self._fast_state[3] = self._pose_base_in_client_grasp, self._q_grasp

    def _fast_read_state(self, slot: int, value, out: np.ndarray) -> None:
        """Copy a state attribute into its array when it is not the one the array already holds."""
        if self._fast_state[slot] is not value:
            if isinstance(value, pin.SE3):
                pose_array(value, out)
            else:
                out[:] = value
            self._fast_state[slot] = value

    @staticmethod
    def _clip(values, limit: float) -> np.ndarray:
        return np.clip(values, -limit, limit)
