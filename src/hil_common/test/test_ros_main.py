"""run_node over real DDS: SIGTERM and SIGINT end a node cleanly (exit 0, no traceback),
also while its timer callbacks publish at a high rate."""

import signal
import time

import pytest
from geometry_msgs.msg import PoseStamped

from hil_common.ros_testing import spin_until, start_node, test_node


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGINT])
def test_a_publishing_node_stops_cleanly_on_a_signal(sig):
    with test_node('probe_ros_main') as (node, executor):
        got = []
        node.create_subscription(PoseStamped, 'client/table/pose_cmd', got.append, 10)
        proc = start_node('hil_admittance', 'client_admittance_node', 'rate_hz:=1000.0')
        try:
            assert spin_until(executor, lambda: len(got) > 20, 20.0), 'node did not come up'
        finally:
            proc.send_signal(sig)
            out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0, out
    assert 'Traceback' not in out and 'RCLError' not in out, out


def test_a_mostly_idle_node_stops_promptly_on_sigterm():
    # A node that mostly waits (one 1 Hz timer) must still stop promptly: the signal must
    # wake the executor, not wait for the next callback.
    proc = start_node('hil_bringup', 'scripted_wrench_node', 'rate_hz:=1.0')
    time.sleep(3.0)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0, out
    assert time.monotonic() - t0 < 2.0, 'SIGTERM took longer than a timer period to act'
