"""The table's compiled checks against their readable definitions in ``table.py``, on random inputs."""

import numpy as np
import pinocchio as pin

from hil_motion_table.table import is_rotation, limit_joints_reference
from hil_motion_table.table_kernel import JOINT_ACCELERATION, JOINT_LIMIT, JOINT_VELOCITY, command_ok, limit_joints


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
