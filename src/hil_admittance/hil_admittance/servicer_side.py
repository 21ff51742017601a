"""The servicer admittance node's policy, without rclpy (seed 004 Eqs. 18, 22, 23; §VI).

:class:`ServicerSide` is what :mod:`hil_admittance.servicer_admittance_node` does between
receiving a message and publishing one, as plain Python the tests drive directly:

* **inputs with freshness**: the wrist wrench ``F_e`` (moved from the sensor to the EE frame
  through the constant ``pose_sensor_in_ee``), the OBSW's ``F_b`` and ``tau``, the measured
  table twist; each is used while younger than ``input_timeout_s`` and counts as zero after
  (the OBSW is silent: the spacecraft coasts); the measured twist falls back to the commanded one;
* **joint acceleration by differencing**: ``ddq = (dq_k - dq_{k-1}) / (t_k - t_{k-1})`` between
  joint-state samples, ``t`` the measurement's own time (the message stamp) where it has one:
  the time a sample is *received* jitters by whole control steps on a busy host or on the lab
  twin's stepped clock (two samples read at one clock reading, or one sample late), and the
  difference over the wrong interval is a spike of ``ddq`` that Eq. (18) and Eq. (22) turn into a
  base acceleration and an arm torque (it drove the grasped stack to the F/T overload live);
  a sample whose stamp does not advance keeps the previous ``ddq``;
* **hold on a sensor fault**: while the wrist F/T reports a latched fault the table's twist
  command is zero (its pose stops) and the arm gets only its gravity compensation ``-G``
  (Eq. 20), the admittance does not integrate;
* **fixed-step pacing** (:class:`hil_common.pacing.StepPacer`, as the client node): a late
  timer callback runs the steps that are due, up to ``max_catch_up``; more are dropped and counted;
  a dropped or held step still moves the nominal on (the base co-moving with it), so both
  admittances keep one ``g_n`` whatever each of them skipped;
* **hold on overload** (:class:`hil_common.overload.OverloadGuard`, optional): a tick later than the
  guard's ``hold_late_s``, or dropped steps, hold as a sensor fault does, until the guard's policy
  clears it;
* **one mission clock** (``epoch_s``, the lab-clock time of the mission's t = 0): the first step
  moves the nominal on from the epoch (the base co-moving meanwhile), so this node and the
  client's integrate the same nominal however far apart they started (Eq. 23 needs one ``g_n``:
  two nominals 0.1-0.2 s apart placed the mock-ups 12 mm and 4-7 mrad off the simulated relative
  pose, and the grip then fought the tables to the F/T overload).

* **post-grasp re-basing** (:mod:`hil_dynamics.rebase`, optional ``rebase`` schedule): once the
  OBSW has been in ``post_grasp`` for the settle time, a plan from this side's state and the
  client's latest (``client/state``: ``g_t``, ``V_t``) starting ``lead_s`` later, which the node
  publishes for the client's node; both apply it to their own nominal from the same step, so they
  keep one ``g_n`` (Eq. 23); held and dropped steps apply it too.

Inputs are refused (counted, :attr:`rejected`, with a reason) when non-finite or of the wrong size.
Times are seconds on the node's clock.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from hil_common.cdr import Float64ArrayEncoder, OdometryEncoder, PoseStampedEncoder, TwistStampedEncoder
from hil_common.errors import ConfigError
from hil_common.finite import all_finite
from hil_common.freshness import HeldInput
from hil_common.overload import OverloadGuard, due_steps
from hil_common.policy_kernel import array_field, optional_field
from hil_common.pacing import StepPacer
from hil_dynamics.passivity import PassivityController, PassivityOutput
from hil_dynamics.rebase import RebaseFollower, RebasePlan, RebaseSchedule, client_part, servicer_part
from hil_dynamics.kernels import array_pose, mat_vec_into, pose_array, pose_xyzquat
from hil_dynamics.se3 import wrench_transform_matrix
from hil_dynamics.servicer import ArmFeedForward, ServicerAdmittance, ServicerState, load_port_step, port_step


@dataclass
class ServicerOutput:
    """What the node publishes after a tick."""

    state: ServicerState
    pose_table_cmd_array: np.ndarray  # g_s, or g_s(0)^-1 g_s with ``table_pose_from_start``, as a 12-array (read only)
    twist_table_cmd: np.ndarray       # V_s (zero while holding)
    tau_q: np.ndarray                 # Eq. (22) joint torques (gravity compensation only while holding)
    passivity: PassivityOutput | None
    holding: bool
    step_time_s: float                # the simulated time the state belongs to (node clock)
    rebase_plan: RebasePlan | None = None    # a re-basing plan made at this tick (to publish)

    @property
    def pose_table_cmd(self) -> pin.SE3:
        """The table's commanded pose as a ``pin.SE3`` (built when read: the hot path takes the array)."""
        return array_pose(self.pose_table_cmd_array)


