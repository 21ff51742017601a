"""The servicer admittance node's policy without rclpy (hil_admittance.servicer_side.ServicerSide):
freshness of the inputs, joint acceleration by differencing, hold on a sensor fault, pacing.

The reference is a second :class:`ServicerAdmittance` stepped by hand with the inputs the
policy says must apply (zero once stale, the differenced ``ddq``), so each check fails if the
rule uses a stale input, forgets the differencing, integrates while holding or drops a step."""

import numpy as np
import pinocchio as pin
import pytest

from hil_common.errors import InputError
from hil_admittance.servicer_side import ServicerSide
from hil_dynamics.models import servicer_lbr_urdf
from hil_dynamics.passivity import PassivityController
from hil_dynamics.rigid_body import RigidBody
from hil_dynamics.se3 import transform_wrench
from hil_dynamics.servicer import ArmFeedForward, ServicerAdmittance, ServicerModel

DT, TIMEOUT = 1e-3, 0.05
URDF = servicer_lbr_urdf()
BODY = RigidBody(8000.0, np.diag([1.7e4, 1.2e5, 1.3e5]))
TWIST_N0 = np.array([0.0, 0.0, 0.0, 0.0, 0.0, -0.0175])
POSE_BASE_0 = pin.SE3(pin.rpy.rpyToMatrix(0.0, 1.5707963267948966, 0.0), np.array([-4.8, -0.2, 1.1]))
POSE_SENSOR_IN_EE = pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, 0.5), np.array([0.0, 0.0, 0.05]))
Q0 = np.array([0.1, 0.4, -0.2, -1.2, 0.1, 0.6, 0.0])


def _admittance():
    return ServicerAdmittance(ServicerModel(URDF, 'lbr_flange'), BODY, TWIST_N0, None, POSE_BASE_0, np.zeros(6))


def _side(**kw):
    adm = _admittance()
    ff = ArmFeedForward(ServicerModel(URDF, 'lbr_flange'), pin.SE3(np.eye(3), np.array([0.0, 0.0, 1.5])), 9.80665)
    passivity = PassivityController(adm.model.mass_matrix(Q0)[:6, :6], 100.0, enabled=False)
    return ServicerSide(adm, ff, POSE_SENSOR_IN_EE, DT, TIMEOUT, passivity, **kw)


def _same_state(a, b):
    np.testing.assert_allclose(a.pose_base_in_nominal.homogeneous, b.pose_base_in_nominal.homogeneous, atol=1e-14)
    np.testing.assert_allclose(a.twist_base_rel_body, b.twist_base_rel_body, atol=1e-14)


def test_inputs_apply_while_fresh_and_count_as_zero_once_stale_with_the_differenced_ddq():
    side, ref = _side(max_catch_up=1000), _admittance()
    dq0, dq1 = np.full(7, 0.01), np.array([0.02, 0.0, 0.01, 0.03, -0.01, 0.0, 0.01])
    side.set_joints(Q0, dq0, 0.0)
    side.set_joints(Q0, dq1, 0.004)
    ddq = (dq1 - dq0) / 0.004
    np.testing.assert_allclose(side.ddq, ddq, rtol=1e-12)
    f_b = np.array([3.0, -1.0, 2.0, 0.5, 0.2, -0.4])
    f_sensor = np.array([1.0, 2.0, -4.0, 0.1, -0.2, 0.05])
    side.set_wrench_base(f_b, 0.004)
    side.set_wrench_sensor(f_sensor, 0.004)
    f_e = transform_wrench(POSE_SENSOR_IN_EE, f_sensor)
    out = side.tick(0.0045)                               # 4 steps due since t0 = 0
    for _ in range(4):
        expected = ref.step(DT, Q0, dq1, ddq, f_b, f_e)
    _same_state(out.state, expected)
    assert np.linalg.norm(out.state.twist_base_rel_body) > 0.0 and not out.holding
    # 0.06 s later both inputs are stale: the steps that are due integrate with zero wrenches.
    out = side.tick(0.0045 + TIMEOUT + 0.0105)
    n = side.pacer.steps_done - 4
    assert n == 61
    for _ in range(n):
        expected = ref.step(DT, Q0, dq1, ddq, np.zeros(6), np.zeros(6))
    _same_state(out.state, expected)


