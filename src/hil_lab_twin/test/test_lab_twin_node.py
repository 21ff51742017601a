"""The lab-twin node over real rclpy/DDS (loopback-only profile, own domain) and RDT/UDP on 127.0.0.1.

The node runs as its installed executable (where launch_ros finds it) with the client
UR10e table and the servicer robot carrying the torque-controlled arm.
"""

import math

import numpy as np
import pytest
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from hil_common.conversions import seconds_to_stamp
from hil_common.ros_testing import spin_until, start_node, stop_process
from hil_sensors.ft_driver import FtDriver, check_parameters

def test_twin_node_interfaces(ros, read_ft_driver, free_udp_port):
    node, executor = ros
    port = free_udp_port
    proc = start_node('hil_lab_twin', 'lab_twin_node', 'with_servicer:=true', 'publish_wrench:=false',
                      f'rdt_ports:=["client_ft:{port}"]', 'ft_noise_force_n:=0.0', 'ft_noise_torque_nm:=0.0')
    states = {}
    for ns in ('client', 'servicer', 'servicer_arm'):
        node.create_subscription(JointState, f'/{ns}/joint_states', lambda m, ns=ns: states.__setitem__(ns, m), 10)
    pub_pos = node.create_publisher(Float64MultiArray, '/client/forward_position_controller/commands', 10)
    pub_traj = node.create_publisher(JointTrajectory, '/servicer/joint_trajectory_controller/joint_trajectory', 10)
    pub_eff = node.create_publisher(Float64MultiArray, '/servicer_arm/forward_effort_controller/commands', 10)
    pub_push = node.create_publisher(WrenchStamped, '/client/payload/push', 10)
    try:
        assert spin_until(executor, lambda: len(states) == 3 and pub_pos.get_subscription_count() > 0
                          and pub_eff.get_subscription_count() > 0 and pub_traj.get_subscription_count() > 0
                          and pub_push.get_subscription_count() > 0, 30.0)
        assert list(states['client'].name)[0] == 'shoulder_pan_joint' and len(states['servicer_arm'].name) == 7
        q0 = np.array(states['client'].position)

        # F/T over RDT/UDP read by the real driver: the hanging client mock-up's weight
        driver = FtDriver(check_parameters({'sensor_port': port, 'sensor_rate_hz': 1000.0, 'low_pass.enabled': False,
                                            'software_bias.enabled': False}))
        assert read_ft_driver(driver, 50, 10.0, idle=lambda: executor.spin_once(timeout_sec=0.0)) >= 50
        weight = np.array(driver.newest.raw[:3])
        assert np.linalg.norm(weight) == pytest.approx((4.0 + 1.5 + 0.2) * 9.81, rel=1e-3)
        # a horizontal 20 N push on the mock-up adds 20 N perpendicular to the weight
        push = WrenchStamped()
        push.wrench.force.y = 20.0
        pub_push.publish(push)
        spin_until(executor, lambda: False, 1.0)
        assert read_ft_driver(driver, 50, 10.0, idle=lambda: executor.spin_once(timeout_sec=0.0)) >= 50
        change = np.array(driver.newest.raw[:3]) - weight
        assert np.linalg.norm(change) == pytest.approx(20.0, abs=0.05)
        assert abs(np.dot(change, weight)) < 0.05 * np.linalg.norm(weight)
        pub_push.publish(WrenchStamped())  # release

        # wrong length and non-finite commands are rejected: nothing moves
        pub_pos.publish(Float64MultiArray(data=list(q0[:5])))
        pub_pos.publish(Float64MultiArray(data=list(q0[:5]) + [math.nan]))
        spin_until(executor, lambda: False, 0.5)
        np.testing.assert_allclose(states["client"].position, q0, atol=1e-6)
        # a valid command is followed
        goal = q0 + 0.05
        pub_pos.publish(Float64MultiArray(data=list(goal)))
        assert spin_until(executor, lambda: np.allclose(states['client'].position, goal, atol=1e-4), 10.0)

        # servicer robot: a streamed trajectory point; joints given in another order
        names = list(states['servicer'].name)
        s0 = np.array(states['servicer'].position)
        target = s0 + np.array([0.02, -0.02, 0.02, 0.0, 0.02, 0.0])
        msg = JointTrajectory(joint_names=names[::-1])
        point = JointTrajectoryPoint(positions=list(target[::-1]))
        seconds_to_stamp(0.2, point.time_from_start)
        msg.points = [point]
        pub_traj.publish(msg)
        assert spin_until(executor, lambda: np.allclose(states['servicer'].position, target, atol=1e-4), 10.0)

        # torque arm: an effort on joint 1 (gravity is compensated as in the arm's torque mode) turns it
        a0 = np.array(states['servicer_arm'].position)
        pub_eff.publish(Float64MultiArray(data=[5.0, 0, 0, 0, 0, 0, 0]))
        assert spin_until(executor, lambda: states['servicer_arm'].position[0] > a0[0] + 0.05, 10.0)
        pub_eff.publish(Float64MultiArray(data=[0.0] * 6))  # wrong length: rejected, the effort stays
        spin_until(executor, lambda: False, 0.3)
        assert states['servicer_arm'].effort[0] == pytest.approx(5.0)
    finally:
        out = stop_process(proc)
    assert 'command rejected' in out