class ServicerMessages:
    """The servicer side's decimated messages as raw CDR (:mod:`hil_common.cdr`: their bytes built once and refilled),
    for the frames ``(orbit, nominal, base)``: the table's commanded pose ``g_s`` (``PoseStamped`` in the nominal
    frame), its twist ``V_s`` (``TwistStamped`` in the base frame), the base's absolute state ``g_b, V_b`` (seed 004
    Eq. 23; ``Odometry``, orbit to base), the port's passivity (``Float64MultiArray``:
    ``PassivityOutput.as_list``). One definition for ``servicer_admittance_node`` and the fused hot path, whose compiled
    sample loop writes the same messages' doubles (``servicer_hot_path_kernel.decimated_values``, :meth:`fields`)."""

    def __init__(self, frames: tuple[str, str, str]):
        orbit, nominal, base = frames
        self.pose, self.twist = PoseStampedEncoder(nominal), TwistStampedEncoder(base)
        self.state, self.passivity = OdometryEncoder(orbit, base), Float64ArrayEncoder(5)
        self._xyzquat = np.empty(7)
        pose_xyzquat(np.array([1.0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]), self._xyzquat)   # loaded now (the identity)

    def encode(self, t0_ns: int, out: ServicerOutput) -> tuple[int, int, list[bytes]]:
        """The messages of the output ``out``, stamped with its step's time on the ROS clock (``t0_ns`` its t = 0):
        ``(sec, nanosec, [pose, twist, state, passivity])`` (no passivity without the port's output)."""
        sec, nanosec = divmod(t0_ns + int(round(out.step_time_s * 1e9)), 1_000_000_000)
        messages = [self.pose(sec, nanosec, pose_xyzquat(out.pose_table_cmd_array, self._xyzquat)),
                    self.twist(sec, nanosec, out.twist_table_cmd)]
        g_b, v_b = out.state.absolute_arrays()
        messages.append(self.state(sec, nanosec, pose_xyzquat(g_b, self._xyzquat), v_b))
        if out.passivity is not None:
            messages.append(self.passivity(out.passivity.as_list()))
        return sec, nanosec, messages

    def fields(self) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
        """``(bytes, doubles)``: the four messages' bytes (``uint8`` views, in :meth:`encode`'s order) and the doubles a
        compiled caller writes: the pose's 7, the twist's 6, the state's pose 7 and twist 6, the passivity's 5."""
        (pose_bytes, pose), (twist_bytes, twist) = self.pose.fields(), self.twist.fields()
        (state_bytes, state), (passivity_bytes, passivity) = self.state.fields(), self.passivity.fields()
        return (pose_bytes, twist_bytes, state_bytes, passivity_bytes), (pose, twist, state[:7], state[43:49],
                                                                         passivity)


#: why an arm joint state is refused when it lacks a joint's position or velocity, or one is not finite
NO_ARM_JOINTS = 'joint state without the arm joints, or non-finite'

#: :class:`JointsState`'s ``jf``: the newest measurement's time, the first arm state's arrival (both ``nan``: none yet)
#: and whether ``q``, ``dq`` hold a measurement (1.0) or not (0.0)
J_STAMP, J_FIRST, J_HAS = 0, 1, 2


class JointsState:
    """A :class:`ServicerSide`'s measured arm joints as arrays a compiled caller writes in place
    (``hil_bringup.servicer_hot_path_kernel.arm_joint_rows``): ``q``, ``dq``, ``ddq`` and ``jf`` (:data:`J_STAMP`,
    :data:`J_FIRST`, :data:`J_HAS`)."""

    def __init__(self, side: ServicerSide):
        n = side.n
        self.q = np.zeros(n) if side.q is None else np.array(side.q, dtype=float)
        self.dq = np.zeros(n) if side.dq is None else np.array(side.dq, dtype=float)
        self.ddq = np.array(side.ddq, dtype=float)
        self.jf = np.array([np.nan if side.joints_stamp_s is None else side.joints_stamp_s,
                            np.nan if side.first_joints_s is None else side.first_joints_s,
                            float(side.q is not None)])