def test_the_steps_take_the_one_compiled_call_on_the_inputs_as_the_nodes_hold_them(monkeypatch):
    """The nodes hand the side lists and decoded arrays; the side holds them so that each step of a tick is one
    compiled call (``servicer.port_step``'s ``kernels.side_port_step``; the last step's Eq. 22 torques are the
    tick's, and a compiled sample loop runs a late sample's catch-up steps with the same call), with and without a
    measured twist. (Its results against the separate calls: ``test_fast_paths``.)"""
    from hil_dynamics import kernels

    calls = []
    real = kernels.side_port_step
    monkeypatch.setattr(kernels, 'side_port_step', lambda *args: calls.append(len(args)) or real(*args))
    side = _side(max_catch_up=1000)
    assert len(calls) == 1                              # loaded where the side is built (nothing of it changed)
    calls.clear()
    side.set_joints(list(Q0), [0.01] * 7, 0.0)
    side.set_joints(list(Q0), [0.02] * 7, 0.004)
    side.set_wrench_sensor([1.0, 2.0, -4.0, 0.1, -0.2, 0.05], 0.004)
    side.set_wrench_base([3.0, -1.0, 2.0, 0.5, 0.2, -0.4], 0.004)
    side.set_tau([0.5] * 7, 0.004)
    assert side.tick(0.0045) is not None and len(calls) == 4      # 4 steps due: a call each
    side.set_twist_measured([0.001, 0.0, 0.0, 0.0, 0.0, 0.002], 0.005)
    assert side.tick(0.0051) is not None and len(calls) == 5


def test_ddq_is_differenced_over_the_measurements_stamps_not_the_jittery_receipt_times():
    """A constant joint acceleration sampled every 4 ms (the stamps), received at times that jitter
    by whole steps as on the lab twin's stepped clock (two samples at one clock reading, then one
    late): the differenced ``ddq`` is the true one at every sample. Differencing over the receipt
    times gives spikes of several times it, or keeps a stale value (the control: it fails)."""
    ddq_true = np.array([0.5, -0.2, 0.1, 0.3, 0.0, -0.4, 0.2])
    stamps = 10.0 + 0.004 * np.arange(12)
    received = stamps + 0.004 * np.array([0, 0, 1, 0, 1, 1, 0, 2, 0, 0, 1, 0])   # a later clock reading
    received = np.maximum.accumulate(received)
    side, control = _side(), _side()
    worst_control = 0.0
    for k, (t_meas, t_recv) in enumerate(zip(stamps, received)):
        dq = ddq_true * (t_meas - stamps[0])
        side.set_joints(Q0, dq, t_recv - 10.0, t_meas)
        control.set_joints(Q0, dq, t_recv - 10.0)            # unstamped: the receipt time
        if k > 0:
            np.testing.assert_allclose(side.ddq, ddq_true, rtol=1e-6, atol=1e-9)
            worst_control = max(worst_control, float(np.max(np.abs(control.ddq - ddq_true))))
    assert worst_control > 0.5 * np.max(np.abs(ddq_true))
    # the same measurement again (a re-send) changes nothing; a clock that went back starts again
    before = side.ddq.copy()
    side.set_joints(Q0, ddq_true * 0.1, 1.0, stamps[-1])
    np.testing.assert_array_equal(side.ddq, before)
    side.set_joints(Q0, np.zeros(7), 1.1, 5.0)
    np.testing.assert_array_equal(side.ddq, np.zeros(7))


