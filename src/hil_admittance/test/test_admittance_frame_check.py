"""Issue 15 item 7: a wrench in another frame than the F/T driver's is refused by the admittance node.

The client admittance node (real executable, loopback DDS) is pushed hard in the wrong frame:
``g_c`` stays the identity (Eq. 11 unforced: the relative motion is zero); the same push in
the expected frame moves it.
"""

import numpy as np
from geometry_msgs.msg import PoseStamped, WrenchStamped

from hil_common.conversions import pose_from_msg
from hil_common.ros_testing import spin_until, start_node, stop_process, test_node


def test_wrench_in_another_frame_is_refused():
    proc = start_node('hil_admittance', 'client_admittance_node', 'rate_hz:=200.0', 'wrench_frame_id:=ft_sensor',
                      ros_args=('-r', '__ns:=/frame_check'))
    try:
        with test_node('frame_check_probe') as (node, executor):
            poses = []
            node.create_subscription(PoseStamped, '/frame_check/client/table/pose_cmd',
                                     lambda m: poses.append(pose_from_msg(m.pose)), 100)
            pub = node.create_publisher(WrenchStamped, '/frame_check/client/ft/wrench', 10)
            push = WrenchStamped()
            push.wrench.force.x = 5.0e4
            push.header.frame_id = 'servicer_ft_sensor'            # the wrong sensor's frame
            node.create_timer(0.005, lambda: pub.publish(push))
            assert spin_until(executor, lambda: len(poses) > 10, 30.0), proc.poll()
            n = len(poses)
            assert spin_until(executor, lambda: len(poses) > n + 100, 20.0)
            assert np.linalg.norm(poses[-1].translation) < 1e-3, poses[-1].translation
            push.header.frame_id = 'ft_sensor'
            assert spin_until(executor, lambda: np.linalg.norm(poses[-1].translation) > 1e-3, 20.0)
        alive = proc.poll() is None
    finally:
        out = stop_process(proc)
    assert alive, out
    assert "refused a wrench in frame 'servicer_ft_sensor'" in out