def test_on_its_simulated_clock_the_twin_waits_at_the_start_pace_until_a_commander_keeps_pace(ros):
    """``start_real_time_factor`` (the Envisat graph's twin): a node that has created its robot's command publisher
    but not commanded yet (its start-up, held up on a busy machine) finds the twin stepping at most that fast, so the
    simulated time it must catch up is that small; once the robot has been commanded in a few steps in a row the twin
    steps as the stack answers. The simulated time is read from ``/clock`` against this process's wall time: a busy machine can only
    lower the ratio, and the start pace is an upper bound."""
    import time

    from diagnostic_msgs.msg import DiagnosticStatus
    from rosgraph_msgs.msg import Clock

    node, executor = ros
    proc = start_node('hil_lab_twin', 'lab_twin_node', 'tables:=["client:ur10e"]', 'publish_wrench:=false',
                      'clock:=simulated', 'start_real_time_factor:=0.05', 'barrier_timeout_s:=10.0')
    clock, status, joints = [], {}, {}
    node.create_subscription(Clock, '/clock', lambda m: clock.append(
        (time.monotonic(), m.clock.sec + 1e-9 * m.clock.nanosec)), 1000)
    node.create_subscription(DiagnosticStatus, '/lab_twin/status', lambda m: status.update(
        {kv.key: kv.value for kv in m.values}), 10)
    node.create_subscription(JointState, '/client/joint_states', lambda m: joints.__setitem__('q', list(m.position)), 10)

    def sim_rate(seconds):
        """Simulated seconds per wall second over the next ``seconds`` of wall time (from /clock)."""
        n = len(clock)
        spin_until(executor, lambda: False, seconds)
        (w0, t0), (w1, t1) = clock[n - 1], clock[-1]
        return (t1 - t0) / (w1 - w0) if w1 > w0 else 0.0

    try:
        assert spin_until(executor, lambda: len(clock) > 50 and 'q' in joints and 'starting' in status, 30.0), \
            (proc.poll(), len(clock), status)
        alone = sim_rate(1.0)                   # no commander: the twin's usual pace (at most 1x)
        pub = node.create_publisher(Float64MultiArray, '/client/forward_position_controller/commands', 10)
        assert spin_until(executor, lambda: status.get('starting') == 'client', 10.0), status
        starting = sim_rate(2.0)                # its commander is there, silent: the start pace
        assert 0.0 < starting <= 0.05 * 1.1 + 0.004 / 2.0, (starting, alone)

        def answer(_):                          # from here one command per step, as a table node answers
            pub.publish(Float64MultiArray(data=joints['q']))
        node.create_subscription(Clock, '/clock', answer, 10)
        answer(None)
        assert spin_until(executor, lambda: status.get('starting') == '', 10.0), status
        answered = sim_rate(1.5)
        print(f'\nsimulated s per wall s: alone {alone:.3f}, its commander silent {starting:.3f}, answered {answered:.3f}')
        assert answered > 3.0 * 0.05, (alone, starting, answered)
        assert status.get('misses.client', '0') == '0', status
    finally:
        out = stop_process(proc)
    assert 'client: its commander appeared' in out, out[-2000:]
