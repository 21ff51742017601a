"""SSRMS servicer side of a HIL snare capture: measured LEE wrench in, LEE motion out.

Subscribes to the processed F/T wrench of the sensor behind the LEE mock-up
(``servicer/ft/wrench``, sensor frame), moves it to the LEE frame with the constant
``pose_sensor_in_lee``, steps :class:`hil_snare.servicer_side.FlexibleArmServicer` (seed 000
Eqs. 3-7: flexible joints, camera-frame PD holding the initial pose) at ``rate_hz`` paced on
the node clock (:class:`hil_common.pacing.StepPacer`), and publishes the LEE's motion for the
table of the robot carrying the LEE mock-up: ``servicer/table/pose_cmd`` (the LEE relative to
its initial pose, which is the table's nominal frame) and ``servicer/table/twist_cmd`` (its
body twist). With ``drift_velocity_world_mps`` both are taken in a frame drifting at that
velocity (the target's unforced motion, :mod:`hil_snare.lab`). At its first step it commands the
capture on ``servicer/lee/capture_cmd`` (std_msgs/Bool, transient local): the LEE's wires start
tightening, as at Table 3's instant. The first step waits until the table (``command_consumers``) and (``wait_for_lee_drive``)
the LEE drive (``lee_drive_node``) have subscribed, by node name (a recorder of the same topics is
not them): on a busy machine DDS discovery can take longer than a second, and a
consumer that matched late would start the LEE's motion or the wires late against each other. A wrench older than
``wrench_timeout_s`` is treated as zero.
"""

from __future__ import annotations

import sys

import numpy as np
import pinocchio as pin
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_msgs.msg import Bool

from hil_common.consumers import fully_qualified_names_check, listening_nodes, missing_consumers
from hil_common.conversions import pose_to_msg, twist_to_msg, wrench_from_msg, xyz_rpy_to_pose
from hil_common.pacing import StepPacer
from hil_common.params import Param, declare_parameters
from hil_common.ros_main import run_node
from hil_snare.arms import SSRMS_TABLE1
from hil_snare.joints import DEG, SsrmsGearbox
from hil_snare.lab import lee_in_drift_frame
from hil_snare.runner import TABLE3_JOINTS_DEG
from hil_snare.servicer_side import FlexibleArmServicer
from hil_snare.system import ArmConfig

PARAMS = [
    Param('rate_hz', 250.0, 'Step rate of the flexible-joint arm [Hz] (RK4 is stable below ~7 ms, docs/snare.md)',
          min=50.0, max=2000.0),
    Param('joints_deg', list(TABLE3_JOINTS_DEG), 'Initial SSRMS joint angles [deg] (seed 000 Table 3)', length=7),
    Param('k_g_nm_per_rad', 1.33e6, 'Gearbox stiffness K_g beyond Delta [N m/rad] (seed 000 Eq. 2)', min=1.0),
    Param('motor_inertia_kgm2', 2.67e-4 * 1845.0 ** 2, 'Motor inertia I_zz eta^2 [kg m^2] (seed 000 Eq. 5)', min=1e-6),
    Param('motor_damping_nms_per_rad', 18000.0, 'Motor viscous damping D [N m s/rad] (seed 000 Table 4)', min=0.0),
    Param('kp_nm_per_rad', 120.0, 'Joint PD stiffness k_p [N m/rad] (seed 000 Table 4)', min=0.0),
    Param('kd_nms_per_rad', 240.0, 'Joint PD damping k_d [N m s/rad] (seed 000 Table 4)', min=0.0),
    Param('pose_sensor_in_lee', [0.0] * 6, 'F/T sensor frame in the LEE frame: x, y, z [m], roll, pitch, yaw [rad]',
          length=6),
    Param('wrench_timeout_s', 0.1, 'A wrench older than this is taken as zero [s]', min=0.001),
    Param('frame_id', 'servicer_table_nominal', 'Frame id of the published pose and twist'),
    Param('command_consumers', ['/servicer/motion_table'], 'Fully qualified names of the nodes that must subscribe '
          'to servicer/table/pose_cmd before the run starts (the table; a recorder listening is not it)', type='str[]',
          check=fully_qualified_names_check),
    Param('lee_drive_node', '/lab_twin', 'Fully qualified name of the LEE drive that must subscribe to '
          'servicer/lee/capture_cmd before the run starts (with wait_for_lee_drive)',
          check=lambda name: fully_qualified_names_check([name])),
    Param('wait_for_lee_drive', True, 'Start the run (the capture command, the LEE streaming) only once the LEE '
          "drive (the lab twin) subscribes to servicer/lee/capture_cmd, as the table must to servicer/table/pose_cmd: "
          'a drive that matched late would start the wires late against the LEE'),
    Param('drift_velocity_world_mps', [0.0, 0.0, 0.0], 'Velocity of the frame the LEE is streamed in, in the ISS '
          "frame [m/s]: the target's unforced drift (hil_snare.lab.lee_in_drift_frame; 0: the ISS frame)", length=3),
]


