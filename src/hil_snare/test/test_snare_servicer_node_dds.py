"""snare_servicer_node over real rclpy/DDS (loopback-only profile, own domain)."""

import pytest
from geometry_msgs.msg import PoseStamped, WrenchStamped

from hil_common.conversions import wrench_to_msg
from hil_common.ros_testing import spin_until, start_node, stop_process, test_node


@pytest.fixture
def ros():
    with test_node('test_hil_snare') as pair:
        yield pair


def test_measured_wrench_moves_the_published_lee_pose_along_the_force(ros):
    """A wire push along the LEE's -z, measured by the sensor, moves the LEE along -z (and nothing before it).
    The run starts only once the table and the LEE drive listen: no pose and no capture command before
    the LEE drive subscribes."""
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_msgs.msg import Bool

    node, executor = ros
    proc = start_node('hil_snare', 'snare_servicer_node', 'rate_hz:=250.0', 'wrench_timeout_s:=0.5',
                      'command_consumers:=[/test_hil_snare]', 'lee_drive_node:=/test_hil_snare')
    try:
        poses, captures = [], []
        node.create_subscription(PoseStamped, 'servicer/table/pose_cmd', lambda m: poses.append(m.pose.position), 100)
        # the node is up (it answers on its parameter service) and the table listens: still no run
        assert spin_until(executor, lambda: 'snare_servicer' in node.get_node_names(), 30.0), 'the node did not come up'
        spin_until(executor, lambda: False, 1.0)
        assert poses == [], 'the run started before the LEE drive subscribed'
        node.create_subscription(Bool, 'servicer/lee/capture_cmd', lambda m: captures.append(m.data),
                                 QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        assert spin_until(executor, lambda: len(poses) >= 10, 30.0), 'no pose published'
        assert captures == [True]
        at_rest = [abs(p.x) + abs(p.y) + abs(p.z) for p in poses]
        assert max(at_rest) < 1e-9                                   # no wrench: the LEE holds its pose
        pub = node.create_publisher(WrenchStamped, 'servicer/ft/wrench', 10)
        assert spin_until(executor, lambda: pub.get_subscription_count() > 0, 20.0)
        msg = WrenchStamped()
        wrench_to_msg([0.0, 0.0, -200.0, 0.0, 0.0, 0.0], msg.wrench)
        n0 = len(poses)
        for _ in range(100):
            pub.publish(msg)
            executor.spin_once(timeout_sec=0.01)
        assert spin_until(executor, lambda: len(poses) > n0 + 20, 20.0)
    finally:
        out = stop_process(proc)
    last = poses[-1]
    assert last.z < -1e-6, out
    assert abs(last.z) > 3 * max(abs(last.x), abs(last.y)), (last, out)


def test_bad_parameter_stops_start_up_naming_it():
    proc = start_node('hil_snare', 'snare_servicer_node', 'motor_damping_nms_per_rad:=-5.0')
    try:
        code = proc.wait(timeout=30)
    finally:
        out = stop_process(proc)
    assert code == 2, out
    assert 'motor_damping_nms_per_rad' in out, out