def test_a_latched_sensor_fault_holds_the_table_and_gives_the_arm_only_its_gravity_compensation():
    side = _side()
    side.set_joints(Q0, np.zeros(7), 0.0)
    side.set_wrench_base(np.array([50.0, 0, 0, 0, 0, 0]), 0.0)
    before = side.tick(0.002)
    assert side.set_fault(True) and not side.set_fault(True)
    held = side.tick(0.010)
    assert held.holding
    np.testing.assert_array_equal(held.twist_table_cmd, np.zeros(6))
    _same_state(held.state, before.state)                  # the admittance did not integrate
    np.testing.assert_allclose(held.tau_q, -side.ff.gravity_torque(before.state.pose_base_in_nominal, Q0), atol=1e-12)
    assert np.linalg.norm(held.tau_q) > 1.0                # the lab gravity on the LBR is not small
    assert side.set_fault(False)
    resumed = side.tick(0.012)
    assert not resumed.holding and np.linalg.norm(resumed.twist_table_cmd) > 0.0


def test_pacing_runs_the_due_steps_and_drops_beyond_max_catch_up():
    side = _side(max_catch_up=5)
    assert side.tick(0.003) is None                        # no joint state yet: nothing, and no backlog
    side.set_joints(Q0, np.zeros(7), 0.003)
    assert side.tick(0.0031) is None                       # early: no step due
    out = side.tick(0.0061)                                # 3 steps due
    assert side.pacer.steps_done == 6 and out.step_time_s == pytest.approx(0.006)
    side.tick(0.0161)                                      # 10 due, 5 run, 5 dropped and counted
    assert side.pacer.overruns == 5


def test_malformed_inputs_are_refused_and_counted():
    side = _side()
    assert not side.set_wrench_sensor([np.nan] * 6, 0.0)
    assert not side.set_tau(np.zeros(6), 0.0)              # 7 joints
    assert not side.set_wrench_base(np.zeros(5), 0.0)
    assert side.rejected == 3 and 'wrench_base_com' in side.last_rejection
    assert not side.wrench_ee.fresh(0.0, TIMEOUT) and not side.tau_obsw.fresh(0.0, TIMEOUT)


def test_with_a_mission_epoch_sides_started_at_different_instants_integrate_one_nominal():
    """Two servicer sides whose first joint state comes 0.3 s apart, each stepped to t = 2 s with the same
    inputs: with the epoch t = 0 their nominals (Eq. 4) are one (and their step stamps one grid); without
    it each node's nominal starts with the node (``t0_s``; here when its first joint state came), 0.3 s
    of tumble apart (the control)."""
    def run(first_s, epoch_s):
        side = _side(max_catch_up=20, epoch_s=epoch_s, t0_s=0.0 if epoch_s is not None else first_s)
        t, out = first_s, None
        while t <= 2.0 + 1e-9:
            side.set_joints(Q0, np.zeros(7), t, t)
            out = side.tick(t) or out
            t += DT
        return side, out

    (a, out_a), (b, out_b) = run(0.5, 0.0), run(0.8, 0.0)
    assert a.pacer.overruns == 0 and b.pacer.overruns == 0       # the steps before the start are no overruns
    err = pin.log6(a.adm.state.pose_nominal_in_orbit.actInv(b.adm.state.pose_nominal_in_orbit)).vector
    assert np.linalg.norm(err) < 1e-12
    assert out_a.step_time_s == pytest.approx(out_b.step_time_s)
    (c, _), (d, _) = run(0.5, None), run(0.8, None)
    err = pin.log6(c.adm.state.pose_nominal_in_orbit.actInv(d.adm.state.pose_nominal_in_orbit)).vector
    assert np.linalg.norm(err[3:]) == pytest.approx(0.3 * abs(TWIST_N0[5]), rel=0.05)


