"""Mock-up pose node: the CISAS arm's joint states -> the chaser mock-up's pose relative to the port.

The piece of the real facility between the robot and the docking node (docs/docking.md, "Not
done"): :class:`hil_docking.mockup_pose.MockupPose` on each joint state.

* in  ``joint_states`` (sensor_msgs/JointState): the arm's measured joints (by name);
* out ``facility/robot_pose_lvlh`` (PoseStamped, ``frame_id``): the mock-up's position relative
  to the port in LVLH-aligned lab axes and the flange's orientation, stamped with the joint
  state's stamp (the measurement's time, which the docking node steps on; an unstamped message
  gets the receive time).

Parameters: ``robot`` (a motion-table robot, default ``cisas``), ``scenario_file`` (the docking
scenario whose ``arm.dock_position_in_base_m`` is the port; empty: the installed one),
``frame_id``. A joint state without the robot's joints, or non-finite, is refused and counted.
"""

from __future__ import annotations

import sys

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState

from hil_common.conversions import pose_to_msg
from hil_common.errors import InputError
from hil_common.params import Param, ParameterError, declare_parameters
from hil_common.ros_main import run_node
from hil_docking.mockup_pose import MockupPose
from hil_docking.scenario import load_docking_scenario
from hil_motion_table.kinematics_helpers import ROBOTS, make_kinematics, reorder

PARAMS = [
    Param('robot', 'cisas', 'The robot carrying the chaser mock-up', choices=tuple(r for r in ROBOTS if r != 'hexapod')),
    Param('scenario_file', '', 'Docking scenario YAML whose arm.dock_position_in_base_m is the port; empty: the '
          'installed cisas_docking.yaml'),
    Param('frame_id', 'target_lvlh', 'Frame of the published pose (LVLH-aligned lab axes at the port)'),
]


class MockupPoseNode(Node):
    def __init__(self):
        super().__init__('mockup_pose')
        p = declare_parameters(self, PARAMS)
        try:
            scenario = load_docking_scenario(p.scenario_file or None)
        except Exception as exc:  # noqa: BLE001 - any reason the scenario cannot be read is this parameter's
            raise ParameterError(f"parameter 'scenario_file': {exc}") from exc
        self.rule = MockupPose(make_kinematics(p.robot), scenario.dock_position_in_base_m)
        self.names = tuple(self.rule.kin.joint_names)
        self.refused = 0
        self.msg = PoseStamped()
        self.msg.header.frame_id = p.frame_id
        self.pub = self.create_publisher(PoseStamped, 'facility/robot_pose_lvlh', 1000)   # 1 s: a reader held up gets it resent
        self.create_subscription(JointState, 'joint_states', self.on_joints, 100)

    def on_joints(self, msg: JointState) -> None:
        q = reorder(msg.name, msg.position, self.names)
        try:
            if q is None:
                raise InputError(f'joint state without the joints {list(self.names)}, or non-finite')
            pose = self.rule.pose_lvlh(q)
        except InputError as exc:
            self.refused += 1
            self.get_logger().warn(f'refused: {exc} ({self.refused} so far)', throttle_duration_sec=1.0)
            return
        stamped = msg.header.stamp.sec or msg.header.stamp.nanosec
        self.msg.header.stamp = msg.header.stamp if stamped else self.get_clock().now().to_msg()
        pose_to_msg(pose, self.msg.pose)
        self.pub.publish(self.msg)


def main(args=None) -> int:
    return run_node(MockupPoseNode, 'mockup_pose', args)


if __name__ == '__main__':
    sys.exit(main())
