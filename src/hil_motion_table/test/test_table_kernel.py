"""The table's compiled checks against their readable definitions in ``table.py``, on random inputs."""

import numpy as np
import pinocchio as pin
import pytest

from hil_motion_table.table import is_rotation, limit_joints_reference
from hil_motion_table.table_kernel import (JOINT_ACCELERATION, JOINT_LIMIT, JOINT_VELOCITY, command_ok, limit_joints,
                                           table_motion)


def test_command_ok_is_is_rotation_and_finiteness():
    rng = np.random.default_rng(1)
    none = np.zeros(0)
    for k in range(400):
        rotation = pin.exp3(rng.normal(size=3))
        kind = k % 5
        if kind == 1:
            rotation = rotation + rng.normal(scale=10 ** rng.uniform(-8, -4), size=(3, 3))   # about the tolerance
        elif kind == 2:
            rotation = rotation @ np.diag([1.0, 1.0, -1.0])                                  # a reflection
        elif kind == 3:
            rotation = rotation.copy()
            rotation[rng.integers(3), rng.integers(3)] = [np.nan, np.inf, -np.inf][k % 3]
        translation = rng.normal(size=3)
        twist = rng.normal(size=6)
        if kind == 4:
            (translation if k % 2 else twist)[rng.integers(3)] = np.nan
        expected = is_rotation(rotation) and np.all(np.isfinite(translation)) and np.all(np.isfinite(twist))
        assert command_ok(rotation, translation, twist, 1e-6) == expected, (k, rotation)
        assert command_ok(np.asfortranarray(rotation), translation, none, 1e-6) == \
            (is_rotation(rotation) and np.all(np.isfinite(translation)))


def test_limit_joints_is_the_reference_to_the_bit():
    rng = np.random.default_rng(2)
    n = 6
    q_lo, q_hi = -np.full(n, 2.0), np.full(n, 2.0)
    qd_max, qdd_max = rng.uniform(0.5, 2.0, n), rng.uniform(2.0, 20.0, n)
    seen = set()
    for k in range(2000):
        dt = rng.uniform(0.5e-3, 4e-3)
        q_cmd = rng.uniform(-1.9, 1.9, n)
        qd_cmd = rng.uniform(-1.0, 1.0, n) * qd_max
        scale = 10 ** rng.uniform(-6, -1)
        q = q_cmd + rng.normal(scale=scale, size=n)
        if k % 7 == 0:
            q[rng.integers(n)] = 2.0 + 1e-3 * rng.uniform(-1, 1)          # about a position limit
        if k % 11 == 0:
            q[rng.integers(n)] = q_cmd[0]                                  # a zero gap somewhere
        prev = None if k % 3 == 0 else q - rng.normal(scale=scale, size=n)
        if k % 5 == 1:                     # streaming within the limits: the solution moves at the commanded rate
            qd_cmd = 0.1 * qd_max * rng.uniform(-1, 1, n)
            prev, q = q_cmd.copy(), q_cmd + qd_cmd * dt
        q_next, qd_next, ik_step = np.empty(n), np.empty(n), np.empty(n)
        flags = limit_joints(q, q if prev is None else prev, prev is not None, q_cmd, qd_cmd, dt, qd_max, qdd_max,
                             q_lo, q_hi, q_next, qd_next, ik_step)
        ref = limit_joints_reference(q, prev, q_cmd, qd_cmd, dt, qd_max, qdd_max, q_lo, q_hi)
        if ref is None:
            assert flags == JOINT_LIMIT
            seen.add('joint_limit')
            continue
        ref_q, ref_qd, ref_clamps = ref
        np.testing.assert_array_equal(q_next, ref_q)
        np.testing.assert_array_equal(qd_next, ref_qd)
        np.testing.assert_array_equal(ik_step, np.zeros(n) if prev is None else q - prev)
        clamps = [name for bit, name in ((JOINT_VELOCITY, 'joint_velocity'), (JOINT_ACCELERATION, 'joint_acceleration'))
                  if flags & bit]
        assert clamps == ref_clamps
        seen.update(clamps or ['none'])
    assert seen == {'joint_limit', 'joint_velocity', 'joint_acceleration', 'none'}


