"""Servicer admittance and OBSW controller nodes over DDS (loopback), started as executables.

The test node plays the rest of the graph: it publishes the Eq. (23) states and the arm's
joints, or acts as a replacement controller in the OBSW slot.
"""

import time

import numpy as np
import pinocchio as pin
import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray, String

from hil_admittance.obsw import ObswController
from hil_common.conversions import pose_from_msg, pose_to_msg, twist_from_msg, twist_to_msg, wrench_to_msg
from hil_common.ros_testing import (STALL_THRESHOLDS, spin_until, stall_node, start_node, stop_process, test_node,
                                    throttle_node)
from hil_dynamics.models import servicer_lbr_urdf
from hil_dynamics.servicer import ServicerModel

LATCHED = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
URDF = servicer_lbr_urdf()
Q0 = [0.0, 0.4, 0.0, -1.6, 0.0, -1.5, 0.0]
BASE_IN_CLIENT = pin.SE3(pin.rpy.rpyToMatrix(0.0, np.pi / 2, 0.0), np.array([-4.8, -0.2, 1.1]))
TWIST_CLIENT = np.array([0.0, 0.0, 0.0, 0.0, np.deg2rad(-2.5), 0.0])
JOINTS = [f'lbr_joint_{i}' for i in range(1, 8)]
NOMINAL = {'nominal_mass_kg': 7828.0, 'nominal_inertia_com_kgm2': [17023.0, 0.0, 0.0, 0.0, 129112.0, 0.0, 0.0, 0.0, 124826.0],
           'twist_nominal_body_0': [float(v) for v in TWIST_CLIENT]}     # Envisat, as the scenario gives them


