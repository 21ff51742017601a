"""The docking facility node over real rclpy/DDS (loopback-only profile, own domain)."""

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped, WrenchStamped

from hil_common.ros_testing import spin_until, start_node, stop_process, test_node
from hil_docking.cw import CWModel, two_impulse_transfer
from hil_docking.scenario import load_docking_scenario


@pytest.fixture
def ros():
    with test_node('test_hil_docking') as pair:
        yield pair


def ideal_robot(node, delay_ns: int = 0) -> list:
    """Play the facility's ideal robot: every command comes back as the measured pose ``delay_ns`` later
    (stamped then), with no contact force. Returns the list the commands are appended to, as
    ``(stamp [s], position (3,))``."""
    commands = []
    pose_pub = node.create_publisher(PoseStamped, 'facility/robot_pose_lvlh', 10)
    wrench_pub = node.create_publisher(WrenchStamped, 'facility/ft/wrench', 10)

    def on_command(msg):
        p = msg.pose.position
        commands.append((msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9, np.array([p.x, p.y, p.z])))
        ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec + delay_ns
        msg.header.stamp.sec, msg.header.stamp.nanosec = ns // 1_000_000_000, ns % 1_000_000_000
        wrench = WrenchStamped()
        wrench.header = msg.header
        pose_pub.publish(msg)
        wrench_pub.publish(wrench)
    node.create_subscription(PoseStamped, 'chaser/pose_cmd', on_command, 10)
    return commands


def test_node_flies_the_cw_approach_with_the_robot_in_the_loop(ros):
    """The test plays an ideal robot: it feeds every command back as the measured pose, stamped the
    loop delay later (the node's simulated timeline), with no contact force. Every command must lie on the CW transfer arc (one per tick, t = k dt) and
    the chaser must advance along it."""
    node, executor = ros
    sc = load_docking_scenario()
    cw = CWModel.at_altitude(sc.altitude_m)
    transfer = two_impulse_transfer(cw, sc.start_lvlh_m, np.zeros(3), sc.approach_duration_s,
                                    vf=sc.closing_speed_m_s * sc.docking_axis_lvlh)
    n = int(round(sc.approach_duration_s / sc.control_period_s))
    arc = np.array([transfer.state_at(cw, k * sc.control_period_s)[0:3] for k in range(n + 1)])
    delay_ns = int(round(sc.loop_delay_s * 1e9))
    proc = start_node('hil_docking', 'docking_facility_node', 'pose_timeout_s:=1.0')
    try:
        commands = ideal_robot(node, delay_ns)
        assert spin_until(executor, lambda: len(commands) > 0, 30.0), 'no command from the node'
        assert spin_until(executor, lambda: np.linalg.norm(commands[-1][1] - sc.start_lvlh_m) > 0.005, 60.0), \
            'the chaser does not advance'
    finally:
        out = stop_process(proc)
    got = np.array([c for _, c in commands])
    on_arc = got[np.linalg.norm(got - sc.start_lvlh_m, axis=1) < np.linalg.norm(sc.start_lvlh_m)]
    distance = np.min(np.linalg.norm(on_arc[:, None, :] - arc[None, :, :], axis=2), axis=1)
    assert distance.max() < 1e-9, out
    assert 'm_min' in out


@pytest.mark.parametrize('param, words', [('compensation:=magic', ('compensation',)),
                                          ('command_consumers:=[motion_table]', ('command_consumers', 'fully qualified'))])
def test_node_refuses_a_bad_parameter_naming_it(param, words):
    proc = start_node('hil_docking', 'docking_facility_node', param)
    try:
        proc.wait(timeout=30.0)
    finally:
        out = stop_process(proc)
    assert proc.returncode != 0
    assert all(w in out for w in words), out


def test_node_starts_only_once_its_robot_side_listens(ros):
    """``command_consumers``: a recorder or an observer listening is not the robot. The node holds its
    start (every command the start position) while the named robot node has not
    subscribed, however many others listen, and flies once it has."""
    import rclpy

    node, executor = ros
    sc = load_docking_scenario()
    proc = start_node('hil_docking', 'docking_facility_node', 'pose_timeout_s:=1.0',
                      'command_consumers:=[/late_robot]')
    robot = None
    try:
        commands = ideal_robot(node)
        node.create_subscription(PoseStamped, 'chaser/pose_cmd', lambda msg: None, 10)   # a second listener
        assert spin_until(executor, lambda: len(commands) >= 200, 60.0), 'no commands from the node'
        held = list(commands)
        assert all(np.array_equal(c, sc.start_lvlh_m) for _, c in held), 'it moved without its robot'
        n_before = len(commands)
        robot = rclpy.create_node('late_robot', context=node.context)
        robot.create_subscription(PoseStamped, 'chaser/pose_cmd', lambda msg: None, 10)
        executor.add_node(robot)
        assert spin_until(executor, lambda: np.linalg.norm(commands[-1][1] - sc.start_lvlh_m) > 1e-4, 60.0), \
            'the chaser does not advance once its robot listens'
    finally:
        out = stop_process(proc)
        if robot is not None:
            executor.remove_node(robot)
            robot.destroy_node()
    assert 'waiting for /late_robot' in out, out
    assert len(commands) > n_before


def test_node_starts_only_once_its_robot_side_answers_its_commands(ros):
    """``robot_answer_topic``: the robot listening is not enough; the node holds its start until the robot
    side answers a command of this node (the motion table's tracking error: realised up to a stamp at
    or after the first command). An answer for an earlier time does not count."""
    from std_msgs.msg import Float64MultiArray

    node, executor = ros
    sc = load_docking_scenario()
    proc = start_node('hil_docking', 'docking_facility_node', 'pose_timeout_s:=1.0', 'robot_answer_topic:=/answer')
    try:
        commands = ideal_robot(node)
        answer_pub = node.create_publisher(Float64MultiArray, '/answer', 10)
        assert spin_until(executor, lambda: len(commands) >= 100 and answer_pub.get_subscription_count() > 0, 60.0)
        answer_pub.publish(Float64MultiArray(data=[0.0, 0.0, commands[0][0] - 1.0]))   # before its commands
        spin_until(executor, lambda: False, 0.3)
        assert all(np.array_equal(c, sc.start_lvlh_m) for _, c in commands), 'it started on an old answer'
        answer_pub.publish(Float64MultiArray(data=[0.0, 0.0, commands[-1][0]]))
        assert spin_until(executor, lambda: np.linalg.norm(commands[-1][1] - sc.start_lvlh_m) > 1e-4, 60.0), \
            'the chaser does not advance once its robot answers'
    finally:
        out = stop_process(proc)
    assert 'waiting for the robot side to answer the commands on /answer' in out, out
