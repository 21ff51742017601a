"""Recording the Envisat graph: a wrist F/T fault mid-run holds the servicer and the MCAP bag
closes cleanly with every received message in it (read back with rosbags)."""

import numpy as np
import yaml
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState

from hil_bringup.recorder import LATCHED_QOS, TopicRecorder, read_counts
from hil_bringup.scenario import load_scenario, servicer_admittance_parameters
from hil_common.ros_testing import spin_until, start_node, stop_process, test_node


def test_fault_mid_run_holds_and_the_bag_keeps_every_message(tmp_path):
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    scenario = load_scenario('envisat_capture')
    params = tmp_path / 'servicer.yaml'
    params.write_text(yaml.safe_dump({'/**': {'ros__parameters': {**servicer_admittance_parameters(scenario),
                                                                  'rate_hz': 500.0}}}))
    proc = start_node('hil_admittance', 'servicer_admittance_node', ros_args=('--params-file', str(params)))
    bag = tmp_path / 'run'
    try:
        with test_node('recorder_probe') as (node, executor):
            recorder = TopicRecorder(node, bag, [('servicer/table/pose_cmd', PoseStamped), ('servicer/state', Odometry),
                                                 ('servicer/ft/fault', DiagnosticStatus)], latched=('servicer/ft/fault',))
            pub_js = node.create_publisher(JointState, 'servicer_arm/joint_states', 10)
            pub_fault = node.create_publisher(DiagnosticStatus, 'servicer/ft/fault', LATCHED_QOS)
            q0 = [float(v) for v in scenario.servicer.q_arm_0]

            def arm():
                pub_js.publish(JointState(name=[f'lbr_joint_{i}' for i in range(1, 8)], position=q0, velocity=[0.0] * 7))
            node.create_timer(0.005, arm)
            positions = []
            node.create_subscription(PoseStamped, 'servicer/table/pose_cmd', lambda m: positions.append(
                (m.pose.position.x, m.pose.position.y, m.pose.position.z)), 1000)
            # moving before the fault: on a busy machine the node may hold first (a start that ran late holds
            # its output until 2 s of calm, hil_common.overload), so the fault waits until the poses move
            assert spin_until(executor, lambda: recorder.received['servicer/table/pose_cmd'] > 200 and len(positions) > 50
                              and positions[-1] != positions[-50], 30.0)
            pub_fault.publish(DiagnosticStatus(level=DiagnosticStatus.ERROR, name='servicer_ft', message='overload'))
            assert spin_until(executor, lambda: recorder.received['servicer/ft/fault'] == 1, 5.0)
            n = recorder.received['servicer/table/pose_cmd']
            assert spin_until(executor, lambda: recorder.received['servicer/table/pose_cmd'] > n + 200, 10.0)
            received = dict(recorder.received)
            written = recorder.close()          # the run ends while the fault is latched
            # Messages still arriving after the close are ignored, not written to a closed bag.
            spin_until(executor, lambda: False, 0.3)
            assert recorder.writer.counts == written
        alive = proc.poll() is None           # no crash during the run (shutdown races are not judged)
    finally:
        out = stop_process(proc)
    assert alive, out
    assert sorted(p.name for p in bag.iterdir()) == ['metadata.yaml', 'run_0.mcap']   # as rosbag2 names them
    # Nothing lost: the bag holds exactly what was received, and it reads back.
    assert {k.lstrip('/'): v for k, v in written.items()} == received
    assert {k.lstrip('/'): v for k, v in read_counts(bag).items()} == received
    ts = get_typestore(Stores.ROS2_JAZZY)
    poses, faults = [], []
    with Reader(bag) as reader:
        for conn, t_ns, raw in reader.messages():
            msg = ts.deserialize_cdr(raw, conn.msgtype)
            if conn.topic == '/servicer/table/pose_cmd':
                p = msg.pose.position
                poses.append((t_ns, np.array([p.x, p.y, p.z])))
            elif conn.topic == '/servicer/ft/fault':
                faults.append((t_ns, msg.level, msg.message))
    assert faults[0][1:] == (ord(DiagnosticStatus.ERROR), 'overload')
    t_fault = faults[0][0]
    before = np.array([p for t, p in poses if t < t_fault])
    # held after it: the second half of the (over 200) poses recorded after the fault. Not "those received over
    # 0.1 s after it": on a loaded machine they came in one burst within 0.1 s (one under-load run of the suite)
    after = [p for t, p in poses if t > t_fault]
    after = np.array(after[len(after) // 2:])
    assert np.linalg.norm(before[-1] - before[0]) > 0.0          # moving before the fault (co-rotating start)
    assert len(after) >= 100 and np.all(after == after[0])