def stamp_s(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def params_file(tmp_path, name, values):
    path = tmp_path / f'{name}.yaml'
    path.write_text(yaml.safe_dump({'/**': {'ros__parameters': values}}))
    return ('--params-file', str(path))


def joint_state(node, q, dq=None):
    msg = JointState()
    msg.header.stamp = node.get_clock().now().to_msg()
    msg.name = JOINTS
    msg.position = [float(v) for v in q]
    msg.velocity = [0.0] * 7 if dq is None else [float(v) for v in dq]
    return msg


def odometry(node, pose, twist):
    msg = Odometry()
    msg.header.stamp = node.get_clock().now().to_msg()
    pose_to_msg(pose, msg.pose.pose)
    twist_to_msg(twist, msg.twist.twist)
    return msg


def feed_obsw(node, q):
    """Publish what the OBSW reads at 100 Hz: the client spinning, the base co-moving at its set point, the arm at ``q``."""
    pubs = [node.create_publisher(Odometry, 'client/state', 10), node.create_publisher(Odometry, 'servicer/state', 10),
            node.create_publisher(JointState, 'servicer_arm/joint_states', 10)]
    g_t = pin.SE3.Identity()
    g_b = g_t * BASE_IN_CLIENT
    v_b = g_b.actInv(g_t).act(pin.Motion(TWIST_CLIENT)).vector

    def feed():
        pubs[0].publish(odometry(node, g_t, TWIST_CLIENT))
        pubs[1].publish(odometry(node, g_b, v_b))
        pubs[2].publish(joint_state(node, q))
    return node.create_timer(0.01, feed)


def test_obsw_node_goes_through_the_phases(tmp_path):
    """Synthetic on-board states with the tool on the fixture: sync -> approach -> grasp -> post_grasp."""
    model = ServicerModel(URDF, 'lbr_flange')
    rule = ObswController(model, pin.SE3(np.eye(3), np.array([0, 0, 0.15])), pin.SE3(np.eye(3), np.array([-2.9, 0, 0])),
                          pin.SE3(pin.rpy.rpyToMatrix(0, np.pi / 2, 0), np.zeros(3)), BASE_IN_CLIENT, Q0)
    q_grasp = rule.joint_angles_for_tool(BASE_IN_CLIENT.actInv(rule.pose_target_in_client), Q0)
    proc = start_node('hil_admittance', 'obsw_controller_node', ros_args=params_file(tmp_path, 'obsw', {
        'urdf_xml': URDF, 'rate_hz': 200.0, 'gains.sync_duration_s': 1.0, 'gains.approach_duration_s': 1.0,
        'gains.grasp_settle_s': 0.5}))
    try:
        with test_node('obsw_probe') as (node, executor):
            phases, wrenches, grips = [], [], []
            node.create_subscription(String, 'obsw/phase', lambda m: phases.append(m.data), LATCHED)
            node.create_subscription(WrenchStamped, 'servicer/base_wrench_cmd', lambda m: wrenches.append(
                (list(phases), m.wrench.force.x, m.wrench.force.y, m.wrench.force.z)), 10)
            node.create_subscription(Bool, 'servicer/gripper_cmd', lambda m: grips.append(m.data), 10)
            feed_obsw(node, q_grasp)
            assert spin_until(executor, lambda: 'post_grasp' in phases, 30.0), f'phases seen: {phases}'
            assert phases == ['sync', 'approach', 'grasp', 'post_grasp']
            n = len(wrenches)
            assert spin_until(executor, lambda: len(wrenches) > n + 20, 5.0)
            assert wrenches[-1][1:] == (0.0, 0.0, 0.0)          # thrusters off after the grasp
            sync = [w for w in wrenches if w[0] == ['sync']]
            assert sync and any(abs(w[3]) > 1.0 for w in sync)     # co-rotation needs a centripetal force
            assert grips and grips[-1] is True
        alive = proc.poll() is None           # no crash during the run (shutdown races are not judged)
    finally:
        out = stop_process(proc)
    assert alive, out



def test_obsw_node_reads_its_inputs_at_its_ticks_falls_silent_when_one_stops_and_resumes(tmp_path):
    """The OBSW takes its inputs at each tick, newest value only (no wake-up per message): an input that stops
    arriving is judged stale on its last tick's receipt time, and the node commands zero until it comes back."""
    proc = start_node('hil_admittance', 'obsw_controller_node', ros_args=params_file(tmp_path, 'obsw', {
        'urdf_xml': URDF, 'rate_hz': 200.0, 'input_timeout_s': 0.1, 'gains.sync_duration_s': 600.0}))
    try:
        with test_node('obsw_probe') as (node, executor):
            wrenches = []        # (time received, |F_b|)
            node.create_subscription(WrenchStamped, 'servicer/base_wrench_cmd', lambda m: wrenches.append(
                (time.monotonic(), float(np.linalg.norm([m.wrench.force.x, m.wrench.force.y, m.wrench.force.z])))), 100)
            pubs = [node.create_publisher(Odometry, 'client/state', 10),
                    node.create_publisher(Odometry, 'servicer/state', 10),
                    node.create_publisher(JointState, 'servicer_arm/joint_states', 10)]
            g_b = BASE_IN_CLIENT
            v_b = g_b.actInv(pin.SE3.Identity()).act(pin.Motion(TWIST_CLIENT)).vector
            feeding = {'joints': True}

            def feed():
                pubs[0].publish(odometry(node, pin.SE3.Identity(), TWIST_CLIENT))
                pubs[1].publish(odometry(node, g_b, v_b))
                if feeding['joints']:
                    pubs[2].publish(joint_state(node, Q0))
            node.create_timer(0.01, feed)

            def commanding():      # the co-rotation of the sync phase needs a centripetal force
                return bool(wrenches) and wrenches[-1][1] > 1.0
            assert spin_until(executor, commanding, 20.0), 'no OBSW output during sync'
            feeding['joints'] = False
            stopped = time.monotonic()
            assert spin_until(executor, lambda: wrenches[-1][1] == 0.0 and wrenches[-1][0] > stopped, 5.0), \
                'the OBSW kept commanding without joint states'
            silent_after = next(t for t, f in wrenches if t > stopped and f == 0.0) - stopped
            # stale after input_timeout_s (0.1 s) on the tick's receipt time: one tick (5 ms) and the last
            # message's delivery later, plus this busy machine's scheduling
            assert silent_after >= 0.1 - 0.02, silent_after
            feeding['joints'] = True
            resumed = time.monotonic()
            assert spin_until(executor, lambda: commanding() and wrenches[-1][0] > resumed, 5.0), \
                'the OBSW did not resume when the joint states came back'
        alive = proc.poll() is None
    finally:
        out = stop_process(proc)
    assert alive, out

def test_servicer_node_follows_a_replacement_controller_and_holds_on_a_sensor_fault(tmp_path):
    """The OBSW slot is any publisher of F_b/tau; a latched wrist F/T fault freezes the table command."""
    proc = start_node('hil_admittance', 'servicer_admittance_node', ros_args=params_file(tmp_path, 'servicer', {
        'urdf_xml': URDF, 'pose_base_in_nominal_0_xyz_rpy': [-4.8, -0.2, 1.1, 0.0, float(np.pi / 2), 0.0],
        **NOMINAL, 'rate_hz': 500.0, 'input_timeout_s': 0.2,
        # on a busy machine the node runs late: it must integrate every step (F_b's momentum is checked), and its
        # overload hold (tested on its own below) would co-move the base with the nominal meanwhile
        'overload_policy': 'off', 'max_catch_up': 1000}))
    try:
        with test_node('servicer_probe') as (node, executor):
            states, poses, twists, efforts = [], [], [], []
            node.create_subscription(Odometry, 'servicer/state', lambda m: states.append(m), 50)
            # by stamp: on a busy machine this process takes the two topics' queues in any order
            node.create_subscription(PoseStamped, 'servicer/table/pose_cmd',
                                     lambda m: poses.append((stamp_s(m), pose_from_msg(m.pose))), 50)
            node.create_subscription(TwistStamped, 'servicer/table/twist_cmd',
                                     lambda m: twists.append((stamp_s(m), twist_from_msg(m.twist))), 50)
            node.create_subscription(Float64MultiArray, 'servicer_arm/forward_effort_controller/commands',
                                     lambda m: efforts.append(np.array(m.data)), 50)
            passivity = []
            node.create_subscription(Float64MultiArray, 'servicer/passivity', lambda m: passivity.append(list(m.data)), 50)
            pub_js = node.create_publisher(JointState, 'servicer_arm/joint_states', 10)
            pub_fb = node.create_publisher(WrenchStamped, 'servicer/base_wrench_cmd', 10)
            pub_fault = node.create_publisher(DiagnosticStatus, 'servicer/ft/fault', LATCHED)
            force_base = np.array([40.0, 0.0, 0.0, 0.0, 0.0, 0.0])

            def replacement_controller():          # the user's controller in the OBSW slot
                pub_js.publish(joint_state(node, Q0))
                msg = WrenchStamped()
                wrench_to_msg(force_base, msg.wrench)
                pub_fb.publish(msg)
            node.create_timer(0.005, replacement_controller)
            assert spin_until(executor, lambda: len(states) > 200, 20.0), 'no servicer/state'
            # F_b along base +x pushes the servicer's momentum along the base x axis in orbit.
            model = ServicerModel(URDF, 'lbr_flange')
            mass = model.mass_matrix(np.array(Q0))[:6, :6]

            def momentum(msg):
                g_b = pose_from_msg(msg.pose.pose)
                return g_b, g_b.act(pin.Force(mass @ twist_from_msg(msg.twist.twist))).vector
            g_0, p_0 = momentum(states[10])
            g_1, p_1 = momentum(states[-1])
            dp = p_1[:3] - p_0[:3]
            direction = (g_0.rotation[:, 0] + g_1.rotation[:, 0]) / 2
            assert dp @ direction / np.linalg.norm(dp) > 0.99
            # Coasting part: without F_b the centripetal-free servicer would keep its momentum.
            assert np.linalg.norm(dp) > 1.0
            assert np.all(np.isfinite(efforts[-1])) and efforts[-1].shape == (7,)
            # The passivity observer of the table port: no wrist wrench, so no port energy (F_b is
            # the OBSW's, not the environment's), and observe-only by default.
            assert passivity and all(len(v) == 5 and np.all(np.isfinite(v)) for v in passivity)
            assert passivity[-1][1] == 0.0 and passivity[-1][3] == 0.0 and passivity[-1][4] == 0.0

            # Wrist F/T fault latched: the table command stops and the arm only gets gravity compensation.
            fault = DiagnosticStatus(level=DiagnosticStatus.ERROR, name='servicer_ft', message='overload')
            pub_fault.publish(fault)
            assert spin_until(executor, lambda: len(twists) > 5 and np.all(twists[-1][1] == 0.0), 5.0)
            t_hold = twists[-1][0]          # a command of the hold (the pose and twist of a step share a stamp)
            assert spin_until(executor, lambda: sum(t >= t_hold for t, _ in poses) > 100, 5.0)
            held = [p for t, p in poses if t >= t_hold]
            assert all(np.allclose(p.homogeneous, held[0].homogeneous, atol=0.0) for p in held)
            gravity = efforts[-1]
            assert np.linalg.norm(gravity) > 1.0
            # Fault reset: the command moves again.
            pub_fault.publish(DiagnosticStatus(level=DiagnosticStatus.OK, name='servicer_ft', message='reset'))
            n = len(poses)
            assert spin_until(executor, lambda: len(poses) > n + 50, 5.0)
            assert not np.allclose(poses[-1][1].homogeneous, held[0].homogeneous)
        alive = proc.poll() is None           # no crash during the run (shutdown races are not judged)
    finally:
        out = stop_process(proc)
    assert alive, out


def drive_servicer_node(node, executor):
    """Play the servicer admittance node's inputs (the arm's joints, a 40 N base wrench at 200 Hz) and
    collect its overload statuses ``(level, message, values)`` and table twists ``(statuses seen, twist)``;
    returns both lists once it runs and does not hold."""
    statuses, twists = [], []

    def on_status(m):
        statuses.append((int.from_bytes(m.level, 'little'), m.message, {kv.key: kv.value for kv in m.values}))
    node.create_subscription(DiagnosticStatus, 'servicer/admittance/status', on_status, 50)
    node.create_subscription(TwistStamped, 'servicer/table/twist_cmd',
                             lambda m: twists.append((len(statuses), twist_from_msg(m.twist))), 50)
    pub_js = node.create_publisher(JointState, 'servicer_arm/joint_states', 10)
    pub_fb = node.create_publisher(WrenchStamped, 'servicer/base_wrench_cmd', 10)

    def controller():
        pub_js.publish(joint_state(node, Q0))
        msg = WrenchStamped()
        wrench_to_msg(np.array([40.0, 0.0, 0.0, 0.0, 0.0, 0.0]), msg.wrench)
        pub_fb.publish(msg)
    node.create_timer(0.005, controller)
    assert spin_until(executor, lambda: len(twists) > 100 and statuses and statuses[-1][2]['holding'] == 'false'
                      and np.linalg.norm(twists[-1][1]) > 0.0, 20.0), 'no servicer output, or holding'
    return statuses, twists


def test_servicer_node_holds_while_it_cannot_keep_up_and_resumes_on_its_own(tmp_path):
    """What a saturated machine does to a node, done to the real node: its process is stopped for
    0.6 s (SIGSTOP), twice its ``overload_hold_late_s``. When it runs again the steps
    it missed are beyond its catch-up, so it holds (``servicer/admittance/status`` ERROR
    'overloaded, holding', the table twist command zero) and, after ``overload_recover_after_s``
    on time, resumes by itself (holding false, the table moving under F_b again)."""
    from std_srvs.srv import Trigger

    proc = start_node('hil_admittance', 'servicer_admittance_node', ros_args=params_file(tmp_path, 'servicer', {
        'urdf_xml': URDF, **NOMINAL, 'rate_hz': 200.0, 'input_timeout_s': 0.2, 'overload_recover_after_s': 1.0,
        'max_catch_up': 40, **STALL_THRESHOLDS}))
    try:
        with test_node('overload_probe') as (node, executor):
            statuses, twists = drive_servicer_node(node, executor)

            level, message, values = stall_node(proc, executor, statuses)
            assert message.startswith('overloaded, holding') and values['holding'] == 'true', message
            assert int(values['dropped_steps']) >= 60           # 0.6 s at 200 Hz, less 40 caught up
            n = len(twists)
            assert spin_until(executor, lambda: len(twists) > n + 20, 5.0)
            held = [v for k, v in twists[n:] if statuses[k - 1][2]['holding'] == 'true']
            assert held and all(np.all(v == 0.0) for v in held)
            assert spin_until(executor, lambda: statuses[-1][2]['holding'] == 'false', 10.0), statuses[-1]
            n = len(twists)
            assert spin_until(executor, lambda: len(twists) > n + 20, 5.0)
            assert np.linalg.norm(twists[-1][1]) > 0.0
            # The reset service answers (the latch policy's way out; nothing to clear here).
            client = node.create_client(Trigger, 'servicer/admittance/reset')
            assert client.wait_for_service(timeout_sec=5.0)
            future = client.call_async(Trigger.Request())
            assert spin_until(executor, future.done, 5.0) and future.result().success
        alive = proc.poll() is None
    finally:
        out = stop_process(proc)
    assert alive, out


def test_servicer_node_steadily_late_below_the_hold_threshold_holds_and_resumes_on_its_own(tmp_path):
    """A machine busy with other work (issue 15, what was only reported): the real node gets no CPU for
    0.2 s of every 0.25 s for 4 s. No tick is as late as its 0.5 s ``overload_hold_late_s`` and nothing
    is dropped (``max_catch_up`` 1 s), but its steps run on average about 80 ms late (a 200 Hz burst
    late by 195 ms down to 0, then 50 ms on time: 78 ms), beyond its 50 ms ``overload_mean_late_s``. It
    holds with the reason 'steadily late' (the table twist command zero) and, once it runs on time
    again, resumes by itself. Before the mean check it only reported 'degraded'.

    A run in which the machine itself stalled the node beyond that premise (a tick 0.5 s late or a step dropped,
    seen once in the suite beside two busy loops: 'holding: 2 steps dropped') says nothing of the mean check: it
    is run again with a new node, at most three times in all."""
    premise = []
    for attempt in range(3):
        run_dir = tmp_path / f'run{attempt}'
        run_dir.mkdir()
        if _steadily_late_run(run_dir, premise):
            return
    pytest.fail(f'the machine stalled the node beyond the test\'s premise in all three runs: {premise}')


def _steadily_late_run(tmp_path, premise: list) -> bool:
    """One run of the test above: True when it held as the test requires, False (its status appended to
    ``premise``) when the throttled node ran later than the premise allows; fails the test otherwise."""
    proc = start_node('hil_admittance', 'servicer_admittance_node', ros_args=params_file(tmp_path, 'servicer', {
        'urdf_xml': URDF, **NOMINAL, 'rate_hz': 200.0, 'input_timeout_s': 1.0, 'overload_recover_after_s': 1.0,
        'max_catch_up': 200, 'overload_warn_late_s': 0.1, 'overload_hold_late_s': 0.5,
        'overload_mean_late_s': 0.05, 'overload_window_s': 1.0}))
    try:
        with test_node('steady_lateness_probe') as (node, executor):
            statuses, twists = drive_servicer_node(node, executor)

            n_status, n_twist = len(statuses), len(twists)
            duty = throttle_node(proc, 0.2, 0.05, 4.0)
            assert spin_until(executor, lambda: any(s[0] == 2 for s in statuses[n_status:]), 8.0), statuses[-3:]
            level, message, values = next(s for s in statuses[n_status:] if s[0] == 2)
            while duty.is_alive():          # the node runs freely again when it ends
                executor.spin_once(timeout_sec=0.02)
            if values['dropped_steps'] != '0' or float(values['max_late_ms']) >= 500.0:
                premise.append((message, values))
                return False
            assert message.startswith('overloaded, holding: steadily late'), message
            held = [v for k, v in twists[n_twist:] if k > 0 and statuses[k - 1][2]['holding'] == 'true']
            assert held and all(np.all(v == 0.0) for v in held)
            assert spin_until(executor, lambda: statuses[-1][2]['holding'] == 'false', 10.0), statuses[-1]
            n = len(twists)
            assert spin_until(executor, lambda: len(twists) > n + 20, 5.0)
            assert np.linalg.norm(twists[-1][1]) > 0.0
        alive = proc.poll() is None
    finally:
        out = stop_process(proc)
    assert alive, out
    return True


def test_obsw_node_falls_silent_while_it_cannot_keep_up_and_resumes_on_its_own(tmp_path):
    """The OBSW node stopped for 0.6 s (SIGSTOP), twice its ``overload_hold_late_s``: it acts
    on nothing that old (``obsw/status`` ERROR 'overloaded, holding', F_b zero), and after
    ``overload_recover_after_s`` on time it commands the synchronisation again by itself."""

    proc = start_node('hil_admittance', 'obsw_controller_node', ros_args=params_file(tmp_path, 'obsw', {
        'urdf_xml': URDF, 'rate_hz': 100.0, 'input_timeout_s': 0.2, 'overload_recover_after_s': 1.0,
        **STALL_THRESHOLDS}))
    try:
        with test_node('obsw_overload_probe') as (node, executor):
            statuses, wrenches = [], []

            def on_status(m):
                statuses.append((int.from_bytes(m.level, 'little'), m.message, {kv.key: kv.value for kv in m.values}))
            node.create_subscription(DiagnosticStatus, 'obsw/status', on_status, 50)
            node.create_subscription(WrenchStamped, 'servicer/base_wrench_cmd', lambda m: wrenches.append(
                (len(statuses), np.array([m.wrench.force.x, m.wrench.force.y, m.wrench.force.z]))), 50)
            feed_obsw(node, Q0)
            assert spin_until(executor, lambda: len(wrenches) > 50 and statuses and statuses[-1][2]['holding'] == 'false'
                              and np.linalg.norm(wrenches[-1][1]) > 1.0, 20.0), 'no OBSW output, or silent'

            assert stall_node(proc, executor, statuses)[1].startswith('overloaded, holding')
            n = len(wrenches)
            assert spin_until(executor, lambda: len(wrenches) > n + 20, 5.0)
            held = [f for k, f in wrenches[n:] if statuses[k - 1][2]['holding'] == 'true']
            assert held and all(not f.any() for f in held)
            assert spin_until(executor, lambda: statuses[-1][2]['holding'] == 'false', 10.0), statuses[-1]
            n = len(wrenches)
            assert spin_until(executor, lambda: len(wrenches) > n + 20, 5.0)
            assert np.linalg.norm(wrenches[-1][1]) > 1.0
        alive = proc.poll() is None
    finally:
        out = stop_process(proc)
    assert alive, out


@pytest.mark.parametrize('executable, bad, name', [
    ('servicer_admittance_node', {'urdf_xml': '<robot name="x"/>', **NOMINAL}, 'urdf_xml'),
    ('servicer_admittance_node', {'urdf_xml': URDF, 'ee_frame': 'lbr_flang', **NOMINAL}, 'ee_frame'),   # not urdf_xml
    ('servicer_admittance_node', {'urdf_xml': URDF}, 'nominal_mass_kg'),   # from the scenario, no default
    ('servicer_admittance_node', {'urdf_xml': URDF, **NOMINAL, 'mission_epoch_s': -2.0}, 'mission_epoch_s'),
    ('obsw_controller_node', {'urdf_xml': URDF, 'gains.base_stiffness': [1.0, 2.0]}, 'gains.base_stiffness'),
    ('obsw_controller_node', {'urdf_xml': URDF, 'q_hold': [0.0, 0.1]}, 'q_hold'),
])
def test_bad_parameters_name_themselves(tmp_path, executable, bad, name):
    proc = start_node('hil_admittance', executable, ros_args=params_file(tmp_path, executable, bad))
    try:
        code = proc.wait(timeout=30)
    finally:
        out = stop_process(proc)
    assert code == 2, out
    assert f"'{name}'" in out, out
