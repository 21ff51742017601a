"""The client admittance node's policy without rclpy (hil_admittance.client_side.ClientSide):
the wrench's freshness, pacing, one mission clock, the hold on overload.

The reference is a second :class:`ClientAdmittance` with its own :class:`ClientPort`, stepped by
hand with the wrench the policy says must apply (the sensor wrench moved to the CoM through
``pose_sensor_in_client`` by ``se3.transform_wrench``, zero once stale), so each check fails if the
rule uses a stale wrench, forgets the transform, integrates while holding or drops a step."""

import numpy as np
import pinocchio as pin
import pytest

from hil_admittance.client_side import ClientSide
from hil_common.overload import OverloadGuard
from hil_dynamics.client import ClientAdmittance
from hil_dynamics.passivity import ClientPort
from hil_dynamics.rigid_body import RigidBody
from hil_dynamics.se3 import transform_wrench

DT, TIMEOUT = 1e-3, 0.05
BODY = RigidBody(7828.0, np.diag([17023.0, 129112.0, 124826.0]))
TWIST_0 = np.array([0.0, 0.0, 0.0, 0.0, -0.0436, 0.0])
POSE_SENSOR = pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.3, 0.5), np.array([-2.9, 0.1, 0.0]))
WRENCH_SENSOR = np.array([30.0, -10.0, 5.0, 1.0, 2.0, -3.0])


def _port():
    return ClientPort(ClientAdmittance(BODY, TWIST_0), 100.0, enabled=False)


def _side(**kw):
    return ClientSide(_port(), POSE_SENSOR, DT, TIMEOUT, **kw)


def _same(a, b):
    np.testing.assert_allclose(a.pose_client_in_nominal.homogeneous, b.pose_client_in_nominal.homogeneous, atol=1e-14)
    np.testing.assert_allclose(a.twist_client_rel_body, b.twist_client_rel_body, atol=1e-14)


def test_a_fresh_wrench_applies_at_the_com_and_a_stale_one_counts_as_zero_once_reported():
    side, ref = _side(max_catch_up=1000), _port()
    wrench_com = transform_wrench(POSE_SENSOR, WRENCH_SENSOR)
    assert side.set_wrench_sensor(WRENCH_SENSOR, 0.0)
    assert side.tick(0.0) is None                   # the step grid starts at the first tick
    t, stale_events = 0.0, 0
    for k in range(100):                            # 0.1 s: fresh for 50 ms, then stale
        t = (k + 1) * DT
        out = side.tick(t)
        ref.step(wrench_com if t <= TIMEOUT + 1e-12 else np.zeros(6), DT)
        stale_events += out.stale_began
    _same(out.state, ref.admittance.state)
    assert stale_events == 1 and side.stale
    assert np.linalg.norm(out.twist_table_cmd) > 0.0 and out.step_time_s == pytest.approx(0.1)
    assert side.set_wrench_sensor(WRENCH_SENSOR, t) and not side.tick(t + DT).stale_began


def test_pacing_runs_the_due_steps_and_drops_beyond_max_catch_up():
    side = _side(max_catch_up=5)
    assert side.tick(0.0) is None                          # the grid starts at the first tick
    assert side.tick(0.0005) is None                       # early: no step due
    side.tick(0.0031)                                      # 3 due
    assert side.pacer.steps_done == 3
    side.tick(0.0131)                                      # 10 due, 5 run, 5 dropped and counted
    assert side.pacer.overruns == 5


def test_malformed_wrenches_are_refused_and_counted():
    side = _side()
    assert not side.set_wrench_sensor([np.nan, 0, 0, 0, 0, 0], 0.0)
    assert not side.set_wrench_sensor([1.0, 2.0], 0.0)
    assert side.rejected == 2 and side.wrench_com.stamp_s is None


def test_with_a_mission_epoch_sides_started_at_different_instants_integrate_one_nominal():
    """Two sides starting 0.3 s apart, stepped to t = 2 s: with the epoch t = 0 their nominals
    (Eq. 4) are one and their stamps one grid; without it they are 0.3 s of tumble apart."""
    def run(first_s, epoch_s):
        side, t, out = _side(epoch_s=epoch_s), first_s, None
        while t <= 2.0 + 1e-9:
            out = side.tick(t) or out
            t += DT
        return side, out

    (a, out_a), (b, out_b) = run(0.5, 0.0), run(0.8, 0.0)
    assert a.pacer.overruns == 0 and b.pacer.overruns == 0
    err = pin.log6(a.rule.state.pose_nominal_in_orbit.actInv(b.rule.state.pose_nominal_in_orbit)).vector
    assert np.linalg.norm(err) < 1e-12
    assert out_a.step_time_s == pytest.approx(out_b.step_time_s)
    (c, _), (d, _) = run(0.5, None), run(0.8, None)
    err = pin.log6(c.rule.state.pose_nominal_in_orbit.actInv(d.rule.state.pose_nominal_in_orbit)).vector
    assert np.linalg.norm(err[3:]) == pytest.approx(0.3 * abs(TWIST_0[4]), rel=0.05)


def test_an_overload_holds_the_table_and_resumes_on_its_own():
    guard = OverloadGuard(DT, warn_late_s=0.005, hold_late_s=0.05, recover_after_s=0.1)
    side = _side(overload=guard)
    t = 0.0
    side.tick(t)
    for _ in range(10):
        t += DT
        side.set_wrench_sensor(WRENCH_SENSOR, t)
        before = side.tick(t)
    assert not before.holding
    t += 0.3                                               # a 0.3 s stall: 300 due, 20 run, 280 dropped
    side.set_wrench_sensor(WRENCH_SENSOR, t)
    held = side.tick(t)
    assert held.holding and guard.dropped_steps == 280
    _same(held.state, before.state)                        # Eq. 11 not integrated
    np.testing.assert_array_equal(held.twist_table_cmd, np.zeros(6))
    for _ in range(99):
        t += DT
        side.set_wrench_sensor(WRENCH_SENSOR, t)
        out = side.tick(t)
    assert out.holding
    for _ in range(2):
        t += DT
        side.set_wrench_sensor(WRENCH_SENSOR, t)
        out = side.tick(t)
    assert not out.holding and np.linalg.norm(out.twist_table_cmd) > 0.0


def test_dropped_and_held_steps_still_move_the_nominal_on():
    """One mission clock: a side that dropped steps (a 0.1 s stall beyond a 5-step catch-up) and one
    that held (an overload) keep the nominal of a side that ran every step, to 1e-12."""
    def run(side, ticks):
        for t in ticks:
            side.tick(t)
        return side

    every = [k * DT for k in range(0, 1001)]
    stalled = [t for t in every if not 0.3 < t < 0.4 - 1e-9]
    guard = OverloadGuard(DT, warn_late_s=0.005, hold_late_s=0.05, recover_after_s=0.1)
    ref = run(_side(max_catch_up=1000), every)
    dropped = run(_side(max_catch_up=5), stalled)
    held = run(_side(max_catch_up=1000, overload=guard), stalled)
    assert dropped.pacer.overruns > 0 and guard.holds == 1
    for other in (dropped, held):
        err = pin.log6(ref.rule.state.pose_nominal_in_orbit.actInv(other.rule.state.pose_nominal_in_orbit)).vector
        assert np.linalg.norm(err) < 1e-12
