"""The orbit side's compiled period (seed 001 Eq. 3, Appendix A, the grip contact and the payload's seed 004 Eq. 11;
issue 17) against its readable reference on the rule objects.

Random states with the arm, the grip and the payload turned (and a grip off the payload's CoM), fresh and stale
commands: every row to 1e-12 and the states the objects hold after. A whole run of the lockstep both ways with a
tumbling payload. A non-finite command is refused by the call and named by the reference, with nothing moved on.
"""

import numpy as np
import pinocchio as pin
import pytest

from hil_common.errors import ConfigError
from hil_dynamics.rigid_body import RigidBody
from hil_teleop import orbit_kernel as ok
from hil_teleop.config import TeleopConfig, earth_and_link
from hil_teleop.gains import TeleopGains
from hil_teleop.master import ScriptedOperator
from hil_teleop.slave_law import SlaveLaw, SlaveSide
from hil_teleop.slave_side import GripContact, OrbitSide, PayloadInTheLoop, SlaveArm

TOL = 1e-12
INERTIA = np.array([[900.0, 35.0, -20.0], [35.0, 1100.0, 15.0], [-20.0, 15.0, 1300.0]])


def test_the_compiled_angles_are_pinocchios():
    """``matrixToRpy`` on random rotations, and within and beyond its gimbal-lock branch (pitch near +-90 deg)."""
    rng = np.random.default_rng(3)
    out = np.empty(3)
    pitches = list(rng.uniform(-1.5, 1.5, 300)) + [s * (0.5 * np.pi - e) for s in (1, -1)
                                                    for e in (0.0, 1e-5, 5e-4, 9.99e-4, 1.001e-3, 2e-3)]
    for pitch in pitches:
        phi = np.array([rng.uniform(-np.pi, np.pi), pitch, rng.uniform(-np.pi, np.pi)])
        g = np.zeros(12)
        g[:9] = pin.rpy.rpyToMatrix(phi).reshape(9)
        ok.rpy_of_pose_into(g, out)
        np.testing.assert_allclose(out, pin.rpy.matrixToRpy(g[:9].reshape(3, 3)), rtol=0.0, atol=TOL, err_msg=phi)


def _random_pose(rng, angle=1.0):
    return pin.SE3(pin.exp3(rng.uniform(-angle, angle, 3)), rng.normal(0.0, 0.5, 3))


def _orbit(rng, switches):
    gains = TeleopGains(k_s=[2e-3] * 3 + [5e-3] * 3, **switches)
    arm = SlaveArm(_random_pose(rng), [1e-4] * 3 + [3e-4] * 3, 0.02)
    arm.v = rng.normal(0.0, 0.05, 6)
    grip_in_payload = _random_pose(rng)
    payload = PayloadInTheLoop(RigidBody(4500.0, INERTIA), _random_pose(rng), grip_in_payload)
    payload.rule.state = payload.rule.state.with_twists(np.zeros(6), rng.normal(0.0, 0.05, 6))
    payload.rule.step(rng.normal(0.0, 50.0, 6), 0.3)            # turned away from g_0, not only twisted
    # the end effector near the grip (a contact, not a spring stretched across the lab)
    arm.pose = payload.pose * grip_in_payload * pin.SE3(pin.exp3(rng.normal(0.0, 0.05, 3)), rng.normal(0.0, 0.01, 3))
    law = SlaveLaw(gains)
    law.v_prev, law.v_prev2 = rng.normal(0.0, 0.05, 6), rng.normal(0.0, 0.05, 6)
    slave = SlaveSide(law, _random_pose(rng))
    contact = GripContact([2e4] * 3 + [2e3] * 3, [2e2] * 3 + [2e1] * 3)
    return OrbitSide(slave, arm, contact, payload, 2e-3)


