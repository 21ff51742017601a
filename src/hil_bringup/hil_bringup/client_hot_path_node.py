"""Client hot path in one callback: F/T sample -> Eq. (11) step -> motion-table IK -> robot command.

The fastest arrangement measured by ``bench/bench_envisat.py`` (``fused``): the same rule
objects as ``client_admittance_node`` (:class:`hil_dynamics.client.ClientAdmittance`, via its
``build_rule``) and ``motion_table_node`` (:class:`hil_motion_table.table.MotionTable`, via its
``build_table``), run back to back in the F/T subscription's callback, so there is no timer
and no DDS hop between them. The loop is clocked by the sensor: one Eq. (11) step of
``1 / rate_hz`` per sample, and only the newest sample is kept (a late callback skips, it
does not queue).

Topics: in ``client/ft/wrench``, ``client/joint_states``; out
``client/forward_position_controller/commands`` (the robot command), ``client/state``
(Odometry, Eq. 23, every ``state_decimation``-th sample) and ``client/table/pose_cmd`` (``g_c``,
same decimation, for recording). Parameters: those of both nodes, plus ``realtime_priority``
and ``cpu_affinity`` (:mod:`hil_common.realtime`: SCHED_FIFO for every thread of the node, as a
lab runs its control loop). If the F/T stream stops (a sensor fault) nothing is commanded and
the position-controlled robot holds.
"""

from __future__ import annotations

import gc
import sys

import numpy as np
from geometry_msgs.msg import PoseStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from hil_admittance import client_admittance_node as client_node
from hil_common.conversions import pose_to_msg, twist_to_msg, wrench_from_msg, xyz_rpy_to_pose
from hil_common.params import Param, declare_parameters
from hil_common.realtime import make_realtime
from hil_common.ros_main import run_node
from hil_dynamics.se3 import transform_wrench
from hil_motion_table import motion_table_node as table_node
from hil_motion_table.messages import flange_target_from_body_motion, home_pose, reorder

PARAMS = [*client_node.PARAMS, *[p for p in table_node.PARAMS if p.name not in {q.name for q in client_node.PARAMS}],
          Param('state_decimation', 4, 'Publish client/state and client/table/pose_cmd every n-th sample', min=1, max=1000),
          Param('realtime_priority', 0, 'SCHED_FIFO priority of every thread of the node (0: normal scheduling; '
                'a lab uses 50, like ros2_control); refused without CAP_SYS_NICE, then it runs on and warns',
                min=0, max=99),
          Param('cpu_affinity', [-1], 'CPUs the node runs on ([-1]: any)', min=-1, max=1023)]


class ClientHotPathNode(Node):
    def __init__(self):
        super().__init__('client_hot_path')
        p = declare_parameters(self, PARAMS)
        self.rule, self.pose_sensor_in_client = client_node.build_rule(p)
        self.table = table_node.build_table(p)
        self.home = home_pose(self.table.kin) if p['command_frame'] == 'home' else None
        self.pose_body_in_flange = xyz_rpy_to_pose(p['pose_body_in_flange_xyz_rpy'])
        self.names = tuple(self.table.kin.joint_names)
        self.dt = 1.0 / p['rate_hz']
        self.decimation = p['state_decimation']
        self.q_measured = None
        self.samples = 0
        self.rejected = 0
        self.frames = (p['orbit_frame'], p['nominal_frame'], p['client_frame'])
        self.pub_cmd = self.create_publisher(Float64MultiArray, 'client/forward_position_controller/commands', 10)
        self.pub_state = self.create_publisher(Odometry, 'client/state', 10)
        self.pub_pose = self.create_publisher(PoseStamped, 'client/table/pose_cmd', 10)
        self.create_subscription(JointState, 'client/joint_states', self.on_joints, 10)
        self.create_subscription(WrenchStamped, 'client/ft/wrench', self.on_wrench, 1)   # newest sample only
        # Everything built so far (models, rules, rclpy entities) lives as long as the node: move it
        # out of the cyclic collector's reach, so a full collection does not scan it mid-loop.
        gc.collect()
        gc.freeze()
        cpus = [c for c in p['cpu_affinity'] if c >= 0]
        if p['realtime_priority'] or cpus:
            ok, message = make_realtime(p['realtime_priority'], cpus)
            (self.get_logger().info if ok else self.get_logger().warning)(f'real-time: {message}')

    def on_joints(self, msg):
        q = reorder(msg.name, msg.position, self.names)
        if q is None:
            self.rejected += 1
            return
        self.q_measured = q
        if not self.table.initialized:
            self.table.initialize(q)

    def on_wrench(self, msg):
        wrench = wrench_from_msg(msg.wrench)
        if self.q_measured is None or not np.all(np.isfinite(wrench)):
            self.rejected += self.q_measured is not None
            return
        state = self.rule.step(transform_wrench(self.pose_sensor_in_client, wrench), self.dt)
        pose = state.pose_client_in_nominal
        target = flange_target_from_body_motion(self.home, self.pose_body_in_flange, pose) if self.home else pose
        out = self.table.step(target, q_measured=self.q_measured, t=state.t)
        self.pub_cmd.publish(Float64MultiArray(data=out.q_command.tolist()))
        self.samples += 1
        if self.samples % self.decimation == 0:
            stamp = self.get_clock().now().to_msg()
            odom = Odometry()
            odom.header.stamp, odom.header.frame_id, odom.child_frame_id = stamp, self.frames[0], self.frames[2]
            g_t, v_t = state.absolute()
            pose_to_msg(g_t, odom.pose.pose)
            twist_to_msg(v_t, odom.twist.twist)
            self.pub_state.publish(odom)
            cmd = PoseStamped()
            cmd.header.stamp, cmd.header.frame_id = stamp, self.frames[1]
            pose_to_msg(pose, cmd.pose)
            self.pub_pose.publish(cmd)


def main(args=None) -> int:
    return run_node(ClientHotPathNode, 'client_hot_path', args)


if __name__ == '__main__':
    sys.exit(main())
