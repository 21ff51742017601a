"""The motion-table rule: commanded table pose in, safe joint command out (no rclpy).

One :meth:`MotionTable.step` per commanded pose does, in order:

1. input check (finite, rotation orthonormal) -> fault ``invalid_command``; measured
   joints older than ``max_measurement_age`` (lost robot feedback) -> ``stale_measurement``;
2. optional delay compensation: the command is predicted ``horizon`` seconds ahead on
   the commanded trajectory, ``g_pred = g_cmd exp6(horizon V + horizon^2/2 V_dot)``,
   with the body twist ``V`` from the twist feed-forward or, without one, from finite
   differences of the commanded poses (``V ~ log6(g_{k-1}^-1 g_k)/dt``, low-pass
   filtered). This is the constant-velocity/acceleration predictor used for the
   response-delay compensation of hybrid simulators (Osaki, Konno, Uchiyama 2010, cited
   by seed 001 as [13]);
3. maximum Cartesian speed: the step from the last safe pose is scaled down along the
   geodesic (clamp, reported as ``cartesian_speed``);
4. workspace box on the flange position -> fault ``workspace_exit``;
5. IK seeded from the measured joints -> faults ``unreachable`` (no convergence) or
   ``singular`` (smallest Jacobian singular value below ``sigma_min``);
6. joint position limits -> fault ``joint_limit``;
7. joint velocity and acceleration limits relative to the previous command (clamp,
   reported as ``joint_velocity`` / ``joint_acceleration``).

A fault **holds the last safe command** (never a jump) and, with ``latch_faults``, keeps
holding until :meth:`reset`; when motion resumes the velocity/acceleration limits apply
from the held command, so resuming cannot jump either.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pinocchio as pin

from hil_dynamics.kernels import array_pose, pose_array
from hil_motion_table.kinematics import pose_error
from hil_motion_table.table_kernel import (CARTESIAN_SPEED, JOINT_ACCELERATION, JOINT_LIMIT, JOINT_VELOCITY, SINGULAR,
                                           UNREACHABLE, WORKSPACE_EXIT, command_ok, limit_joints, table_motion)
from hil_common.errors import ConfigError, InputError

_NO_TWIST = np.zeros(0)
_CLAMP_BITS = ((CARTESIAN_SPEED, 'cartesian_speed'), (JOINT_VELOCITY, 'joint_velocity'),
               (JOINT_ACCELERATION, 'joint_acceleration'))
FAULTS = ('invalid_command', 'stale_measurement', 'workspace_exit', 'unreachable', 'singular', 'joint_limit')
CLAMPS = ('cartesian_speed', 'joint_velocity', 'joint_acceleration')
_CLAMP_MASK = sum(bit for bit, _ in _CLAMP_BITS)
_FAULT_BITS = ((UNREACHABLE, 'unreachable'), (SINGULAR, 'singular'), (JOINT_LIMIT, 'joint_limit'))
_FAULT_MASK = sum(bit for bit, _ in _FAULT_BITS)


@dataclass(frozen=True)
class TableLimits:
    """Limits of a motion table (SI units, base frame).

    ``workspace_min``/``workspace_max``: box on the flange (platform) position;
    ``max_linear_speed`` [m/s] and ``max_angular_speed`` [rad/s] of the commanded pose;
    ``sigma_min``: singular-value threshold of the task Jacobian; ``max_measurement_age``
    [s]: oldest acceptable measured joint state; joint limits come from
    the kinematics (``q_min``, ``q_max``, ``qd_max``, ``qdd_max``) scaled by
    ``joint_margin`` (position, shrinks the range) and used as given for rates.
    """

    workspace_min: tuple[float, float, float]
    workspace_max: tuple[float, float, float]
    max_linear_speed: float = 0.5
    max_angular_speed: float = 1.0
    sigma_min: float = 0.02
    joint_margin: float = 0.0
    max_measurement_age: float = math.inf


class TableCommand:
    """Result of one step: joint command, prediction used, faults and clamps.

    ``pose_target_in_base`` may be given as a 12-array (:func:`hil_dynamics.kernels.pose_array` layout, kept, not
    copied): the compiled step does, and its ``pin.SE3`` is built only if somebody reads it (the hot paths do not).
    """

    __slots__ = ('q_command', '_pose_target', 'holding', 'faults', 'clamps', 'ik_error', 'sigma_min')

    def __init__(self, q_command: np.ndarray, pose_target_in_base: pin.SE3 | np.ndarray | None, holding: bool,
                 faults: tuple[str, ...] = (), clamps: tuple[str, ...] = (), ik_error: float = 0.0,
                 sigma_min: float = math.nan):
        self.q_command, self._pose_target, self.holding = q_command, pose_target_in_base, holding
        self.faults, self.clamps, self.ik_error, self.sigma_min = faults, clamps, ik_error, sigma_min

    @property
    def pose_target_in_base(self) -> pin.SE3 | None:
        """The target the IK solved for (after prediction and the Cartesian speed limit)."""
        if type(self._pose_target) is np.ndarray:
            self._pose_target = array_pose(self._pose_target)
        return self._pose_target

    def __repr__(self) -> str:
        return (f'TableCommand(q_command={self.q_command!r}, pose_target_in_base={self.pose_target_in_base!r}, '
                f'holding={self.holding!r}, faults={self.faults!r}, clamps={self.clamps!r}, '
                f'ik_error={self.ik_error!r}, sigma_min={self.sigma_min!r})')


@dataclass
class TableStats:
    steps: int = 0
    fault_counts: dict = field(default_factory=lambda: {name: 0 for name in FAULTS})
    clamp_counts: dict = field(default_factory=lambda: {name: 0 for name in CLAMPS})


def is_rotation(matrix: np.ndarray, tol: float = 1e-6) -> bool:
    """Finite, orthonormal and right-handed (within ``tol``)."""
    if matrix.shape != (3, 3) or not np.isfinite(matrix).all():
        return False
    if float(np.abs(matrix.T @ matrix - np.eye(3)).max()) > tol:
        return False
    (a, b, c), (d, e, f), (g, h, i) = matrix.tolist()      # determinant in floats (no numpy call overhead)
    return abs(a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g) - 1.0) < tol


class MotionTable:
    """Commanded pose -> limited joint command for a serial robot or a hexapod.

    ``kinematics``: :class:`~hil_motion_table.kinematics.SerialKinematics` or
    :class:`~hil_motion_table.kinematics.HexapodKinematics`. ``period`` [s] is the
    nominal command period (used when no time is known). ``clock`` (a callable returning
    seconds, e.g. ``time.monotonic``) makes the table time its own steps: the speed and
    acceleration limits then hold against the real time between commands whatever the
    caller passes as ``t`` (every node uses it; lockstep runners, whose simulated time *is*
    the robot's time, pass ``t`` instead). ``self_clearing``: faults that hold while present
    but do not latch (a node whose input-freshness policy recovers on its own passes
    ``('stale_measurement',)``). ``prediction_horizon``
    [s] > 0 enables delay compensation; ``twist_filter_hz`` is the cut-off of the
    first-order filter on the finite-difference twist estimate.

    :meth:`step` runs steps 2-7 as one compiled call (:func:`hil_motion_table.table_kernel.table_motion`)
    when the kinematics is a serial chain the compiled IK handles; :meth:`step_reference` is the readable
    definition (and the path of the hexapod), and ``test_table_kernel`` checks that the two agree to 1e-12
    over streams that pass through every clamp and fault. The table's constants (limits, horizon, filter,
    the IK's settings) are read once, when it is built.
    """

    SEED_RADIUS = 0.05   # [rad or m]: the previous IK solution seeds the IK when the robot is this close to it

    def __init__(self, kinematics, limits: TableLimits, period: float = 0.004, prediction_horizon: float = 0.0,
                 twist_filter_hz: float = 20.0, latch_faults: bool = True,
                 clock: Callable[[], float] | None = None, self_clearing: tuple[str, ...] = (),
                 load_step: bool = True):
        if not period > 0:
            raise ConfigError('period must be > 0')
        if prediction_horizon < 0:
            raise ConfigError('prediction_horizon must be >= 0')
        self.kin = kinematics
        self.limits = limits
        self.period = float(period)
        self.prediction_horizon = float(prediction_horizon)
        self.twist_filter_hz = float(twist_filter_hz)
        self.latch_faults = latch_faults
        self.clock = clock
        self.self_clearing = frozenset(self_clearing)   # faults that hold while present but never latch
        span = kinematics.q_max - kinematics.q_min
        self.q_lo = kinematics.q_min + limits.joint_margin * span
        self.q_hi = kinematics.q_max - limits.joint_margin * span
        self.workspace_min = np.asarray(limits.workspace_min, dtype=float)
        self.workspace_max = np.asarray(limits.workspace_max, dtype=float)
        self.stats = TableStats()
        self._q_cmd: np.ndarray | None = None
        self._qd_cmd = np.zeros(kinematics.dof)
        self._pose_safe: np.ndarray | None = None          # 12-array [R row-major; p] (hil_dynamics.kernels)
        self._pose_prev_cmd: np.ndarray | None = None      # the same
        self._twist_est = np.zeros(6)
        self._twist_prev: np.ndarray | None = None
        self._t_prev: float | None = None
        self._latched: tuple[str, ...] = ()
        self._pose_measured_guess: pin.SE3 | None = None
        self._q_ik_prev: np.ndarray | None = None
        self._q_ik_step: np.ndarray | None = None   # the last change of the IK solution (streaming: the seed is extrapolated)
        # the compiled steps 2-7 (serial chains); their constants, in table_kernel's P_* order
        self._chain = getattr(kinematics, '_chain', None)
        if self._chain is not None:
            self._par = np.array([self.prediction_horizon, self.twist_filter_hz, limits.max_linear_speed,
                                  limits.max_angular_speed, self.SEED_RADIUS, kinematics.tolerance,
                                  kinematics.max_iterations, kinematics.max_step, kinematics.damping,
                                  kinematics.damping_max, kinematics.singular_band, kinematics.HINT_RADIUS_RAD,
                                  limits.sigma_min], dtype=float)
            self._cmd = np.empty(12)
            self._target = np.empty(12)
            self._zeros_n = np.zeros(kinematics.dof)
            self._zeros_6 = np.zeros(6)
        # Load the compiled checks now (Numba's cache), not in the first real-time command: a table node
        # on the twin's clock that did it there missed its joint states for 150 ms and held as stale.
        n = kinematics.dof
        z = np.zeros(n)
        command_ok(np.eye(3), np.zeros(3), _NO_TWIST, 1e-6)
        command_ok(pin.SE3.Identity().rotation, np.zeros(3), np.zeros(6), 1e-6)
        limit_joints(z, z, False, z, z, 1e-3, np.ones(n), np.ones(n), z - 1.0, z + 1.0, np.empty(n), np.empty(n),
                     np.empty(n))
        if self._chain is not None and load_step:
            self._load_step()

    def _load_step(self) -> None:
        """Load the compiled steps 2-7 (``table_motion``) now, not in the first real-time command: one step of a
        scratch table on a copy of the kinematics (this table and its kinematics are left untouched)."""
        probe = MotionTable(copy.deepcopy(self.kin), self.limits, self.period, self.prediction_horizon,
                            self.twist_filter_hz, load_step=False)
        q = np.clip(np.zeros(self.kin.dof), probe.q_lo, probe.q_hi)
        probe.initialize(q)
        probe.step_array(probe._pose_safe.copy(), q, np.zeros(6), t=0.0)

    # -- state --------------------------------------------------------------------------
    @property
    def initialized(self) -> bool:
        return self._q_cmd is not None

    @property
    def q_command(self) -> np.ndarray | None:
        return None if self._q_cmd is None else self._q_cmd.copy()

    @property
    def latched_faults(self) -> tuple[str, ...]:
        return self._latched

    def initialize(self, q_measured) -> None:
        """Start from the measured joints: the first command equals them (no jump)."""
        q = np.asarray(q_measured, dtype=float)
        if q.shape != (self.kin.dof,) or not np.all(np.isfinite(q)):
            raise InputError(f'measured joints must be {self.kin.dof} finite values')
        self._q_cmd = q.copy()
        self._qd_cmd = np.zeros_like(q)
        self._pose_measured_guess = self.kin.forward(q)
        self._pose_safe = pose_array(self._pose_measured_guess)
        self._pose_prev_cmd = None
        self._twist_est[:] = 0.0
        self._twist_prev = None
        self._t_prev = None
        self._q_ik_prev = self._q_ik_step = None

    def reset(self) -> None:
        """Clear latched faults (the next step moves, rate-limited, from the held command)."""
        self._latched = ()
        self._pose_prev_cmd = None

    def measured_pose(self, q_measured) -> pin.SE3:
        """``pose_flange_in_base`` of measured joints (hexapod: FK seeded with the last result)."""
        self._pose_measured_guess = self.kin.forward(q_measured, self._pose_measured_guess)
        return self._pose_measured_guess

    # -- the rule -----------------------------------------------------------------------
    def _hold(self, faults: tuple[str, ...], pose=None, ik_error=0.0, sigma=math.nan) -> TableCommand:
        for name in faults:
            self.stats.fault_counts[name] += 1
        if self.latch_faults:
            self._latched = tuple(sorted(set(self._latched) | (set(faults) - self.self_clearing)))
        self._qd_cmd = np.zeros_like(self._qd_cmd)
        self._q_ik_prev = self._q_ik_step = None
        return TableCommand(q_command=self._q_cmd.copy(), pose_target_in_base=pose, holding=True,
                            faults=faults, ik_error=ik_error, sigma_min=sigma)

    def hold_for(self, faults: tuple[str, ...]) -> TableCommand:
        """The hold a failed check of a command calls for (``invalid_command``, ``stale_measurement``), as
        :meth:`step` holds: for a caller that checked the command in compiled code."""
        return self._hold(faults)

    def _dt(self, t: float | None) -> float:
        """Time step of the limits: the time since the previous command, on the table's own
        ``clock`` when it has one (then ``t`` is ignored: no stamp, sim time or replay can loosen
        a limit), else on the caller's ``t``; one ``period`` if unknown or not in (0, 10 period)."""
        dt, self._t_prev = self.dt_at(t)
        return dt

    def dt_at(self, t: float | None) -> tuple[float, float | None]:
        """:meth:`_dt` without moving on: ``(dt, the time the next step's dt counts from)``."""
        if self.clock is not None:
            t = self.clock()
        if t is None or self._t_prev is None or not math.isfinite(t):
            dt = self.period
        else:
            dt = t - self._t_prev
            if not 0.0 < dt < 10.0 * self.period:
                dt = self.period
        return dt, (t if t is not None and math.isfinite(t) else self._t_prev)

    def _predict(self, pose_cmd: pin.SE3, twist_ff, dt: float) -> pin.SE3:
        if self._pose_prev_cmd is not None:
            raw = pose_error(array_pose(self._pose_prev_cmd), pose_cmd) / dt
            alpha = 1.0 - math.exp(-2.0 * math.pi * self.twist_filter_hz * dt)
            self._twist_est += alpha * (raw - self._twist_est)
        self._pose_prev_cmd = pose_array(pose_cmd)
        if self.prediction_horizon <= 0.0:
            return pose_cmd
        if twist_ff is not None:
            twist = np.array(twist_ff, dtype=float)          # a copy: the caller may reuse its array
            twist_dot = np.zeros(6) if self._twist_prev is None else (twist - self._twist_prev) / dt
            self._twist_prev = twist
        else:
            twist, twist_dot = self._twist_est, np.zeros(6)
        h = self.prediction_horizon
        return pose_cmd * pin.exp6(pin.Motion(h * twist + 0.5 * h * h * twist_dot))

    def step(self, pose_cmd_in_base: pin.SE3, q_measured=None, twist_ff_body=None, t: float | None = None,
             measurement_age: float = 0.0) -> TableCommand:
        """One command cycle (see the module docstring). ``q_measured`` seeds the IK;
        ``measurement_age`` [s] is how old it is. ``t`` [s] times the step only for a table
        without its own ``clock`` (a lockstep runner's simulated time); never pass message stamps.
        Steps 2-7 compiled for a serial chain (the class docstring), else :meth:`step_reference`."""
        if self._chain is None:
            return self.step_reference(pose_cmd_in_base, q_measured, twist_ff_body, t, measurement_age)
        cmd = self._cmd
        rotation = cmd[:9].reshape(3, 3)
        rotation[:] = pose_cmd_in_base.rotation
        translation = cmd[9:]
        translation[:] = pose_cmd_in_base.translation
        return self._step_compiled(cmd, rotation, translation, q_measured, twist_ff_body, t, measurement_age)

    def step_array(self, pose_cmd_in_base: np.ndarray, q_measured=None, twist_ff_body=None, t: float | None = None,
                   measurement_age: float = 0.0) -> TableCommand:
        """:meth:`step` with the command as a 12-array pose (:func:`hil_dynamics.kernels.pose_array` layout,
        float64, C-contiguous; only read): a hot path that holds its pose as an array builds no ``pin.SE3``."""
        if self._chain is None:
            return self.step_reference(array_pose(pose_cmd_in_base), q_measured, twist_ff_body, t, measurement_age)
        cmd = pose_cmd_in_base
        return self._step_compiled(cmd, cmd[:9].reshape(3, 3), cmd[9:], q_measured, twist_ff_body, t, measurement_age)

    def _step_compiled(self, cmd: np.ndarray, rotation: np.ndarray, translation: np.ndarray, q_measured, twist_ff_body,
                       t: float | None, measurement_age: float) -> TableCommand:
        """:meth:`step_array` of the 12-array ``cmd`` whose rotation and translation views :meth:`step` and
        :meth:`step_array` take (a serial chain)."""
        checked = self._check(rotation, translation, q_measured, twist_ff_body, t, measurement_age)
        if checked.__class__ is TableCommand:
            return checked
        has_ff = twist_ff_body is not None
        twist = np.ascontiguousarray(twist_ff_body, dtype=float) if has_ff else self._zeros_6
        args, out = self.motion_args(has_ff, float(checked), q_measured)
        return self.motion_outcome(table_motion(cmd, twist, *args), out)

    def motion_args(self, has_ff: bool, dt: float, q_measured) -> tuple[tuple, tuple]:
        """Steps 2-7 of a checked command, prepared: the arguments of ``table_kernel.table_motion`` after its
        command and twist, and the arrays it writes (the prediction's new ones among them), for
        :meth:`motion_outcome`. Nothing of the table changes until the kernel runs. (A hot path that computes the
        command in compiled code calls the kernel there: ``hil_bringup.servicer_hot_path_kernel``.)"""
        chain, kin, n = self._chain, self.kin, self.kin.dof
        had_prev_cmd = self._pose_prev_cmd is not None
        prev_cmd = self._pose_prev_cmd if had_prev_cmd else np.empty(12)
        had_twist_prev = self._twist_prev is not None
        twist_prev = self._twist_prev
        if has_ff and self.prediction_horizon > 0.0 and not had_twist_prev:
            twist_prev = np.empty(6)
        seed = self._q_cmd if q_measured is None else np.ascontiguousarray(q_measured, dtype=float)
        if seed.shape != self._q_cmd.shape:
            seed = self._q_cmd
        hint = kin._sigma_hint
        q_ik, q_next, qd_next, ik_step = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        ik_prev, ik_last = self._q_ik_prev, self._q_ik_step
        args = (has_ff, dt, self._par, prev_cmd, had_prev_cmd, self._twist_est,
                self._zeros_6 if twist_prev is None else twist_prev, had_twist_prev, self._pose_safe,
                self.workspace_min, self.workspace_max, seed, self._q_cmd, self._qd_cmd,
                self._zeros_n if ik_prev is None else ik_prev, self._zeros_n if ik_last is None else ik_last,
                ik_prev is not None, ik_last is not None, chain.placements, chain.kind, chain.axis,
                chain.frame_placement, chain.poses, chain.jac, -1.0 if hint is None else hint[0],
                chain.hint_q if hint is None else hint[1], self.q_lo, self.q_hi, kin.qd_max, kin.qdd_max,
                self._target, q_ik, q_next, qd_next, ik_step, chain.result)
        return args, (q_ik, q_next, qd_next, ik_step, ik_prev, prev_cmd, twist_prev)

    def motion_outcome(self, flags: int, out: tuple) -> TableCommand:
        """The command after ``table_motion`` returned ``flags`` on :meth:`motion_args`' arrays ``out``: a fault's
        hold, or the table's state moved on (:meth:`motion_args` changes nothing of it: a caller whose command fails
        its checks after that leaves the table as it was)."""
        q_ik, q_next, qd_next, ik_step, ik_prev, self._pose_prev_cmd, self._twist_prev = out
        kin = self.kin
        if flags & WORKSPACE_EXIT:
            return self._hold(('workspace_exit',), array_pose(self._target))
        error, sigma, _ = self._chain.result.tolist()
        kin._sigma_hint = (sigma, q_ik)                       # as SerialKinematics.inverse leaves it
        if flags & _FAULT_MASK:
            for bit, fault in _FAULT_BITS:
                if flags & bit:
                    return self._hold((fault,), array_pose(self._target), error, sigma)
        clamps = tuple(name for bit, name in _CLAMP_BITS if flags & bit) if flags & _CLAMP_MASK else ()
        self._q_ik_step = ik_step if ik_prev is not None else None
        self._q_ik_prev = q_ik
        self._qd_cmd = qd_next
        self._q_cmd = q_next
        for name in clamps:
            self.stats.clamp_counts[name] += 1
        return TableCommand(q_next.copy(), self._target.copy(), False, (), clamps, error, sigma)

    def begin_step(self, t: float | None) -> float:
        """A command cycle begins (counted): its ``dt`` (:meth:`_dt`)."""
        self.stats.steps += 1
        return self._dt(t)

    def _check(self, rotation, translation, q_measured, twist_ff_body, t, measurement_age) -> TableCommand | float:
        """Step 1 (and the latch) for the command ``(rotation, translation)``: the hold it calls for, or the
        step's ``dt``."""
        if self._q_cmd is None:
            if q_measured is None:
                raise InputError('MotionTable.step before initialize() and without measured joints')
            self.initialize(q_measured)
        dt = self.begin_step(t)
        if self._latched:
            return self._hold(())
        # 1. the command: one compiled check (table_kernel.command_ok; is_rotation is its definition)
        twist = _NO_TWIST if twist_ff_body is None else np.asarray(twist_ff_body, dtype=float)
        if (twist_ff_body is not None and twist.shape != (6,)) or \
                not command_ok(rotation, translation, twist, 1e-6):
            return self._hold(('invalid_command',))
        if not measurement_age <= self.limits.max_measurement_age:
            return self._hold(('stale_measurement',))
        return dt

    def step_reference(self, pose_cmd_in_base: pin.SE3, q_measured=None, twist_ff_body=None, t: float | None = None,
                       measurement_age: float = 0.0) -> TableCommand:
        """:meth:`step`, readable: the definition of steps 2-7 (and the hexapod's path)."""
        checked = self._check(pose_cmd_in_base.rotation, pose_cmd_in_base.translation, q_measured, twist_ff_body, t,
                              measurement_age)
        if isinstance(checked, TableCommand):
            return checked
        dt = checked
        target = self._predict(pose_cmd_in_base, twist_ff_body, dt)
        clamps = []
        # 3. maximum Cartesian speed, along the geodesic from the last safe pose
        pose_safe = array_pose(self._pose_safe)
        delta = pose_error(pose_safe, target)
        lin, ang = float(np.linalg.norm(delta[:3])), float(np.linalg.norm(delta[3:]))
        scale = min(1.0, self.limits.max_linear_speed * dt / lin if lin > 0 else 1.0,
                    self.limits.max_angular_speed * dt / ang if ang > 0 else 1.0)
        if scale < 1.0:
            target = pose_safe * pin.exp6(pin.Motion(scale * delta))
            clamps.append('cartesian_speed')
        # 4. workspace box
        p = target.translation
        if np.any(p < self.workspace_min) or np.any(p > self.workspace_max):
            return self._hold(('workspace_exit',), target)
        # 5. IK, seeded from the measured joints, or from the previous solution when the robot
        #    is within SEED_RADIUS of it (streaming: the solution is a small step away), moved on
        #    by the solution's last change (the commands come on a fixed grid): the step left to
        #    the IK is then second order, one Newton iteration instead of two (KR 120 at 1 kHz)
        seed = self._q_cmd if q_measured is None else np.asarray(q_measured, dtype=float)
        if seed.shape != self._q_cmd.shape or not np.all(np.isfinite(seed)):
            seed = self._q_cmd
        if self._q_ik_prev is not None and float(np.max(np.abs(self._q_ik_prev - seed))) < self.SEED_RADIUS:
            seed = self._q_ik_prev if self._q_ik_step is None else self._q_ik_prev + self._q_ik_step
        result = self.kin.inverse(target, seed)
        if not result.converged:
            return self._hold(('unreachable',), target, result.error, result.sigma_min)
        if result.sigma_min < self.limits.sigma_min:
            return self._hold(('singular',), target, result.error, result.sigma_min)
        q = result.q
        # 6.-7. joint position limits, then velocity and acceleration (one compiled call,
        #    table_kernel.limit_joints; limit_joints_reference is its definition)
        q_next, qd_next, ik_step = np.empty_like(q), np.empty_like(q), np.empty_like(q)
        flags = limit_joints(q, self._q_ik_prev if self._q_ik_prev is not None else q, self._q_ik_prev is not None,
                             self._q_cmd, self._qd_cmd, dt, self.kin.qd_max, self.kin.qdd_max, self.q_lo, self.q_hi,
                             q_next, qd_next, ik_step)
        if flags & JOINT_LIMIT:
            return self._hold(('joint_limit',), target, result.error, result.sigma_min)
        if flags & JOINT_VELOCITY:
            clamps.append('joint_velocity')
        if flags & JOINT_ACCELERATION:
            clamps.append('joint_acceleration')
        self._q_ik_step = ik_step if self._q_ik_prev is not None else None
        self._q_ik_prev = q
        self._qd_cmd = qd_next
        self._q_cmd = q_next
        exact = not clamps or clamps == ['cartesian_speed']
        self._pose_safe = pose_array(target if exact else self.kin.forward(self._q_cmd, target))
        for name in clamps:
            self.stats.clamp_counts[name] += 1
        return TableCommand(q_command=self._q_cmd.copy(), pose_target_in_base=target, holding=False,
                            clamps=tuple(clamps), ik_error=result.error, sigma_min=result.sigma_min)


def limit_joints_reference(q, q_ik_prev, q_cmd, qd_cmd, dt, qd_max, qdd_max, q_lo, q_hi):
    """The joint-space limits of one command, readable (``table_kernel.limit_joints`` runs them):
    ``None`` at a joint limit, else ``(q_next, qd_next, clamps)``.

    6. The IK solution ``q`` must lie within ``[q_lo, q_hi]``. 7. Joint velocity and acceleration
    (clamp and report): the velocity aimed at is the target's own joint velocity (the solution's
    change since ``q_ik_prev``, zero without one) plus a closing term that can still brake within the
    acceleration limit (``sqrt(2 a |e|)``), so a large gap closes without overshoot. Braking that the
    acceleration limit forbids may carry the command past the IK solution; the position limits
    still bound it."""
    if np.any(q < q_lo) or np.any(q > q_hi):
        return None
    clamps = []
    target_rate = np.zeros_like(q) if q_ik_prev is None else (q - q_ik_prev) / dt
    gap = q - q_cmd - target_rate * dt
    closing = np.sign(gap) * np.minimum(np.abs(gap) / dt, np.sqrt(2.0 * qdd_max * np.abs(gap)))
    qd = target_rate + closing
    qd_lim = np.clip(qd, -qd_max, qd_max)
    if np.any(np.abs(qd_lim - qd) > 1e-12):
        clamps.append('joint_velocity')
    acc_step = qdd_max * dt
    qd_acc = np.clip(qd_lim, qd_cmd - acc_step, qd_cmd + acc_step)
    if np.any(np.abs(qd_acc - qd_lim) > 1e-12):
        clamps.append('joint_acceleration')
    q_next = np.clip(q_cmd + qd_acc * dt, q_lo, q_hi)
    return q_next, (q_next - q_cmd) / dt, clamps


def tracking_error(pose_cmd_in_base: pin.SE3, pose_measured_in_base: pin.SE3) -> tuple[float, float]:
    """Position error [m] and rotation angle [rad] of the measured versus the commanded flange pose."""
    position = float(np.linalg.norm(pose_measured_in_base.translation - pose_cmd_in_base.translation))
    angle = float(np.linalg.norm(pin.log3(pose_cmd_in_base.rotation.T @ pose_measured_in_base.rotation)))
    return position, angle


def home_for_nominal_frame(pose_nominal_in_base: pin.SE3, pose_body_in_flange: pin.SE3) -> pin.SE3:
    """``command_frame: nominal``: the "home" flange pose ``N Y^-1`` for which
    :func:`hil_motion_table.kinematics_helpers.flange_target_from_body_motion` (``home Y g Y^-1``) puts the
    body at ``g`` in the nominal frame: ``pose_flange_in_base = N g Y^-1`` with
    ``N = pose_nominal_in_base`` (the lab calibration, :mod:`hil_bringup.facility`) and
    ``Y = pose_body_in_flange``. Both tables commanding in the one nominal frame make the
    mock-ups' relative pose the simulated one (seed 004 Eq. 23, ``g_n`` cancels)."""
    return pose_nominal_in_base * pose_body_in_flange.inverse()
