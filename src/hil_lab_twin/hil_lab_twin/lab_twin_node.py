"""Lab-twin node: the MuJoCo twin behind the topics a ros2_control deployment exposes.

Per robot namespace ``<ns>`` (e.g. ``client``, ``servicer``; with ``layout:=teleop`` seed 001's
``slave`` robot gripping the mock-up on the ``payload`` table, :func:`hil_lab_twin.scene.teleop_facility_config`):

* out ``<ns>/joint_states`` (sensor_msgs/JointState) at ``publish_rate_hz``, stamped with
  the wall-clock instant that corresponds to the simulated state;
* in  ``<ns>/forward_position_controller/commands`` (std_msgs/Float64MultiArray);
* in  ``<ns>/joint_trajectory_controller/joint_trajectory`` (trajectory_msgs/JointTrajectory);
* torque-controlled arm ``<ns>_arm``: ``<ns>_arm/joint_states`` and
  ``<ns>_arm/forward_effort_controller/commands``;
* with the ring gripper: in ``servicer/gripper_cmd`` (std_msgs/Bool, true closes), out
  ``servicer/gripper/joint_states`` (the fingers' half-openings [m], as a gripper reports them);
* in  ``<ns>/payload/push`` (geometry_msgs/WrenchStamped, world axes): an external force at
  the client mock-up's grapple plus a couple, held until the next message (a virtual
  operator pushing the mock-up; zero releases it);
* F/T sensors over RDT/UDP (parameter ``rdt_ports``), through the simulated Net F/T of
  ``hil_sensors``, so the real driver reads them; optionally also on
  ``<sensor>/wrench_true`` (geometry_msgs/WrenchStamped, frame ``<sensor>``), ``<sensor>/sensor_pose``
  (geometry_msgs/PoseStamped in ``lab_world``: the sensor's pose, for the drivers' gravity compensation).

Wrong-length or non-finite commands are rejected (counted, logged once per robot), as
ros2_control's controllers do.

Two clocks (``clock``):

* ``wall``: the twin follows the wall clock in real time (a thread steps the physics), as the
  lab does; stamps are wall-clock instants. A machine too busy to keep up makes the lab slip.
* ``simulated``: the twin owns time, like a simulator with ros2_control. It publishes
  ``/clock`` (rosgraph_msgs/Clock) and every other node runs with ``use_sim_time``. It steps
  one publish period at a time: the physics, then ``/clock``, then one RDT record per F/T sample
  the period made and the joint states and the other outputs, stamped with the simulated time.
  It takes the next step once every robot the stack commands has received a command since the
  last one (the stack answered), or after ``barrier_timeout_s`` of wall time without, as the twin
  watched it (``hil_lab_twin.pacing.WatchedWait``: a stall of the whole machine is no miss) (a *miss*,
  counted per robot; that robot is not waited for again until it is commanded), and never faster than ``max_real_time_factor`` times real time
  (with ``start_real_time_factor``: that fast at most from a robot's commander's start until its commands keep pace,
  :class:`hil_lab_twin.pacing.SimulatedLabClock`). A busy
  machine then slows the simulated timeline down; it does not change what happens on it. The
  counters go out on ``lab_twin/status`` (diagnostic_msgs/DiagnosticStatus) every second of wall time.

The deterministic lockstep mode without ROS is the :class:`hil_lab_twin.twin.LabTwin` object itself.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from hil_common.conversions import pose_to_msg, seconds_to_stamp, stamp_to_seconds, wrench_from_msg, wrench_to_msg
from hil_common.params import Param, ParameterError, declare_parameters
from hil_common.ros_main import run_node
from hil_lab_twin.pacing import RealTimePacer, SimulatedLabClock, WatchedWait, status_values
from hil_lab_twin.rdt_bridge import rdt_server
from hil_lab_twin.scene import (ArmConfig, FtConfig, GripConfig, RobotConfig, ServoConfig, TwinConfig, facility_config,
                                teleop_facility_config)
from hil_lab_twin.scene import config_from_yaml
from hil_lab_twin.twin import LabTwin
from hil_sensors.rdt import ft_sequence_at

PARAMS = [
    Param('tables', ['client:ur10e'], "Motion tables as 'namespace:model' (model: ur10e, kr120r2500pro, hexapod); "
          'each carries a client mock-up on an F/T sensor', check=lambda v: check_tables(v)),
    Param('layout', 'tables', "'tables': the motion tables of 'tables' (and the servicer); 'teleop': seed 001's HIL, "
          "robot 'slave' (KR 120, F/T slave_ft) gripping the mock-up on robot 'payload' (UR10e, F/T payload_ft)",
          choices=('tables', 'teleop', 'config')),
    Param('twin_config_yaml', '', "layout 'config': the whole twin as YAML (hil_lab_twin.scene.config_to_yaml; "
          'hil_bringup.facility.twin_node_parameters writes it from the lab calibration)'),
    Param('grip_stiffness', [2e4, 2e4, 2e4, 2e3, 2e3, 2e3], "layout 'teleop': gripper stiffness, slave grip frame "
          '[N/m, N m/rad]', length=6, min=0.0),
    Param('grip_damping', [2e2, 2e2, 2e2, 2e1, 2e1, 2e1], "layout 'teleop': gripper damping [N s/m, N m s/rad]",
          length=6, min=0.0),
    Param('with_servicer', False, 'Add the servicer robot (KR 120 R2500 pro) carrying the light-weight arm'),
    Param('publish_rate_hz', 250.0, 'joint_states rate and stepping tick [Hz]', min=1.0, max=1000.0),
    Param('timestep_s', 0.001, 'Physics time step [s]', min=1e-4, max=0.01),
    Param('delay_s', 0.004, 'Command transport delay of the industrial robots [s]', min=0.0, max=1.0),
    Param('servo_bandwidth_hz', 10.0, 'Position-loop bandwidth of the industrial robots [Hz]', min=0.1, max=500.0),
    Param('ft_rate_hz', 1000.0, 'F/T sample rate [Hz]', min=1.0, max=10000.0),
    Param('ft_noise_force_n', 0.05, 'F/T force noise standard deviation [N]', min=0.0),
    Param('ft_noise_torque_nm', 0.003, 'F/T torque noise standard deviation [N m]', min=0.0),
    Param('arm_viscous_friction', 0.5, 'Light-weight arm viscous joint friction [N m s/rad]', min=0.0),
    Param('arm_coulomb_friction', 0.3, 'Light-weight arm Coulomb joint friction [N m]', min=0.0),
    Param('rdt_ports', [], "F/T sensors served over RDT/UDP on 127.0.0.1 as 'sensor:port' (e.g. client_ft:49152); "
          "empty (or ['']) serves none", type='str[]', check=lambda v: check_rdt_ports(v)),
    Param('publish_wrench', True, "Publish each F/T reading on '<sensor>/wrench_true' at publish_rate_hz"),
    Param('render_png', '', 'Write an overview PNG here at shutdown (needs MUJOCO_GL=egl); empty: none'),
    Param('clock', 'wall', "'wall': real time on the wall clock; 'simulated': the twin publishes /clock and steps "
          'once the stack has answered (run the other nodes with use_sim_time)', choices=('wall', 'simulated')),
    Param('max_real_time_factor', 1.0, "clock 'simulated': at most this many simulated seconds per wall second",
          min=0.01, max=1000.0),
    Param('clock_after_topics', [], "clock 'simulated': geometry_msgs/WrenchStamped topics (the F/T drivers' outputs) "
          'the twin waits on after a step before it publishes /clock, so the stack\'s timers fire on that step\'s '
          'measurements (a topic that stays silent for barrier_timeout_s is a miss and not waited for until it '
          'publishes again)', type='str[]'),
    Param('answer_topics', [], "clock 'simulated': geometry_msgs/WrenchStamped topics of stack nodes that command no "
          "robot but must step with the twin (e.g. the teleop master's uplink and the delay line's release): each is "
          'waited for once per step like a robot\'s command, from its first message on (its node must publish at '
          'least once per publish_rate_hz step)', type='str[]'),
    Param('command_stamps', False, "clock 'simulated': the robots' joint trajectories carry in header.stamp the "
          'simulated time the stack computed them for (the motion table stamps them with its pose command\'s); one '
          'answers the step from t only when stamped at or after t. One stamped earlier is a command still in flight '
          'from an earlier step: taken, it would add a control period to the loop in some runs and not in others. '
          'Needs a stack that stamps each command with the time it is for (the docking node does)'),
    Param('barrier_timeout_s', 2.0, "clock 'simulated': wall time to wait for the stack's commands before the "
          'twin steps without them (counted as a miss; the robot is not waited for again until it is commanded); '
          'a stall of the twin itself (the whole machine) does not count [s]',
          min=0.001, max=60.0),
    Param('start_real_time_factor', 0.0, "clock 'simulated': from the moment a publisher of a robot's command topic "
          'appears until the robot has been commanded in a few steps in a row (then it is waited for), at most this '
          'many simulated seconds per wall second (0: off), so that a node held up in its start-up finds the twin only '
          'this far on (hil_lab_twin.pacing.SimulatedLabClock)', min=0.0, max=1000.0),
    Param('start_timeout_s', 30.0, "clock 'simulated', with start_real_time_factor: wall time a robot's commander may "
          'take from its publisher to commands that keep pace; then the robot is a miss and no longer slows the twin '
          '[s]', min=0.001, max=3600.0),
]


def check_tables(entries) -> str | None:
    names = []
    for entry in entries:
        ns, _, model = entry.partition(':')
        if not ns.isidentifier() or model not in ('ur10e', 'kr120r2500pro', 'hexapod'):
            return f"entry {entry!r} is not 'namespace:model' with model ur10e, kr120r2500pro or hexapod"
        names.append(ns)
    if len(set(names)) != len(names) or 'servicer' in names:
        return f'namespaces must be unique and not servicer, got {names}'
    return None


def check_rdt_ports(entries) -> str | None:
    for entry in entries:
        if not entry:
            continue
        sensor, _, port = entry.partition(':')
        if not sensor or not port.isdigit() or not 0 < int(port) < 65536:
            return f"entry {entry!r} is not 'sensor:port'"
    return None


def config_from(p) -> TwinConfig:
    if p.get('layout', 'tables') == 'config':
        try:
            return config_from_yaml(p.twin_config_yaml)
        except (ValueError, TypeError) as exc:
            raise ParameterError(f"parameter 'twin_config_yaml': {exc}") from None
    servo = ServoConfig(delay_s=p.delay_s, bandwidth_hz=p.servo_bandwidth_hz)
    ft = FtConfig(rate_hz=p.ft_rate_hz, noise_force_std=p.ft_noise_force_n, noise_torque_std=p.ft_noise_torque_nm)
    if p.get('layout', 'tables') == 'teleop':
        grip = GripConfig('slave', 'payload', tuple(p.grip_stiffness), tuple(p.grip_damping))
        return teleop_facility_config(servo=servo, slave_ft=dataclasses.replace(ft, seed=11),
                                      payload_ft=dataclasses.replace(ft, seed=12), grip=grip, timestep=p.timestep_s)
    robots = []
    for k, entry in enumerate(p.tables):  # tables side by side along y, facing the servicer at the origin
        ns, _, model = entry.partition(':')
        y = 2.2 * k
        if model == 'hexapod':
            robots.append(RobotConfig(ns, 'hexapod', 'hexapod', 'client_mockup', base_xyz=(2.6, y, 0.0), servo=servo, ft=ft))
        else:
            robots.append(RobotConfig(ns, 'serial', model, 'client_mockup', base_xyz=(2.6, y, 0.5 if model == 'ur10e' else 0.0),
                                      base_rpy=(0.0, 0.0, math.pi), servo=servo, ft=ft))
    if p.with_servicer:
        robots += [dataclasses.replace(r, servo=servo, ft=ft) for r in facility_config(with_servicer=True).robots[1:]]
    arm = ArmConfig(viscous_friction=p.arm_viscous_friction, coulomb_friction=p.arm_coulomb_friction)
    return TwinConfig(robots=tuple(robots), timestep=p.timestep_s, arm=arm)


class LabTwinNode(Node):
    def __init__(self):
        super().__init__('lab_twin')
        p = declare_parameters(self, PARAMS)
        self.twin = LabTwin(config_from(p))
        self.render_path = p.render_png
        self.simulated_clock = p.clock == 'simulated'
        self.command_stamps = p.command_stamps
        self.publishes_clock = self.simulated_clock      # hil_common.ros_main.node_executor: single-threaded
        lab = self.stepped_lab(self.twin)
        self.pacer = None if self.simulated_clock else RealTimePacer(lab, clock=time.time)
        self.joint_pubs, self.warned, self.gripper_pubs = {}, set(), {}
        self.command_topics = {}        # each robot's command topics (the start pace watches their publishers)
        for ns in self.twin.position_robots:
            self.joint_pubs[ns] = self.create_publisher(JointState, f'{ns}/joint_states', 10)
            positions, trajectory = self.command_topics[ns] = (f'{ns}/forward_position_controller/commands',
                                                               f'{ns}/joint_trajectory_controller/joint_trajectory')
            self.create_subscription(Float64MultiArray, positions, lambda msg, ns=ns: self.on_positions(ns, msg), 100)
            self.create_subscription(JointTrajectory, trajectory, lambda msg, ns=ns: self.on_trajectory(ns, msg), 10)
        for ns in self.twin.payload_robots:
            self.create_subscription(WrenchStamped, f'{ns}/payload/push', lambda msg, ns=ns: self.on_push(ns, msg), 10)
        for ns in self.twin.torque_arms:
            self.joint_pubs[ns] = self.create_publisher(JointState, f'{ns}/joint_states', 10)
            (efforts,) = self.command_topics[ns] = (f'{ns}/forward_effort_controller/commands',)
            self.create_subscription(Float64MultiArray, efforts, lambda msg, ns=ns: self.on_efforts(ns, msg), 100)
            if self.twin.has_ring_gripper(ns):   # the OBSW's gripper command (true closes)
                self.create_subscription(Bool, f'{ns.removesuffix("_arm")}/gripper_cmd',
                                         lambda msg, ns=ns: self.on_gripper(ns, msg), 10)
                # what the gripper reports: its fingers' half-openings [m] (0: pads at the tool point)
                self.gripper_pubs[ns] = self.create_publisher(JointState, f'{ns.removesuffix("_arm")}/gripper/joint_states', 10)
        self.ft_pubs = {s: (self.create_publisher(WrenchStamped, f'{s}/wrench_true', 10), self.twin.wrench_source(s))
                        for s in self.twin.ft_sensor_names} if p.publish_wrench else {}
        # each F/T sensor's pose in the lab (what the robots' forward kinematics and TF give a lab): the
        # F/T drivers' gravity compensation of the mock-up or gripper hanging from the sensor reads it
        self.sensor_pose_pubs = {s: self.create_publisher(PoseStamped, f'{s}/sensor_pose', 10)
                                 for s in self.twin.ft_sensor_names}
        self.rdt_servers, self.rdt_channels = [], []
        for entry in filter(None, p.rdt_ports):
            sensor, _, port = entry.partition(':')
            if sensor not in self.twin.ft_sensor_names:
                raise ParameterError(f"parameter 'rdt_ports': no F/T sensor {sensor!r} "
                                     f'(sensors: {list(self.twin.ft_sensor_names)})')
            server = rdt_server(self.twin, sensor, int(port), paced=not self.simulated_clock)
            self.rdt_servers.append(server)
            self.rdt_channels.append((server, self.twin.wrench_source(sensor)))
            self.get_logger().info(f'{sensor}: RDT/UDP on 127.0.0.1:{port}')
        if self.simulated_clock:
            self.clock = SimulatedLabClock(lab, 1.0 / p.publish_rate_hz, p.max_real_time_factor,
                                           p.barrier_timeout_s, time.monotonic, p.start_real_time_factor,
                                           p.start_timeout_s)
            self.clock_pub = self.create_publisher(Clock, '/clock', 10)
            self.status_pub = self.create_publisher(DiagnosticStatus, 'lab_twin/status', 10)
            for topic in filter(None, p.answer_topics):
                self.create_subscription(WrenchStamped, topic, lambda msg, t=topic: self._answered(t), 100)
            self.clock_waits = {t: False for t in filter(None, p.clock_after_topics)}   # topic: engaged
            self.clock_seen, self.clock_pending = set(), False
            self.clock_after_wait = WatchedWait(time.monotonic)   # for the drivers' outputs, as the twin saw it
            for topic in self.clock_waits:
                self.create_subscription(WrenchStamped, topic, lambda msg, t=topic: self.on_measurement(t), 10)
            self.create_timer(0.002, self.try_step)       # wall clock: pacing, the barrier's timeout
            if p.start_real_time_factor > 0:             # the start: the robots' commanders as they appear
                self.given_up_logged = 0
                self.create_timer(0.1, self.watch_commanders)
            self.create_timer(1.0, self.publish_status)
            self.publish_outputs([[] for _ in self.rdt_channels])   # t = 0: the state the stack starts from
        else:
            self.pacer.start()
            self.create_timer(1.0 / p.publish_rate_hz, self.tick)

    def stepped_lab(self, twin):
        """What either clock steps (``time``, ``dt``, ``step()``, ``advance_to()``): the twin itself; a
        node that adds physics between the twin's bodies (e.g. ``hil_snare``'s wires) returns its
        wrapper, built from its own parameters, which are declared by then."""
        return twin

    def _rejected(self, ns: str, ok: bool) -> None:
        if not ok and ns not in self.warned:
            self.warned.add(ns)
            self.get_logger().error(f'{ns}: command rejected (wrong length, unknown joints or non-finite values); '
                                    'further rejections are only counted')

    def on_positions(self, ns: str, msg: Float64MultiArray) -> None:
        self._rejected(ns, self.twin.command_positions(ns, list(msg.data)))
        self._answered(ns)

    def _answered(self, ns: str, stamp_s: float | None = None) -> None:
        if self.simulated_clock and self.clock.answered(ns, stamp_s):
            self.try_step()

    def on_trajectory(self, ns: str, msg: JointTrajectory) -> None:
        points = [(stamp_to_seconds(pt.time_from_start), list(pt.positions)) for pt in msg.points]
        self._rejected(ns, self.twin.command_trajectory(ns, list(msg.joint_names), points))
        self._answered(ns, stamp_to_seconds(msg.header.stamp) if self.command_stamps else None)

    def on_efforts(self, ns: str, msg: Float64MultiArray) -> None:
        self._rejected(ns, self.twin.command_efforts(ns, list(msg.data)))
        self._answered(ns)

    def on_gripper(self, ns: str, msg: Bool) -> None:
        (self.twin.close_gripper if msg.data else self.twin.open_gripper)(ns)

    def on_push(self, ns: str, msg: WrenchStamped) -> None:
        wrench = wrench_from_msg(msg.wrench)
        try:
            self.twin.push_payload(ns, wrench[:3], wrench[3:])
        except ValueError:
            self._rejected(ns, False)

    # -- clock 'simulated' ------------------------------------------------------------------
    def try_step(self) -> None:
        """Publish the pending /clock once the measurements went through (or timed out); step one
        period if the stack answered (or the barrier timed out) and the pace allows."""
        if self.clock_pending:
            waiting = [t for t, engaged in self.clock_waits.items() if engaged and t not in self.clock_seen]
            if waiting and self.clock_after_wait.elapsed() < self.clock.barrier_timeout_s:
                return
            for topic in waiting:               # silent: a miss, not waited for until it publishes again
                self.clock.misses[topic] = self.clock.misses.get(topic, 0) + 1
                self.clock_waits[topic] = False
            self.clock_pending = False
            self.publish_clock()
        if self.clock.step_due():
            samples = [[] for _ in self.rdt_channels]
            self.clock.step(lambda: self.collect_samples(samples))
            self.publish_outputs(samples)

    def watch_commanders(self) -> None:
        """The start: a robot not engaged yet whose command topic has a publisher slows the twin until its commands
        keep pace (``start_real_time_factor``); one given up after ``start_timeout_s`` is named."""
        for ns, topics in self.command_topics.items():
            if self.clock.awaits_commander(ns) and any(self.count_publishers(t) for t in topics):
                self.clock.commander_seen(ns)
                self.get_logger().info(f'{ns}: its commander appeared; the twin at most '
                                       f'{self.clock.start_real_time_factor:g}x real time until its commands keep pace')
        for ns in self.clock.start_given_up[self.given_up_logged:]:
            self.get_logger().warning(f'{ns}: no commands keeping pace {self.clock.start_timeout_s:g} s after its '
                                      'commander appeared: a miss; it no longer slows the twin')
        self.given_up_logged = len(self.clock.start_given_up)

    def on_measurement(self, topic: str) -> None:
        self.clock_waits[topic] = True
        self.clock_seen.add(topic)
        if self.clock_pending:
            self.try_step()

    def publish_clock(self) -> None:
        msg = Clock()
        seconds_to_stamp(self.twin.time, msg.clock)
        self.clock_pub.publish(msg)

    def collect_samples(self, samples) -> None:
        """After each physics step: the F/T samples it made, one RDT record each, with the sample's
        time on the simulated clock as its ``ft_sequence`` (:func:`hil_sensors.rdt.ft_sequence_at`):
        a driver with ``sensor_clock_stamps`` stamps it exactly, whenever it reads it."""
        for (server, source), out in zip(self.rdt_channels, samples):
            wrench, stamp_s, sequence = source()
            if sequence != getattr(server, 'twin_sequence', None):
                server.twin_sequence = sequence
                out.append((tuple(float(v) for v in wrench), ft_sequence_at(stamp_s, server.rate_hz)))

    def publish_outputs(self, samples=()) -> None:
        """Without ``clock_after_topics``: /clock first, so the stack's clocks read the new time when
        the period's samples and states arrive, then the F/T samples (RDT) and the states. With
        them: the samples and states first, /clock once the F/T drivers have passed the samples on
        (:meth:`try_step`), so the stack's timers fire on this period's measurements."""
        if not any(self.clock_waits.values()):
            self.publish_clock()
        for (server, _), taken in zip(self.rdt_channels, samples):
            server.emit([w for w, _ in taken], [k for _, k in taken])
        self.publish_states(self.twin.time, lambda t_sample: t_sample)
        if any(self.clock_waits.values()):
            self.clock_seen.clear()
            self.clock_pending = True
            self.clock_after_wait.restart()

    def publish_status(self) -> None:
        values = self.clock.counters()
        misses = sum(values['misses'].values())
        msg = DiagnosticStatus(level=DiagnosticStatus.OK if misses == 0 else DiagnosticStatus.WARN, name='lab_twin',
                               message=f"simulated clock: t = {values['time_s']:.3f} s, real-time factor "
                                       f"{values['real_time_factor']:.2f}, {misses} barrier misses")
        msg.values = [KeyValue(key=k, value=v) for k, v in status_values(values, self.clock_after_wait.stalls).items()]
        self.status_pub.publish(msg)

    # -- clock 'wall' -------------------------------------------------------------------------
    def tick(self) -> None:
        self.pacer.poll()
        self.publish_states(self.pacer.wall_time_for_sim(self.twin.time), self.pacer.wall_time_for_sim)

    def publish_states(self, stamp: float, stamp_for_sim) -> None:
        for ns, pub in self.joint_pubs.items():
            state = self.twin.joint_state(ns)
            msg = JointState(name=list(state.names), position=state.positions.tolist(),
                             velocity=state.velocities.tolist(), effort=state.efforts.tolist())
            seconds_to_stamp(stamp, msg.header.stamp)
            pub.publish(msg)
        for ns, pub in self.gripper_pubs.items():
            msg = JointState(name=['finger_left', 'finger_right'], position=self.twin.finger_positions(ns).tolist())
            seconds_to_stamp(stamp, msg.header.stamp)
            pub.publish(msg)
        for sensor, pub in self.sensor_pose_pubs.items():
            msg = PoseStamped()
            msg.header.frame_id = 'lab_world'
            seconds_to_stamp(stamp, msg.header.stamp)
            pose_to_msg(self.twin.site_pose_in_world(f'{sensor}_site'), msg.pose)
            pub.publish(msg)
        for sensor, (pub, source) in self.ft_pubs.items():
            wrench, t_sample, _ = source()
            msg = WrenchStamped()
            msg.header.frame_id = sensor
            seconds_to_stamp(stamp_for_sim(t_sample), msg.header.stamp)
            wrench_to_msg(wrench, msg.wrench)
            pub.publish(msg)

    def destroy_node(self):
        if self.render_path:
            try:
                self.twin.render_png(self.render_path, 960, 720)
                self.get_logger().info(f'wrote {self.render_path}')
            except Exception as exc:  # noqa: BLE001 - no GL: say so, do not fail the shutdown
                self.get_logger().error(f'offscreen rendering failed: {exc}')
        for server in self.rdt_servers:
            server.stop()
        self.twin.close()
        return super().destroy_node()


def main(args=None) -> int:
    return run_node(LabTwinNode, 'lab_twin_node', args)


if __name__ == '__main__':
    sys.exit(main())