def _joint_array(name: str) -> property:
    """``q``/``dq`` of an :class:`ArrayJointsSide`: the state's array, None before the first measurement; a value set
    is copied into it."""
    def get(self):
        return getattr(self._st, name) if self._st.jf[J_HAS] else None

    def put(self, value) -> None:
        if value is None:
            self._st.jf[J_HAS] = 0.0
        else:
            getattr(self._st, name)[...] = value
            self._st.jf[J_HAS] = 1.0
    return property(get, put)


class ServicerSide:
    """The servicer admittance node's rule (see the module docstring)."""

    def __init__(self, adm: ServicerAdmittance, ff: ArmFeedForward, pose_sensor_in_ee: pin.SE3, dt_s: float,
                 input_timeout_s: float, passivity: PassivityController, t0_s: float = 0.0, max_catch_up: int = 20,
                 table_pose_from_start: bool = False, epoch_s: float | None = None,
                 overload: OverloadGuard | None = None, rebase: RebaseSchedule | None = None):
        self.adm, self.ff, self.passivity = adm, ff, passivity
        load_port_step(adm, ff, passivity)            # the step's compiled call, loaded now (not in the first tick)
        self.rebase = rebase
        self.follower = RebaseFollower(dt_s)
        self.client_body = adm.nominal_body           # the client's mass properties (its unforced motion: Eq. 4)
        self.client_state: tuple | None = None        # (g_t, V_t, received at) of the client, for the plan
        self.post_grasp_s: float | None = None
        self.unpublished_plan: RebasePlan | None = None    # made, not yet handed out in an output
        self.overload = overload
        self.pose_sensor_in_ee = pose_sensor_in_ee
        self._wrench_sensor_to_ee = np.ascontiguousarray(wrench_transform_matrix(pose_sensor_in_ee), dtype=float)
        mat_vec_into(self._wrench_sensor_to_ee, np.zeros(6), np.empty(6))     # loaded now, not in the first sample
        self.dt_s, self.timeout_s = float(dt_s), float(input_timeout_s)
        self.n = adm.model.n
        self.pacer = StepPacer(self.dt_s, t0_s, max_catch_up)
        self.epoch_s = None if epoch_s is None else float(epoch_s)
        self.started = False
        self.pose_start_inv = adm.state.pose_base_in_nominal.inverse() if table_pose_from_start else None
        self.wrench_ee, self.wrench_base_com = HeldInput(6), HeldInput(6)
        self.tau_obsw, self.twist_measured = HeldInput(self.n), HeldInput(6)
        self.q = self.dq = None
        self.ddq = np.zeros(self.n)
        self.joints_stamp_s: float | None = None
        self.first_joints_s: float | None = None    # when the first arm state arrived (node clock)
        self.fault = False
        self.rejected = 0
        self.last_rejection = ''
        self.passivity_out: PassivityOutput | None = None
        #: what runs the last step of a tick that does not hold (with Eq. 22's torques), ``port_step``'s signature
        #: and result: None for ``port_step`` itself (the fused hot path also commands its table in that call)
        self.last_step = None

    # -- inputs ----------------------------------------------------------------------------
    def _finite(self, what: str, value, size: int) -> np.ndarray | None:
        value = np.asarray(value, dtype=float)
        if value.shape != (size,) or not all_finite(value):
            self.reject(f'{what} {value.tolist()}')
            return None
        return value

    def reject(self, reason: str) -> None:
        self.rejected += 1
        self.last_rejection = reason

    def set_wrench_sensor(self, wrench_sensor, now_s: float) -> bool:
        """The wrist F/T wrench in the sensor frame; stored as ``F_e`` in the EE frame."""
        w = self._finite('wrench_ee', wrench_sensor, 6)
        if w is not None:         # transform_wrench as its matrix, summed as the compiled sample loop sums it
            wrench_ee = np.empty(6)
            mat_vec_into(self._wrench_sensor_to_ee, w, wrench_ee)
            self.wrench_ee.set(wrench_ee, now_s)
        return w is not None

    def set_wrench_base(self, wrench_base_com, now_s: float) -> bool:
        w = self._finite('wrench_base_com', wrench_base_com, 6)
        if w is not None:
            self.wrench_base_com.set(w, now_s)
        return w is not None

    def set_tau(self, tau_obsw, now_s: float) -> bool:
        t = self._finite('tau_obsw', tau_obsw, self.n)
        if t is not None:
            self.tau_obsw.set(t, now_s)
        return t is not None

    def set_twist_measured(self, twist, now_s: float) -> bool:
        v = np.asarray(twist, dtype=float)
        if v.shape == (6,) and all_finite(v):
            self.twist_measured.set(v, now_s)
            return True
        return False

    def set_joints(self, q, dq, now_s: float, stamp_s: float | None = None) -> None:
        """Measured ``q, dq`` received at ``now_s``, measured at ``stamp_s`` (the message stamp; None
        or <= 0: unstamped, the receipt time is used); ``ddq`` by differencing ``dq`` over the time
        between the measurements."""
        q, dq = np.asarray(q, dtype=float), np.asarray(dq, dtype=float)
        if self.first_joints_s is None:
            self.first_joints_s = float(now_s)
        t = float(stamp_s) if stamp_s is not None and stamp_s > 0.0 else float(now_s)
        if self.joints_stamp_s is not None and t > self.joints_stamp_s:
            self.ddq = (dq - self.dq) / (t - self.joints_stamp_s)
        elif self.joints_stamp_s is not None and t == self.joints_stamp_s:
            self.q = q                        # the same measurement again: nothing to difference
            return
        else:                                 # the first sample, or a clock that went back: start again
            self.ddq = np.zeros(self.n)
        self.q, self.dq, self.joints_stamp_s = q, dq, t

    def set_phase(self, phase: str, now_s: float) -> None:
        """The OBSW's phase; the re-basing counts its settle time from the first ``post_grasp``."""
        if phase == 'post_grasp' and self.post_grasp_s is None:
            self.post_grasp_s = float(now_s)

    def set_client_state(self, pose_client_in_orbit: pin.SE3, twist_client_body, now_s: float) -> bool:
        """The client's absolute state (its node's ``client/state``, Eq. 23)."""
        v = np.asarray(twist_client_body, dtype=float)
        if v.shape != (6,) or not np.all(np.isfinite(v)) or not np.all(np.isfinite(pose_client_in_orbit.homogeneous)):
            self.reject('client state non-finite')
            return False
        self.client_state = (pin.SE3(pose_client_in_orbit), v.copy(), float(now_s))
        return True

    def _plan(self, t: float) -> RebasePlan | None:
        """The re-basing plan, made once it is due and the client's state is fresh."""
        if self.rebase is None or not self.rebase.due(t, self.post_grasp_s) or self.client_state is None \
                or t - self.client_state[2] > self.timeout_s + self.dt_s:
            return None
        g_t, v_t, _ = self.client_state
        s = self.adm.state
        # starting half a step off the step grid, so every side's first step in it is the same one
        parts = [client_part(s.pose_nominal_in_orbit.actInv(g_t), self.client_body, v_t),
                 servicer_part(self.adm, self.q, self.dq)]
        plan = self.rebase.make_plan(t, parts, (self.dt_s, self.adm.nominal_body, s.pose_nominal_in_orbit,
                                                s.twist_nominal_body))
        plan.t_start += 0.5 * self.dt_s
        self.follower.accept(plan, t)
        return plan

    def set_fault(self, latched: bool) -> bool:
        """The wrist F/T's latch; True when it changed."""
        changed = bool(latched) != self.fault
        self.fault = bool(latched)
        return changed

    @property
    def holding(self) -> bool:
        """Holding on a latched wrist F/T fault, or because the node cannot keep up (:class:`OverloadGuard`)."""
        return self.fault or (self.overload is not None and self.overload.holding)

    # -- the step ----------------------------------------------------------------------------
    def _start(self, now_s: float) -> None:
        """The first step: with a mission epoch, the nominal moves on from it to the step grid's last
        instant before ``now_s`` (:meth:`ServicerAdmittance.advance_nominal`) and the steps run on that
        grid, so every node of the graph integrates the nominal of one mission clock."""
        self.started = True
        if self.epoch_s is None or now_s <= self.epoch_s:
            # the steps between the node's start and its first arm state are no backlog (waiting for the
            # first input is not an overload): the grid goes on from the first arm state
            self.pacer.skip_to(min(now_s, self.first_joints_s))
            return
        self.pacer = StepPacer(self.dt_s, self.epoch_s, self.pacer.max_catch_up)
        self.adm.advance_nominal(self.pacer.skip_to(now_s) * self.dt_s, self.dt_s)

    def tick(self, now_s: float) -> ServicerOutput | None:
        """The steps due at ``now_s``; None when none is due, or before the first joint state."""
        if self.q is None:
            self.pacer.skip_to(now_s)                 # no arm state yet: nothing to command, no backlog
            return None
        if not self.started:
            self._start(now_s)
        steps = due_steps(self.pacer, self.overload, now_s)
        if steps == 0:
            return None
        holding = self.holding
        # One mission clock: steps the pacer dropped, and steps held, still move the nominal on (the
        # base co-moving with it), or this side's g_n would fall behind the client's (Eq. 23).
        first = self.pacer.steps_done - steps - self.pacer.last_dropped   # the grid index this tick starts from
        if self._plan(self.pacer.step_time(first)) is not None:
            self.unpublished_plan = self.rebase.plan
        skipped = self.pacer.last_dropped + (steps if holding else 0)
        if skipped:
            self.follower.advance(self.adm, self.pacer.step_time(first), skipped * self.dt_s)
        s = self.adm.state
        if holding:
            # Hold: the table keeps its last pose, the arm gets only its gravity compensation (-G of Eq. 20, one
            # compiled call: ArmFeedForward.hold_torques, which a compiled sample loop's held sample calls too)
            twist_cmd, tau_q = np.zeros(6), self.ff.hold_torques(s.pose_arrays()[1], self.q)
        else:
            timeout = self.timeout_s
            wrench_ee = self.wrench_ee.get(now_s, timeout, np.zeros(6))
            wrench_base = self.wrench_base_com.get(now_s, timeout, np.zeros(6))
            tau_obsw = self.tau_obsw.get(now_s, timeout, np.zeros(self.n))
            twist_measured = self.twist_measured.get(now_s, timeout, None)    # None: the commanded V_s stands in
            try:
                last = self.pacer.steps_done - 1
                for k in range(self.pacer.steps_done - steps, self.pacer.steps_done):
                    self.follower.before_step(self.pacer.step_time(k), self.adm)
                    # the port observed over the step, Eq. (18) under F_b + F_pc, and Eq. (22)'s torques (the last
                    # step's are the tick's: a catch-up step's torques come with its one compiled call, which a
                    # compiled sample loop runs too, servicer_hot_path_kernel.quiet_sample)
                    step = port_step if k != last or self.last_step is None else self.last_step
                    s, self.passivity_out, tau_q = step(self.adm, self.ff, self.passivity, self.dt_s, self.q, self.dq,
                                                        self.ddq, wrench_base, wrench_ee, twist_measured, tau_obsw)
            except ValueError as exc:            # e.g. joint angles the model refuses: counted, no output
                self.reject(str(exc))
                return None
            twist_cmd = s.twist_base_rel_body
        return self.output(s, twist_cmd, tau_q, holding)

    def output(self, s: ServicerState, twist_cmd, tau_q, holding: bool) -> ServicerOutput:
        """The tick's output for the state ``s`` it reached (the pacer's last step)."""
        pose_cmd = (s.pose_arrays()[1] if self.pose_start_inv is None
                    else pose_array(self.pose_start_inv * s.pose_base_in_nominal))
        plan, self.unpublished_plan = self.unpublished_plan, None   # out with the first output after it was made
        return ServicerOutput(s, pose_cmd, twist_cmd, tau_q, self.passivity_out, holding,
                              self.pacer.step_time(self.pacer.steps_done), plan)