FAULT_NAMES = {'workspace_exit', 'unreachable', 'singular', 'joint_limit', 'invalid_command', 'stale_measurement'}


def _pair(robot: str, **kwargs):
    """Two tables on two copies of one robot's kinematics (each keeps its own IK hint)."""
    from hil_motion_table.kinematics import SerialKinematics
    from hil_motion_table.robot_models import SERIAL_ROBOTS
    from hil_motion_table.table import MotionTable, TableLimits

    limits = kwargs.pop('limits')
    tables = [MotionTable(SerialKinematics(SERIAL_ROBOTS[robot]()), limits, **kwargs) for _ in range(2)]
    assert tables[0]._chain is not None                     # the compiled path runs in table 0
    return tables


def _same_state(fast, ref, hint: bool = True):
    for name in ('_q_cmd', '_qd_cmd', '_twist_est', '_pose_safe', '_pose_prev_cmd', '_twist_prev', '_q_ik_prev',
                 '_q_ik_step'):
        a, b = getattr(fast, name), getattr(ref, name)
        assert (a is None) == (b is None), name
        if a is not None:
            # the twist estimate is a finite difference over 1 ms (the 6 m jumps give 6000 m/s): it carries
            # log6's rounding times 1000
            scale = 1e3 if name == '_twist_est' else 1.0
            np.testing.assert_allclose(a, b, rtol=1e-12 * scale, atol=1e-12 * scale, err_msg=name)
    sa, sb = fast.kin._sigma_hint, ref.kin._sigma_hint
    assert (sa is None) == (sb is None)
    if sa is not None and hint:
        assert abs(sa[0] - sb[0]) <= 1e-12 and np.allclose(sa[1], sb[1], rtol=1e-12, atol=1e-12)


def _sync(fast, ref):
    """Start the next step of ``fast`` from ``ref``'s state (each step is compared from one state: rounding
    differences of 1e-16 would otherwise grow over hundreds of steps of a stateful, iterative rule)."""
    import copy

    for name in ('_q_cmd', '_qd_cmd', '_twist_est', '_pose_safe', '_pose_prev_cmd', '_twist_prev', '_q_ik_prev',
                 '_q_ik_step'):
        setattr(fast, name, copy.deepcopy(getattr(ref, name)))
    fast.kin._sigma_hint = copy.deepcopy(ref.kin._sigma_hint)