def _state(orbit):
    """What the objects hold, by name."""
    orbit.sync()
    s = orbit.payload.rule.state
    g_n, g_c = s.pose_arrays()
    law = orbit.slave.law
    return {'arm_pose': orbit.arm.pose.homogeneous, 'arm_v': orbit.arm.v, 'g_n': g_n, 'v_n': s.twist_nominal_body,
            'g_c': g_c, 'v_c': s.twist_client_rel_body, 'v_prev': law.v_prev, 'v_prev2': law.v_prev2,
            'ee_cmd': orbit.slave.pose_ee_cmd.homogeneous, 't': np.array([s.t])}


@pytest.mark.parametrize('switches', [{}, {'coupling': False}, {'force_feedback': False, 'damping': False}],
                         ids=['all', 'no_coupling', 'no_feedback_damping'])
def test_the_compiled_period_is_the_reference_period(switches):
    rng = np.random.default_rng(len(switches) + 7)
    worst = 0.0
    for _ in range(40):
        seed = int(rng.integers(1 << 30))
        fast, ref = _orbit(np.random.default_rng(seed), switches), _orbit(np.random.default_rng(seed), switches)
        for k in range(5):
            command = None if k == 2 else (rng.normal(0.0, 30.0, 6), rng.normal(0.0, 0.3, 6) + [1, 0, 0.5, 0, 0, 3])
            (rows_f, stale_f), (rows_r, stale_r) = fast.step(command), ref.step_reference(command)
            assert stale_f == stale_r == (command is None)
            scale = np.maximum(1.0, np.abs(rows_r).max(axis=1, keepdims=True))
            worst = max(worst, float((np.abs(rows_f - rows_r) / scale).max()))
        a, b = _state(fast), _state(ref)
        for name in b:
            worst = max(worst, float(np.abs(a[name] - b[name]).max() / max(1.0, np.abs(b[name]).max())))
    assert worst < TOL, worst
    assert np.abs(rows_r[ok.O_F_S]).max() > 1.0            # the grip contact pulls


def test_a_non_finite_command_is_refused_and_named_with_nothing_moved_on():
    orbit = _orbit(np.random.default_rng(5), {})
    orbit.step((np.ones(6), np.ones(6)))
    before = _state(orbit)
    with pytest.raises(ConfigError, match='f_m'):
        orbit.step((np.array([1.0, np.nan, 0, 0, 0, 0]), np.ones(6)))
    after = _state(orbit)
    # the reference observed v_s before it refused f_m (SlaveSide.step), as the node's law does; nothing else moved
    np.testing.assert_array_equal(after['v_prev'], before['arm_v'])
    np.testing.assert_array_equal(after['v_prev2'], before['v_prev'])
    for name in set(before) - {'v_prev', 'v_prev2'}:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)
    rows, _ = orbit.step((np.ones(6), np.ones(6)))                 # and it goes on from the objects' state
    assert np.isfinite(rows).all()


def test_a_tumbling_run_is_the_same_both_ways():
    """The lockstep runner (``run_teleop``) with the orbit side compiled and in Python, the operator commanding
    rotations on every axis: every record to 1e-9 of its size over 3 s (1500 closed-loop periods)."""
    from hil_bringup.runners.teleop import run_teleop

    config = TeleopConfig(payload_mass_kg=500.0, delay_s=0.5)
    gains = config.gains
    op = ScriptedOperator.velocity_steps([(0.1, 1.5, [0.01, -0.02, 0.01, 0.05, -0.04, 0.08]),
                                          (1.5, 2.5, [-0.02, 0.0, 0.01, -0.06, 0.03, -0.05])],
                                         gains.k_s, gains.g_eff, ramp_s=0.1)
    fast, ref = run_teleop(config, op, 3.0), run_teleop(config, op, 3.0, compiled_orbit=False)
    assert np.abs(ref.x_payload[-1, 3:] - ref.x_payload[0, 3:]).max() > 0.02      # it turned
    for name in ('v_s_r', 'v_s_c', 'v_s', 'x_s', 'f_s', 'x_payload', 'v_payload', 'payload_momentum_end'):
        a, b = getattr(fast, name), getattr(ref, name)
        np.testing.assert_allclose(a, b, rtol=0.0, atol=1e-9 * max(1.0, np.abs(b).max()), err_msg=name)
    np.testing.assert_array_equal(fast.stale, ref.stale)
