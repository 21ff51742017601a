"""The motion-table node over real rclpy/DDS: faults hold the command, reset, bad input, parameters.

The node runs as its installed executable; this test plays the robot (joint states echo
the commanded positions) and streams poses that leave the workspace box.
"""

import os
import subprocess
import time

import numpy as np
import pinocchio as pin
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped, TwistStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from hil_common.conversions import pose_to_msg, seconds_to_stamp
from hil_motion_table.kinematics_helpers import home_pose, make_kinematics
from hil_common.ros_testing import node_executable, spin_until, start_node, stop_process

EXE = node_executable('hil_motion_table', 'motion_table_node')


def test_workspace_exit_holds_the_command_until_reset(ros):
    node, executor = ros
    kin = make_kinematics('ur10e')
    home = home_pose(kin)
    lo, hi = home.translation - 0.03, home.translation + 0.03
    proc = start_node('hil_motion_table', 'motion_table_node', 'robot:=ur10e',
                      f'workspace_min:={[float(v) for v in lo]}', f'workspace_max:={[float(v) for v in hi]}',
                      ros_args=('-r', '__ns:=/mt'))
    commands, statuses = [], []
    node.create_subscription(Float64MultiArray, '/mt/forward_position_controller/commands',
                             lambda m: commands.append(np.array(m.data)), 100)
    node.create_subscription(DiagnosticStatus, '/mt/table/status', lambda m: statuses.append(m), 100)
    pub_js = node.create_publisher(JointState, '/mt/joint_states', 10)
    pub_pose = node.create_publisher(PoseStamped, '/mt/table/pose_cmd', 10)
    reset = node.create_client(Trigger, '/mt/table/reset')

    dq_robot = np.linspace(-0.05, 0.05, kin.dof)           # the rates the robot reports
    twists = []
    node.create_subscription(TwistStamped, '/mt/table/twist_measured', lambda m: twists.append((m, commands[-1] if
                                                                                               commands else kin.q_home)), 100)

    def publish_state():  # the robot: measured = last command (home before any)
        q = commands[-1] if commands else kin.q_home
        msg = JointState(name=list(kin.joint_names), position=[float(v) for v in q], velocity=dq_robot.tolist())
        seconds_to_stamp(time.time(), msg.header.stamp)
        pub_js.publish(msg)

    stamps = []

    def send(pose):
        msg = PoseStamped()
        stamps.append(time.time())
        seconds_to_stamp(stamps[-1], msg.header.stamp)
        pose_to_msg(pose, msg.pose)
        pub_pose.publish(msg)
        n = len(commands)
        assert spin_until(executor, lambda: len(commands) > n, 30.0)   # hang guards, not timing claims

    try:
        node.create_timer(0.01, publish_state)
        up = spin_until(executor, lambda: pub_pose.get_subscription_count() > 0 and reset.service_is_ready()
                        and len(statuses) > 0, 30.0)
        assert up, (pub_pose.get_subscription_count(), reset.service_is_ready(), len(statuses), proc.poll())
        spin_until(executor, lambda: False, 0.3)
        # the realised body twist from the measured joints (here the flange's: no body offset)
        assert spin_until(executor, lambda: len(twists) > 0, 30.0)
        from hil_common.conversions import twist_from_msg
        from hil_motion_table.kinematics_helpers import body_twist_from_joints
        np.testing.assert_allclose(twist_from_msg(twists[-1][0].twist),
                                   body_twist_from_joints(kin, twists[-1][1], dq_robot, pin.SE3.Identity()), atol=1e-9)
        for k in range(80):  # +x at 1 mm per command: leaves the 3 cm box
            send(pin.SE3(home.rotation, home.translation + np.array([0.001 * k, 0.0, 0.0])))
            spin_until(executor, lambda: False, 0.004)
        # never a jump: each command moves at most the velocity limit times the stamp interval
        steps = np.abs(np.diff(np.array(commands), axis=0))
        dts = np.diff(stamps)[:, None]
        assert np.all(steps <= kin.qd_max * np.maximum(dts, 0.004) + 1e-9)
        held = commands[-1]
        assert np.array_equal(commands[-1], commands[-20])  # holding
        assert kin.forward(held).translation[0] <= hi[0] + 1e-9
        assert spin_until(executor, lambda: statuses[-1].level == DiagnosticStatus.ERROR
                          and 'workspace_exit' in statuses[-1].message, 30.0)
        # a valid pose keeps holding (latched) until reset
        send(home)
        assert np.array_equal(commands[-1], held)
        future = reset.call_async(Trigger.Request())
        assert spin_until(executor, future.done, 30.0) and future.result().success
        send(pin.SE3(home.rotation, home.translation + np.array([0.02, 0.0, 0.0])))
        assert not np.array_equal(commands[-1], held)
        assert np.all(np.abs(commands[-1] - held) <= kin.qd_max * 0.04)  # resumes rate-limited
        # a malformed pose (zero quaternion) holds and reports invalid_command
        before = commands[-1]
        msg = PoseStamped()
        seconds_to_stamp(time.time(), msg.header.stamp)
        msg.pose.orientation.w = 0.0
        n = len(commands)
        pub_pose.publish(msg)
        assert spin_until(executor, lambda: len(commands) > n, 30.0)   # hang guards, not timing claims
        assert np.array_equal(commands[-1], before)
        assert spin_until(executor, lambda: 'invalid_command' in statuses[-1].message, 30.0)
        values = {kv.key: kv.value for kv in statuses[-1].values}
        assert values['bad_pose'] == '1' and int(values['workspace_exit']) >= 1
    finally:
        stop_process(proc)