def _stream(fast, ref, rng, steps: int, feed_forward: bool, singular_q=None):
    """Drive both tables with one stream: FK of a joint-space random walk (the table's own robot), with big
    jumps, far poses, a singular pose, invalid commands and bad measurements; return the outcomes seen."""
    kin = fast.kin
    q_walk = kin.q_home.copy()
    seen = set()
    for k in range(steps):
        q_walk = q_walk + rng.normal(scale=2e-3, size=kin.dof)
        if k % 23 == 0:
            q_walk = q_walk + rng.normal(scale=0.3, size=kin.dof)            # a jump
        if k % 50 == 0:
            q_walk = np.clip(q_walk, kin.q_min, kin.q_max)
        pose = kin.forward(q_walk)
        if k % 41 == 7:                                                   # far out of reach
            pose = pin.SE3(pose.rotation, pose.translation + np.array([6.0, 0.0, 0.0]))
        singular = singular_q is not None and k % 37 == 11
        if singular:
            pose = kin.forward(singular_q)
        if k % 53 == 5:
            pose = pin.SE3(pose.rotation * 1.01, pose.translation)          # not a rotation
        q_meas = q_walk + rng.normal(scale=1e-4, size=kin.dof)
        kind = k % 9
        if singular:
            q_meas = singular_q.copy()                                    # the IK starts on the singular pose
        elif kind == 1:
            q_meas = None
        elif kind == 2:
            q_meas = q_meas.copy()
            q_meas[0] = np.nan
        elif kind == 3:
            q_meas = q_meas[:-1]                                          # the wrong length
        twist = rng.normal(scale=0.05, size=6) if feed_forward and k % 4 else None
        t = 1e-3 * k + (rng.uniform(0, 4e-4) if k % 2 else 0.0)
        age = 0.5 if k % 61 == 60 else 0.0
        out_f = fast.step(pose, q_meas, twist, t=t, measurement_age=age)
        out_r = ref.step_reference(pose, q_meas, twist, t=t, measurement_age=age)
        assert out_f.holding == out_r.holding and out_f.faults == out_r.faults and out_f.clamps == out_r.clamps, k
        # to 1e-12 of the motions involved: the predictor extrapolates the finite-difference twist of jumps of up
        # to 6 m per 1 ms (above) over 10-20 ms, so targets and commands are compared to 1e-11 m or rad
        np.testing.assert_allclose(out_f.q_command, out_r.q_command, rtol=1e-12, atol=1e-11)
        if out_f.faults == ('unreachable',):
            # an IK that does not converge (50 damped iterations against an unreachable pose) wanders along the
            # reach boundary, where rounding of 1e-16 grows without bound: the outcome and the held command
            # agree (above), the residual where each stopped does not (0.044 against 0.050 m was seen)
            assert min(out_f.ik_error, out_r.ik_error) >= fast.kin.tolerance * 1e3
        else:
            assert out_f.ik_error == pytest.approx(out_r.ik_error, rel=1e-12, abs=1e-12)
            assert (np.isnan(out_f.sigma_min) and np.isnan(out_r.sigma_min)) or \
                out_f.sigma_min == pytest.approx(out_r.sigma_min, rel=1e-12, abs=1e-12)
        assert (out_f.pose_target_in_base is None) == (out_r.pose_target_in_base is None)
        if out_f.pose_target_in_base is not None:
            np.testing.assert_allclose(out_f.pose_target_in_base.homogeneous, out_r.pose_target_in_base.homogeneous,
                                       rtol=1e-12, atol=1e-11)
        _same_state(fast, ref, hint=out_f.faults != ('unreachable',))
        _sync(fast, ref)
        seen.update(out_f.faults or out_f.clamps or ('tracked',))
        if out_f.faults and k % 3 == 0:
            fast.reset()
            ref.reset()
    assert fast.stats == ref.stats
    return seen


def test_table_motion_is_the_reference_through_every_clamp_and_fault():
    """The compiled steps 2-7 (``MotionTable.step``) against ``step_reference`` to 1e-12, outputs and state,
    on every serial robot; the streams pass through every clamp and every fault."""
    from hil_motion_table.robot_models import SERIAL_ROBOTS
    from hil_motion_table.table import TableLimits

    rng = np.random.default_rng(3)
    seen = set()
    for robot in SERIAL_ROBOTS:
        # a predictor on the feed-forward twist, the Cartesian speed limit, latched faults
        fast, ref = _pair(robot, limits=TableLimits((-3.0,) * 3, (3.0,) * 3, 0.5, 1.0, 0.02, 0.0, 0.1),
                          period=1e-3, prediction_horizon=0.02)
        seen |= _stream(fast, ref, rng, 400, feed_forward=True)
        # the finite-difference predictor, no speed limit (joint clamps), a small box, a shrunk joint range,
        # a high singular-value floor, faults not latched
        kin_home = fast.kin.forward(fast.kin.q_home).translation
        singular_q = fast.kin.q_home.copy()
        if robot == 'ur10e':
            singular_q[4] = 1e-3                                          # the wrist singularity
        fast, ref = _pair(robot, limits=TableLimits(tuple(kin_home - 0.4), tuple(kin_home + 0.4), 1e3, 1e3, 0.05,
                                                    0.15, 0.1), period=1e-3, prediction_horizon=0.01,
                          latch_faults=False)
        seen |= _stream(fast, ref, rng, 400, feed_forward=False, singular_q=singular_q)
    assert seen >= FAULT_NAMES | {'cartesian_speed', 'joint_velocity', 'joint_acceleration', 'tracked'}, seen
    # one compiled version for every caller (a second one would compile in some node's first command); the IK's
    # kernels run inside table_motion and SerialKinematics.inverse (none when table_motion came from the cache)
    assert len(table_motion.signatures) == 1, table_motion.signatures
    from hil_motion_table.ik_kernel import serial_ik, smallest_singular_value

    for kernel in (serial_ik, smallest_singular_value):
        assert len(kernel.signatures) <= 1, (kernel.__name__, kernel.signatures)
