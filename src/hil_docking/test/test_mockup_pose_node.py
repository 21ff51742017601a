"""The mock-up pose node over DDS: the CISAS arm's joints along the CW approach (the Newton-Euler
reference's inverse kinematics of ``dock + dr``) come back as ``dr`` (the CW arc, closed form), with
the joint states' stamps; a joint state without the arm's joints is refused and publishes nothing."""

import numpy as np
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState

from hil_common.conversions import pose_from_msg
from hil_common.ros_testing import spin_until, start_node, stop_process, test_node
from hil_docking.arm import cisas_arm_spec
from hil_docking.cw import CWModel, two_impulse_transfer
from hil_docking.feedforward import cw_joint_reference
from hil_docking.scenario import load_docking_scenario
from hil_motion_table.kinematics import SerialKinematics


def test_the_arm_joints_along_the_cw_arc_come_back_as_the_arc_with_their_stamps():
    scenario = load_docking_scenario(None)
    kin = SerialKinematics(cisas_arm_spec())
    cw = CWModel.at_altitude(scenario.altitude_m)
    transfer = two_impulse_transfer(cw, scenario.start_lvlh_m, np.zeros(3), scenario.approach_duration_s)
    ref = cw_joint_reference(kin, cw, transfer, scenario.dock_position_in_base_m,
                             kin.forward(kin.spec.q_home).rotation, scenario.approach_duration_s / 20)
    arc = np.array([transfer.state_at(cw, t)[:3] for t in ref.t])          # dr(t), the CW closed form
    proc = start_node('hil_docking', 'mockup_pose_node')
    try:
        with test_node('mockup_pose_probe') as (node, executor):
            got = []
            node.create_subscription(PoseStamped, 'facility/robot_pose_lvlh', got.append, 100)
            pub = node.create_publisher(JointState, 'joint_states', 100)
            assert spin_until(executor, lambda: pub.get_subscription_count() > 0, 20.0), 'the node never subscribed'
            bad = JointState(name=['joint_1'], position=[0.0])               # not the arm's joints
            pub.publish(bad)
            for k, q in enumerate(ref.q):
                msg = JointState(name=list(kin.joint_names), position=[float(v) for v in q])
                msg.header.stamp.sec, msg.header.stamp.nanosec = 100 + k, 5000
                pub.publish(msg)
            assert spin_until(executor, lambda: len(got) >= len(ref.q), 10.0), f'{len(got)} poses'
            spin_until(executor, lambda: False, 0.3)
        alive = proc.poll() is None
    finally:
        out = stop_process(proc)
    assert alive, out
    assert len(got) == len(ref.q)                                            # the bad one published nothing
    assert [(m.header.stamp.sec, m.header.stamp.nanosec) for m in got] == [(100 + k, 5000) for k in range(len(ref.q))]
    assert all(m.header.frame_id == 'target_lvlh' for m in got)
    positions = np.array([pose_from_msg(m.pose).translation for m in got])
    assert np.abs(positions - arc).max() < 1e-6, np.abs(positions - arc).max()     # the IK's tolerance
    assert np.linalg.norm(arc[0] - scenario.start_lvlh_m) < 1e-9 and np.linalg.norm(arc[-1]) < 1e-9
    assert 'refused' in out