class ArrayJointsSide(ServicerSide):
    """A :class:`ServicerSide` whose measured arm joints are a :class:`JointsState` (:func:`adopt_joints`): its methods
    run unchanged on the arrays (a value set is copied into them: ``q``, ``dq`` and ``ddq`` are the same arrays
    throughout), so a compiled call that writes them changes what Python reads."""

    q, dq = _joint_array('q'), _joint_array('dq')
    joints_stamp_s, first_joints_s = optional_field('jf', J_STAMP), optional_field('jf', J_FIRST)
    ddq = array_field('ddq')


def adopt_joints(side: ServicerSide) -> JointsState:
    """Turn ``side`` (a :class:`ServicerSide`, exactly) into an :class:`ArrayJointsSide` in place (every reference to
    it stays valid) and return its :class:`JointsState`; adopting an adopted side returns its state."""
    if isinstance(side, ArrayJointsSide):
        return side._st
    if type(side) is not ServicerSide:
        raise ConfigError(f'adopt_joints: {type(side).__name__} has no array-backed form')
    state = JointsState(side)
    for name in ('q', 'dq', 'ddq', 'joints_stamp_s', 'first_joints_s'):
        del side.__dict__[name]         # the class's properties read the arrays from now on
    side.__class__ = ArrayJointsSide
    side._st = state            # (the array-backed forms' name: policy_kernel.optional_field reads it)
    return state
