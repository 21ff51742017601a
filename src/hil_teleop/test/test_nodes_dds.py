"""The teleoperation nodes over real rclpy/DDS (loopback-only profile, own domain).

Nodes run as their installed executables (``<prefix>/lib/hil_teleop/<name>``), found the way
launch_ros finds them.
"""

import time

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from sensor_msgs.msg import Joy
from std_msgs.msg import Float64MultiArray, Int32MultiArray

from hil_common.conversions import seconds_to_stamp, twist_from_msg, wrench_from_msg, wrench_to_msg
from hil_common.ros_testing import spin_until, start_node, stop_process, test_node


@pytest.fixture
def ros():
    with test_node('test_hil_teleop') as pair:
        yield pair


def now_s(node) -> float:
    return node.get_clock().now().nanoseconds * 1e-9


def wait_matched(executor, pub, timeout_s=20.0):
    assert spin_until(executor, lambda: pub.get_subscription_count() > 0, timeout_s), 'no subscriber discovered'


def test_delay_line_node_delays_keeps_order_drops_and_reports_its_queue(ros):
    node, executor = ros
    delay, jitter, n = 0.5, 0.1, 300
    proc = start_node('hil_teleop', 'delay_line_node', f'uplink_delay_s:={delay}', f'jitter_s:={jitter}',
                      'drop_probability:=0.2', 'seed:=3', 'capacity:=1000', 'report_hz:=20.0')
    try:
        got, queue = [], []
        node.create_subscription(WrenchStamped, 'orbit/teleop/f_m', lambda m: got.append((now_s(node), m)), 1000)
        node.create_subscription(Int32MultiArray, 'delay_line/queue_length', lambda m: queue.append(list(m.data)), 100)
        pub = node.create_publisher(WrenchStamped, 'teleop/f_m', 1000)
        wait_matched(executor, pub)
        assert spin_until(executor, lambda: node.count_publishers('orbit/teleop/f_m') > 0, 20.0)
        msg = WrenchStamped()
        for k in range(n):
            wrench_to_msg([float(k), 0, 0, 0, 0, 0], msg.wrench)
            seconds_to_stamp(now_s(node), msg.header.stamp)
            pub.publish(msg)
            executor.spin_once(timeout_sec=0.004)
        last = [len(got)]

        def quiet():            # nothing new for 1.5 s: everything due has come out
            if len(got) != last[0]:
                last[0], last[1:] = len(got), [time.monotonic()]
                return False
            return len(last) > 1 and time.monotonic() - last[1] > 1.5
        last.append(time.monotonic())
        spin_until(executor, quiet, 30.0)
    finally:
        out = stop_process(proc)
    seq = [int(m.wrench.force.x) for _, m in got]
    assert seq == sorted(seq) and len(set(seq)) == len(seq), f'order not preserved\n{out}'
    latency = np.array([t - (m.header.stamp.sec + m.header.stamp.nanosec * 1e-9) for t, m in got])
    assert latency.min() >= delay - 0.005, latency.min()
    assert latency.max() <= delay + jitter + 1.0         # generous: DDS and scheduling on a loaded machine
    # 20 % drops: 240 expected out of 300, +-5 sigma (binomial sigma ~ 6.9)
    assert 205 <= len(seq) <= 275, len(seq)
    peak = max(q[0] for q in queue)
    assert 0 < peak <= 1000
    assert all(len(q) == 5 for q in queue)


SLAVE_PARAMS = ('delay_s:=0.2', 'command_timeout_s:=0.3', 'rate_hz:=200.0', 'enable_coupling:=false',
                'x_s0:=[1.0, 0.0, 0.5, 0.0, 0.0, 0.0]', 'ft_frame:=base')


