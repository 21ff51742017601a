"""The teleoperation nodes over real rclpy/DDS (loopback-only profile, own domain).

Nodes run as their installed executables (``<prefix>/lib/hil_teleop/<name>``), found the way
launch_ros finds them.
"""

import time

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from std_msgs.msg import Float64MultiArray, Int32MultiArray

from hil_common.conversions import seconds_to_stamp, twist_from_msg, wrench_to_msg
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

        stream(2.0)
        moving = list(terms)
        moving_poses = [p.pose.position.x for p in poses]
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
    # the pose command advances by v dt per tick (dt = 5 ms)
    steps = np.diff(moving_poses[-20:])
    np.testing.assert_allclose(steps, 0.008 * 0.005, rtol=1e-6)
    # stale: zero velocity, the pose command holds still
    late = terms[len(terms) // 2:]
    assert late and all(not t[:6].any() for t in late)
    assert all(not twist_from_msg(m.twist).any() for m in twists[len(twists) // 2:])
    xs = [p.pose.position.x for p in poses[len(poses) // 2:]]
    assert max(xs) - min(xs) == 0.0
    assert 'stale' in out


@pytest.mark.parametrize('executable, param, name', [
    ('slave_law_node', 'd:=[0.6, 0.0, 0.0, 0.0, 0.0, 0.0]', 'd'),
    ('slave_law_node', 'ft_sign:=2.0', 'ft_sign'),
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