class SnareServicer(Node):
    def __init__(self):
        super().__init__('snare_servicer')
        p = declare_parameters(self, PARAMS)
        arm = ArmConfig(SSRMS_TABLE1, SsrmsGearbox(k_g_nm_per_rad=p.k_g_nm_per_rad), p.motor_inertia_kgm2,
                        p.motor_damping_nms_per_rad)
        self.rule = FlexibleArmServicer(arm, np.asarray(p.joints_deg, dtype=float) * DEG, p.kp_nm_per_rad,
                                        p.kd_nms_per_rad)
        self.pose_lee0_inv = self.rule.lee_state()[0].inverse()
        self.pose_sensor_in_lee = xyz_rpy_to_pose(p.pose_sensor_in_lee)
        self.timeout_s = p.wrench_timeout_s
        self.v_drift = np.asarray(p.drift_velocity_world_mps, dtype=float)
        self.wait_for_lee_drive = bool(p.wait_for_lee_drive)
        self.command_consumers, self.lee_drive_node = tuple(p.command_consumers), p.lee_drive_node
        self.wrench_lee = np.zeros(6)
        self.wrench_t = -1e18
        self.dt_s = 1.0 / p.rate_hz
        self.pacer = None       # started at the first tick on a valid clock (use_sim_time: after the first /clock)
        self.pose_msg = PoseStamped()
        self.twist_msg = TwistStamped()
        self.pose_msg.header.frame_id = self.twist_msg.header.frame_id = p.frame_id
        self.pub_pose = self.create_publisher(PoseStamped, 'servicer/table/pose_cmd', 10)
        self.pub_twist = self.create_publisher(TwistStamped, 'servicer/table/twist_cmd', 10)
        self.create_subscription(WrenchStamped, 'servicer/ft/wrench', self.on_wrench, 10)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub_capture = self.create_publisher(Bool, 'servicer/lee/capture_cmd', latched)
        self.capture_commanded = False
        self.create_timer(1.0 / p.rate_hz, self.tick)

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def on_wrench(self, msg: WrenchStamped) -> None:
        wrench_sensor = wrench_from_msg(msg.wrench)
        self.wrench_lee = self.pose_sensor_in_lee.act(pin.Force(wrench_sensor)).vector
        self.wrench_t = self._now()

    def _consumers_missing(self) -> list[str]:
        """The outputs whose consumer has not subscribed yet (DDS discovery under load takes seconds)."""
        missing = [f'{name} (servicer/table/pose_cmd)' for name in
                   missing_consumers(self.command_consumers, listening_nodes(self, self.pub_pose))]
        if self.wait_for_lee_drive and missing_consumers([self.lee_drive_node], listening_nodes(self, self.pub_capture)):
            missing.append(f'{self.lee_drive_node} (servicer/lee/capture_cmd, the LEE drive)')
        return missing

    def tick(self) -> None:
        now = self._now()
        if self.pacer is None:
            # the run starts on a valid clock (use_sim_time: after the first /clock) once the table and
            # the LEE drive listen: the capture command and the LEE's first motion reach them together
            missing = self._consumers_missing()
            if missing:
                self.get_logger().info(f'waiting for {", ".join(missing)} to subscribe before the capture starts',
                                       throttle_duration_sec=5.0)
            elif now > 0.0:
                self.pacer = StepPacer(self.dt_s, now)
            return
        steps = self.pacer.due(now)
        if steps == 0:
            return
        wrench = self.wrench_lee if now - self.wrench_t <= self.timeout_s else np.zeros(6)
        if not self.capture_commanded:          # the run starts: the operator commands the capture (Table 3's t = 0)
            self.pub_capture.publish(Bool(data=True))
            self.capture_commanded = True
        for _ in range(steps):
            pose, twist = self.rule.step(self.pacer.dt_s, wrench)
        pose, twist = lee_in_drift_frame(pose, twist, self.rule.t, self.v_drift)
        stamp = self.get_clock().now().to_msg()
        self.pose_msg.header.stamp = self.twist_msg.header.stamp = stamp
        pose_to_msg(self.pose_lee0_inv * pose, self.pose_msg.pose)
        twist_to_msg(twist, self.twist_msg.twist)
        self.pub_pose.publish(self.pose_msg)
        self.pub_twist.publish(self.twist_msg)


def main(args=None) -> int:
    return run_node(SnareServicer, 'snare_servicer', args)


if __name__ == '__main__':
    sys.exit(main())