def test_slave_law_node_follows_eq3_and_stops_when_the_master_command_goes_stale(ros):
    node, executor = ros
    proc = start_node('hil_teleop', 'slave_law_node', *SLAVE_PARAMS)
    try:
        terms, twists, poses = [], [], []
        node.create_subscription(Float64MultiArray, 'teleop/slave_terms', lambda m: terms.append(np.array(m.data)), 100)
        node.create_subscription(TwistStamped, 'table/twist_cmd', twists.append, 100)
        node.create_subscription(PoseStamped, 'table/pose_cmd', poses.append, 100)
        pub_f = node.create_publisher(WrenchStamped, 'orbit/teleop/f_m', 10)
        pub_x = node.create_publisher(PoseStamped, 'orbit/teleop/x_vir', 10)
        pub_w = node.create_publisher(WrenchStamped, 'ft/wrench', 10)
        for p in (pub_f, pub_x, pub_w):
            wait_matched(executor, p)
        f_m, w_s, x_vir = WrenchStamped(), WrenchStamped(), PoseStamped()
        wrench_to_msg([1.0, 0, 0, 0, 0, 0], f_m.wrench)        # v_s,r = K_s G f_m = 1e-3 * 10 * 1 = 0.01 m/s
        wrench_to_msg([2.0, 0, 0, 0, 0, 0], w_s.wrench)        # f_s = 2 N -> K_s f_s = 0.002 m/s
        x_vir.pose.position.x, x_vir.pose.position.z, x_vir.pose.orientation.w = 1.0, 0.5, 1.0

        def stream(seconds, with_master=True):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                sent = now_s(node) - 0.2                        # as if sent on earth 0.2 s ago
                for m in (f_m, x_vir):
                    seconds_to_stamp(sent, m.header.stamp)
                if with_master:
                    pub_f.publish(f_m)
                    pub_x.publish(x_vir)
                pub_w.publish(w_s)
                executor.spin_once(timeout_sec=0.01)

        bad = WrenchStamped()
        wrench_to_msg([float('nan'), 0, 0, 0, 0, 0], bad.wrench)
        stream(1.0)
        pub_f.publish(bad)                                      # counted and logged, never used
        stream(1.0)
        moving = list(terms)
        moving_poses = [(p.header.stamp.sec + p.header.stamp.nanosec * 1e-9, p.pose.position.x) for p in poses]
        terms.clear(), twists.clear(), poses.clear()
        stream(1.5, with_master=False)                          # uplink silent: stale after 0.3 s
    finally:
        out = stop_process(proc)
    live = [t for t in moving if t[6] != 0.0]                   # ticks with a fresh command
    assert len(live) > 50, out
    for t in live[-20:]:
        np.testing.assert_allclose(t[6:12], [0.01, 0, 0, 0, 0, 0], atol=1e-12)      # v_s,r
        np.testing.assert_allclose(t[12:18], [-0.002, 0, 0, 0, 0, 0], atol=1e-12)   # - K_s f_s
        np.testing.assert_allclose(t[0], 0.008, atol=1e-12)                          # Eq. (3), damping settled
    # the pose command advances by v_s,c x (time between its stamps): fixed steps on the node clock
    stamps, xs_moving = np.array(moving_poses[-20:]).T
    np.testing.assert_allclose(np.diff(xs_moving) / 0.008, np.diff(stamps), atol=1e-6)   # stamp resolution
    # stale: zero velocity, the pose command holds still
    late = terms[len(terms) // 2:]
    assert late and all(not t[:6].any() for t in late)
    assert all(not twist_from_msg(m.twist).any() for m in twists[len(twists) // 2:])
    xs = [p.pose.position.x for p in poses[len(poses) // 2:]]
    assert max(xs) - min(xs) == 0.0
    assert 'stale' in out and 'rejected f_m' in out


@pytest.mark.parametrize('executable, param, name', [
    ('slave_law_node', 'd:=[0.6, 0.0, 0.0, 0.0, 0.0, 0.0]', 'd'),
    ('slave_law_node', 'ft_sign:=2.0', 'ft_sign'),
    ('slave_law_node', 'ft_frame:=flange', 'ft_frame'),              # needs a slave robot
    ('slave_law_node', 'slave_robot:=hexapod', 'slave_robot'),
    ('delay_line_node', 'drop_probability:=1.5', 'drop_probability'),
    ('teleop_master_node', 'scripted_pushes:=[1.0, 2.0]', 'scripted_pushes'),
    ('teleop_master_node', 'payload_inertia_kgm2:=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 5.0]',
     'payload_inertia_kgm2'),
])
def test_bad_parameters_fail_at_start_with_the_parameter_name(executable, param, name):
    proc = start_node('hil_teleop', executable, param)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2, out
    assert f"parameter '{name}'" in out


def test_master_link_slave_chain_slave_follows_the_virtual_arm_one_delay_later(ros):
    """teleop_master -> delay_line -> slave_law over DDS: x_s(t) = x_vir(t - delay) (force feedback off).

    Without force feedback the virtual arm moves at exactly ``v_s,r = K_s G f_m`` (Eq. 5) and
    the slave, fed ``v_s,r(t - delay)`` plus the coupling, retraces it one delay later; the
    downlink brings ``x_s`` back to earth another delay later.
    """
    node, executor = ros
    delay = 1.0
    common = ('enable_force_feedback:=false', 'rate_hz:=200.0')
    procs = [start_node('hil_teleop', 'delay_line_node', f'uplink_delay_s:={delay}', f'downlink_delay_s:={delay}'),
             start_node('hil_teleop', 'slave_law_node', *common, f'delay_s:={delay}', 'wrench_timeout_s:=0.5',
                        'x_s0:=[1.0, 0.0, 0.5, 0.0, 0.0, 0.0]')]
    try:
        x_vir, x_s_earth = [], []
        node.create_subscription(PoseStamped, 'teleop/x_vir', lambda m: x_vir.append(
            (m.header.stamp.sec + m.header.stamp.nanosec * 1e-9, m.pose.position.x)), 1000)
        node.create_subscription(PoseStamped, 'earth/slave/x_s', lambda m: x_s_earth.append(
            (now_s(node), m.header.stamp.sec + m.header.stamp.nanosec * 1e-9, m.pose.position.x)), 1000)
        pub_w = node.create_publisher(WrenchStamped, 'slave/ft/wrench', 10)
        pub_w_slave = node.create_publisher(WrenchStamped, 'ft/wrench', 10)
        wait_matched(executor, pub_w)          # delay line is up
        wait_matched(executor, pub_w_slave)    # slave law is up
        # push 1 N (v_s,r = 0.01 m/s) from 2 s after the master starts, for 100 s
        procs.append(start_node('hil_teleop', 'teleop_master_node', *common, 'scripted_ramp_s:=0.0',
                                'scripted_pushes:=[2.0, 100.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]',
                                'x0:=[1.0, 0.0, 0.5, 0.0, 0.0, 0.0]'))
        w = WrenchStamped()
        end = None
        while end is None or time.monotonic() < end:
            pub_w_slave.publish(w)
            executor.spin_once(timeout_sec=0.02)
            moving = [x for x in x_s_earth if x[2] > 1.0 + 1e-6]
            if end is None and moving:
                end = time.monotonic() + 4.0   # 4 s of motion seen on earth
            assert len(x_vir) < 20000
            if end is None and len(x_vir) > 200 * 30:
                break
    finally:
        outs = [stop_process(p) for p in procs]
    assert end is not None, 'the slave never moved (as seen from earth)\n' + '\n'.join(outs)
    t_vir, xv = np.array(x_vir).T
    recv, stamp, xs = np.array(x_s_earth).T
    # the downlink delays the display by one delay
    assert np.all(recv - stamp >= delay - 0.01)
    # the virtual arm moves at v_s,r = 0.01 m/s once pushed
    slope = np.polyfit(t_vir[xv > 1.01], xv[xv > 1.01], 1)[0]
    assert slope == pytest.approx(0.01, rel=0.02)
    # slave at its time t == virtual arm at earth time t - delay (after the coupling transient)
    late = stamp > stamp[xs > 1.0 + 1e-6][0] + 2.0
    assert late.sum() > 50
    expected = np.interp(stamp[late] - delay, t_vir, xv)
    # the issue's (and seed Fig. 17's) 2 mm; here the residual is the link's release lateness
    # under load (v_s,r x lateness: 0.01 m/s x 50 ms = 0.5 mm), typically < 0.1 mm when idle
    assert np.abs(xs[late] - expected).max() < 2e-3


def test_master_node_maps_joy_to_f_m_and_a_silent_joystick_to_zero(ros):
    node, executor = ros
    proc = start_node('hil_teleop', 'teleop_master_node', 'source:=joy', 'rate_hz:=100.0', 'input_timeout_s:=0.3',
                      'joy_axis_map:=[1, 0, -1, -1, -1, 3]', 'joy_scale:=[2.0, -2.0, 1.0, 1.0, 1.0, 0.5]',
                      'joy_deadband:=0.05')
    try:
        f_m = []
        node.create_subscription(WrenchStamped, 'teleop/f_m', lambda m: f_m.append(wrench_from_msg(m.wrench)), 100)
        pub = node.create_publisher(Joy, 'joy', 10)
        wait_matched(executor, pub)
        joy = Joy(axes=[0.25, -0.5, 0.9, 0.02])

        def pushed():
            pub.publish(joy)
            return bool(f_m) and f_m[-1][0] != 0.0
        assert spin_until(executor, pushed, 20.0), 'no f_m from the joystick'
        np.testing.assert_allclose(f_m[-1], [-1.0, -0.5, 0.0, 0.0, 0.0, 0.0])   # axis 3 inside the deadband
        f_m.clear()
        assert spin_until(executor, lambda: len(f_m) > 5 and not f_m[-1].any(), 10.0), 'joy timeout did not zero f_m'
    finally:
        stop_process(proc)


def test_slave_law_node_measures_x_s_on_the_joint_states_and_holds_without_them(ros):
    """slave_robot:=ur10e: x_s is the FK of the joint states it receives (a robot that does not follow its
    command shows up in x_s), the pose command is the flange pose; no joint states -> nothing commanded."""
    from sensor_msgs.msg import JointState

    from hil_motion_table.kinematics_helpers import make_kinematics
    from hil_teleop.slave_measurement import MeasuredSlave

    node, executor = ros
    kin = make_kinematics('ur10e')
    q0 = np.array(kin.q_home)
    proc = start_node('hil_teleop', 'slave_law_node', 'delay_s:=0.2', 'command_timeout_s:=0.3', 'rate_hz:=100.0',
                      'slave_robot:=ur10e', 'ee_in_flange_xyz:=[0.0, 0.0, 0.04]', 'ft_frame:=flange')
    try:
        x_s, poses = [], []
        node.create_subscription(PoseStamped, 'slave/x_s', x_s.append, 100)
        node.create_subscription(PoseStamped, 'table/pose_cmd', poses.append, 100)
        pub_j = node.create_publisher(JointState, 'joint_states', 10)
        pub_w = node.create_publisher(WrenchStamped, 'ft/wrench', 10)
        for p in (pub_j, pub_w):
            wait_matched(executor, p)
        end = time.monotonic() + 1.0
        while time.monotonic() < end:                   # wrenches but no joint states: hold
            pub_w.publish(WrenchStamped())
            executor.spin_once(timeout_sec=0.01)
        assert not x_s and not poses
        q = q0 + np.array([0.1, -0.05, 0.08, 0.0, 0.05, 0.0])   # the robot is not where it started... later
        js = JointState(name=list(kin.joint_names), position=q0.tolist(), velocity=[0.0] * 6)
        end = time.monotonic() + 1.5
        while time.monotonic() < end:                   # first at q0 (sets the frame), then moved to q
            js.position = (q0 if time.monotonic() < end - 1.0 else q).tolist()
            pub_j.publish(js)
            pub_w.publish(WrenchStamped())
            executor.spin_once(timeout_sec=0.01)
    finally:
        out = stop_process(proc)
    assert x_s and poses, out
    slave = MeasuredSlave.aligned_at(kin, q0, (0.0, 0.0, 0.04))
    expected = slave.pose(q).translation
    last = x_s[-1].pose.position
    np.testing.assert_allclose([last.x, last.y, last.z], expected, atol=1e-9)
    # no master command: zero velocity, the flange command stays at the start pose although the robot moved
    start_flange = kin.forward(q0).translation
    cmd = poses[-1].pose.position
    np.testing.assert_allclose([cmd.x, cmd.y, cmd.z], start_flange, atol=1e-9)
    assert np.linalg.norm(expected - slave.pose(q0).translation) > 0.05