def test_an_overload_holds_like_a_fault_and_resumes_on_its_own():
    """A 0.3 s stall of a 1 kHz side (beyond its 20-step catch-up) holds: no integration, the table
    still, the arm on gravity compensation; after ``recover_after_s`` on time it integrates again."""
    from hil_common.overload import OverloadGuard

    guard = OverloadGuard(DT, warn_late_s=0.005, hold_late_s=0.05, recover_after_s=0.1)
    side = _side(max_catch_up=20, overload=guard)
    side.set_joints(Q0, np.zeros(7), 0.0)
    side.set_wrench_base(np.array([50.0, 0, 0, 0, 0, 0]), 0.0)
    t = 0.0
    for _ in range(10):
        t += DT
        before = side.tick(t)
    assert not before.holding
    t += 0.3
    side.set_wrench_base(np.array([50.0, 0, 0, 0, 0, 0]), t)
    held = side.tick(t)
    assert held.holding and guard.dropped_steps == 280 and guard.holding
    _same_state(held.state, before.state)
    np.testing.assert_array_equal(held.twist_table_cmd, np.zeros(6))
    np.testing.assert_allclose(held.tau_q, -side.ff.gravity_torque(before.state.pose_base_in_nominal, Q0), atol=1e-12)
    for _ in range(99):                                    # 99 ms on time: still holding
        t += DT
        side.set_wrench_base(np.array([50.0, 0, 0, 0, 0, 0]), t)
        out = side.tick(t)
    assert out.holding
    for _ in range(2):
        t += DT
        side.set_wrench_base(np.array([50.0, 0, 0, 0, 0, 0]), t)
        out = side.tick(t)
    assert not out.holding and np.linalg.norm(out.twist_table_cmd) > 0.0


def test_dropped_and_held_steps_still_move_the_nominal_on():
    """One mission clock (Eq. 23 needs one g_n for both admittances): a side that dropped steps (a
    0.1 s stall beyond a 5-step catch-up) and a side that held (a latched wrist fault for 0.2 s) keep
    the nominal of a side that ran every step, to 1e-12."""
    def run(max_catch_up, ticks, fault_window=None):
        side = _side(max_catch_up=max_catch_up)
        for t in ticks:
            side.set_joints(Q0, np.zeros(7), t)
            if fault_window is not None:
                side.set_fault(fault_window[0] <= t < fault_window[1])
            side.tick(t)
        return side

    every = [k * DT for k in range(1, 1001)]
    stalled = [t for t in every if not 0.3 < t < 0.4 - 1e-9]
    ref, dropped, held = run(1000, every), run(5, stalled), run(1000, every, (0.5, 0.7))
    assert dropped.pacer.overruns > 0
    for other in (dropped, held):
        err = pin.log6(ref.adm.state.pose_nominal_in_orbit.actInv(other.adm.state.pose_nominal_in_orbit)).vector
        assert np.linalg.norm(err) < 1e-12
        np.testing.assert_allclose(other.adm.state.twist_nominal_body, ref.adm.state.twist_nominal_body, atol=1e-12)


def test_waiting_for_the_first_arm_state_is_no_overload():
    """A node whose first joint state comes 0.5 s after its start (discovery, a busy machine) has no
    backlog to drop and nothing to hold for: its steps start at that joint state."""
    from hil_common.overload import OverloadGuard

    guard = OverloadGuard(DT, warn_late_s=0.005, hold_late_s=0.05, recover_after_s=0.1)
    side = _side(max_catch_up=20, overload=guard)
    assert side.tick(0.2) is None                          # nothing yet
    side.set_joints(Q0, np.zeros(7), 0.5)
    out = side.tick(0.502)
    assert out is not None and not out.holding and not guard.holding
    assert side.pacer.overruns == 0 and guard.dropped_steps == 0 and out.step_time_s == pytest.approx(0.502)