def test_bad_parameters_fail_at_start_with_the_parameter_name():
    for args, name in ((['-p', 'robot:=ur5'], 'robot'), (['-p', 'workspace_min:=[1.0, 0.0, 0.0]',
                                                          '-p', 'workspace_max:=[0.0, 1.0, 1.0]'], 'workspace_max'),
                       (['-p', 'period_s:=0.0'], 'period_s')):
        proc = subprocess.run([str(EXE), '--ros-args', *args], capture_output=True, text=True, timeout=60,
                              env=dict(os.environ))
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert f"parameter '{name}'" in proc.stderr


def test_hexapod_home_frame_commands_stream_as_single_point_trajectories(ros):
    node, executor = ros
    kin = make_kinematics('hexapod')
    proc = start_node('hil_motion_table', 'motion_table_node', 'robot:=hexapod', 'command_frame:=home',
                      'output:=joint_trajectory', 'trajectory_lead_s:=0.008', ros_args=('-r', '__ns:=/hx'))
    trajectories = []
    node.create_subscription(JointTrajectory, '/hx/joint_trajectory_controller/joint_trajectory',
                             trajectories.append, 10)
    pub_js = node.create_publisher(JointState, '/hx/joint_states', 10)
    pub_pose = node.create_publisher(PoseStamped, '/hx/table/pose_cmd', 10)

    def publish_state():
        msg = JointState(name=list(kin.joint_names)[::-1], position=[float(v) for v in kin.q_home[::-1]])
        seconds_to_stamp(time.time(), msg.header.stamp)
        pub_js.publish(msg)

    try:
        node.create_timer(0.01, publish_state)
        assert spin_until(executor, lambda: pub_pose.get_subscription_count() > 0, 30.0)

        def publish_pose():  # identity relative to the home pose, streamed as a commander does (the node
            msg = PoseStamped()  # commands nothing before its first joint state, however late that is)
            msg.pose.orientation.w = 1.0
            seconds_to_stamp(time.time(), msg.header.stamp)
            pub_pose.publish(msg)
        node.create_timer(0.02, publish_pose)
        assert spin_until(executor, lambda: trajectories, 60.0), proc.poll()   # a hang guard, not a timing claim
        out = trajectories[-1]
        assert list(out.joint_names) == list(kin.joint_names) and len(out.points) == 1
        assert out.points[0].time_from_start.nanosec == 8_000_000
        np.testing.assert_allclose(out.points[0].positions, kin.q_home, atol=1e-12)
    finally:
        stop_process(proc)


def test_the_cisas_docking_arm_is_a_motion_table_robot(ros):
    """``robot:=cisas`` (seed 003's arm, issue 13): the node drives the CISAS arm like the lab's other
    robots. The test plays the robot (joint states echo the commands) and steps the flange 5 cm along
    x from home, 1 mm per command: the commanded joints' forward kinematics (the arm's own model,
    ``hil_docking.arm``) reaches the pose to 1e-6 m, rate-limited on the way."""
    from hil_docking.arm import cisas_arm_spec
    from hil_motion_table.kinematics import SerialKinematics

    node, executor = ros
    kin = SerialKinematics(cisas_arm_spec())
    home = home_pose(kin)
    proc = start_node('hil_motion_table', 'motion_table_node', 'robot:=cisas', 'workspace_min:=[-2.0, -2.0, -2.0]',
                      'workspace_max:=[2.0, 2.0, 2.0]', ros_args=('-r', '__ns:=/cisas'))
    commands = []
    node.create_subscription(Float64MultiArray, '/cisas/forward_position_controller/commands',
                             lambda m: commands.append(np.array(m.data)), 100)
    pub_js = node.create_publisher(JointState, '/cisas/joint_states', 10)
    pub_pose = node.create_publisher(PoseStamped, '/cisas/table/pose_cmd', 10)

    def publish_state():
        q = commands[-1] if commands else kin.q_home
        msg = JointState(name=list(kin.joint_names), position=[float(v) for v in q])
        seconds_to_stamp(time.time(), msg.header.stamp)
        pub_js.publish(msg)
    try:
        node.create_timer(0.01, publish_state)
        assert spin_until(executor, lambda: pub_pose.get_subscription_count() > 0, 30.0), proc.poll()
        spin_until(executor, lambda: False, 0.3)
        target = pin.SE3(home.rotation, home.translation + np.array([0.05, 0.0, 0.0]))

        def send(pose):
            msg = PoseStamped()
            seconds_to_stamp(time.time(), msg.header.stamp)
            pose_to_msg(pose, msg.pose)
            pub_pose.publish(msg)
            spin_until(executor, lambda: False, 0.02)
        for k in range(1, 51):
            send(pin.SE3(home.rotation, home.translation + np.array([0.001 * k, 0.0, 0.0])))

        def reached():
            return commands and np.linalg.norm(kin.forward(commands[-1]).translation - target.translation) < 1e-6
        # The node commands once per pose, like the admittance nodes that stream it: the target is
        # streamed on until reached. On a busy machine a burst of poses (a short dt) or stale joint
        # states (a hold) leave the rate-limited command short of the last pose of the ramp.
        deadline = time.monotonic() + 10.0
        while not reached() and time.monotonic() < deadline:
            send(target)
        assert reached(), (kin.forward(commands[-1]).translation - target.translation) if commands else 'no command'
        assert np.abs(pin.log3(kin.forward(commands[-1]).rotation.T @ target.rotation)).max() < 1e-6
        assert np.all(np.abs(np.diff(np.array(commands), axis=0)) <= kin.qd_max * 0.1)
    finally:
        stop_process(proc)