def test_the_servicer_plans_the_rebase_and_the_client_side_keeps_one_nominal_through_it():
    """Post-grasp re-basing split over two rules as over the live graph's two nodes: the servicer side
    plans it from its state and the client's (``client/state``), the plan goes through its message
    layout to a :class:`ClientSide`, and each applies it to its own nominal. Through the ramp, and
    with the servicer holding 0.1 s of it on a wrist fault, the two nominals stay one to 1e-9 while
    ``V_n`` moves by 6 mm/s; the client side without the plan parts from it (the control)."""
    from hil_admittance.client_side import ClientSide
    from hil_dynamics.client import ClientAdmittance
    from hil_dynamics.passivity import ClientPort
    from hil_dynamics.rebase import RebaseParams, RebasePlan, RebaseSchedule

    servicer = _side(max_catch_up=20, epoch_s=0.0, rebase=RebaseSchedule(RebaseParams(True, 0.1, 0.4), lead_s=0.05))

    def client_side():
        return ClientSide(ClientPort(ClientAdmittance(BODY, TWIST_N0), 0.0, enabled=False), pin.SE3.Identity(), DT,
                          TIMEOUT, epoch_s=0.0)
    client, control = client_side(), client_side()
    f_b = np.array([400.0, 0.0, -200.0, 0.0, 0.0, 300.0])     # the servicer moves off the co-moving stack
    plan, apart, v_n0 = None, [], None
    for k in range(1, 1001):
        t = k * DT
        servicer.set_joints(Q0, np.zeros(7), t, t)
        servicer.set_wrench_base(f_b, t)
        servicer.set_fault(0.45 <= t < 0.55)
        if k == 100:
            servicer.set_phase('post_grasp', t)
            v_n0 = servicer.adm.state.twist_nominal_body.copy()
        out = servicer.tick(t)
        for side in (client, control):
            side.tick(t)
        g_t, v_t = client.rule.state.absolute()
        servicer.set_client_state(g_t, v_t, t)
        if out is not None and out.rebase_plan is not None:
            plan = RebasePlan.from_list(out.rebase_plan.to_list())
            assert client.set_rebase_plan(plan, t) == ''
        if plan is not None:
            a, b = servicer.adm.state, client.rule.state
            apart.append(max(np.abs(a.pose_nominal_in_orbit.homogeneous - b.pose_nominal_in_orbit.homogeneous).max(),
                             np.abs(a.twist_nominal_body - b.twist_nominal_body).max()))
    assert plan is not None and plan.t_start == pytest.approx(0.1 + 0.1 + 0.05 + 0.5 * DT, abs=1.5 * DT)
    assert servicer.follower.side.done and client.rebase.side.done
    moved = np.abs(servicer.adm.state.twist_nominal_body - v_n0).max()
    print(f'\nV_n moved by {moved:.3g}; the two nominals apart by at most {max(apart):.1e}')
    assert moved > 3e-3 and max(apart) < 1e-9
    off = np.abs(control.rule.state.twist_nominal_body - servicer.adm.state.twist_nominal_body).max()
    assert off > 0.5 * moved


def test_a_rebase_plan_made_at_a_refused_tick_is_handed_out_with_the_next_output(monkeypatch):
    """The plan is made once; if that tick's steps are refused (the model refuses the joint angles) the
    plan must still reach an output, or the client's node never gets it and the nominals part."""
    from hil_dynamics.rebase import RebaseParams, RebaseSchedule

    side = _side(max_catch_up=20, epoch_s=0.0, rebase=RebaseSchedule(RebaseParams(True, 0.0, 0.1), lead_s=0.05))
    side.set_joints(Q0, np.zeros(7), DT, DT)
    side.set_phase('post_grasp', DT)
    side.set_client_state(pin.SE3.Identity(), TWIST_N0, DT)
    assert side.tick(2 * DT) is None                       # the first tick starts the step grid
    import hil_admittance.servicer_side as servicer_side

    def refused(*args, **kwargs):
        raise InputError('joint angles refused')
    monkeypatch.setattr(servicer_side, 'port_step', refused)                # this tick's step fails
    assert side.tick(3 * DT) is None and side.rebase.plan is not None and side.rejected == 1
    monkeypatch.undo()                                                      # the side's own step again
    out = side.tick(4 * DT)
    assert out is not None and out.rebase_plan is side.rebase.plan
    assert side.tick(5 * DT).rebase_plan is None           # handed out once
