"""Docking facility node: one :class:`hil_docking.facility_rule.DockingFacility` tick per control period.

Topics (relative names; remap in the launch file). Vectors are in the LVLH-aligned lab axes,
positions relative to the target's docking port:

* in ``facility/ft/wrench`` (geometry_msgs/WrenchStamped): the processed F/T wrench, i.e. the
  force of the target mock-up on the chaser mock-up. The facility force along the docking axis
  is ``f_L = -F . n``;
* in ``facility/robot_pose_lvlh`` (geometry_msgs/PoseStamped): the measured position of the
  chaser mock-up (the robot's forward kinematics). The rule differences it by the header
  stamps (an unstamped sample is taken as valid at the current step) for the rate;
* out ``chaser/pose_cmd`` (PoseStamped) and ``chaser/twist_cmd`` (TwistStamped): the simulated
  relative state ``[dr; dv]``, which the motion table makes the robot reproduce, stamped with
  the time on the simulated timeline it belongs to (below);
* out ``facility/virtual_wrench`` (WrenchStamped): ``f_V`` on the chaser mock-up;
* out ``facility/status`` (diagnostic_msgs/DiagnosticStatus, transient local): the phase
  (``message``), the simulated time ``t_s``, ``epoch_s`` (the node-clock time of ``t_s = 0``),
  the impulse, the contact and separation times, the restitution and the state once separated,
  and the deadline misses (``late_sample_steps``, ``pose_sample_misses``,
  ``wrench_sample_misses``, ``dropped_steps``). Published at every phase change, every
  ``status_period_s`` of simulated time, and when the mission is complete.

The scenario YAML is the single source of truth (``scenario_file``; empty: the installed
``cisas_docking.yaml``). ``compensation`` may override its ``facility.compensation``. Until a
robot pose is valid and the nodes named in ``command_consumers`` (the robot side: the motion
table or the emulated lab) and at least ``min_command_subscribers`` subscribers listen to the
commands, the node publishes the initial command and does not step. A count alone is not enough:
a recorder and an observer make two subscribers while the table has not yet been matched (DDS
discovery under load takes seconds), and a mission that starts then runs without its robot. Once the post-impact leg has run
``post_impact.duration_s`` the mission is complete: the node publishes its last status
(``complete``) and stops stepping; the robot holds the last command.

**The simulated timeline.** Step ``k`` of the rule belongs to the node-clock time
``epoch_s + k dt``; the command it produces is stamped with the time of the state it holds,
``epoch_s + (k + 1) dt``. A step uses the robot pose and the F/T wrench valid at its time: the
latest sample stamped at or before it (:class:`hil_docking.facility_rule.StampedSamples`; a
sample is never used before its stamp). A step is due on the node clock
(:class:`hil_common.pacing.StepPacer`: a late timer catches up, at most ``max_catch_up`` steps
per callback) and runs once the pose and the wrench valid at its time are final (a sample
stamped at or after it has arrived; stamps increase). When they are late the step waits for them (a deadline miss, counted once per step
in ``late_sample_steps``): the loop delay stays the one the robot realised, and the simulated
timeline falls behind the wall clock instead. Steps beyond ``max_catch_up`` are dropped
(``dropped_steps``) and the timeline slips by them; a step that then runs with a sample older
than its period counts in ``pose_sample_misses`` / ``wrench_sample_misses``. A robot pose that
arrived longer than ``pose_timeout_s`` ago stops the steps; they resume on a new timeline once
a pose is valid again.
"""

from __future__ import annotations

import sys

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray

from hil_common.consumers import fully_qualified_names_check, listening_nodes, missing_consumers
from hil_common.conversions import seconds_to_stamp, stamp_to_seconds
from hil_common.pacing import StepPacer
from hil_common.polled import PolledSubscription
from hil_common.params import Param, declare_parameters
from hil_common.ros_main import run_node
from hil_docking.contact import COMPENSATIONS
from hil_docking.facility_rule import DockingFacility, RobotAnswer, StampedSamples
from hil_docking.scenario import load_docking_scenario

PARAMS = [
    Param('scenario_file', '', 'Docking scenario YAML; empty: the installed cisas_docking.yaml'),
    Param('compensation', '', 'Override of facility.compensation (empty: the scenario value)',
          choices=('',) + COMPENSATIONS),
    Param('frame_id', 'target_lvlh', 'Frame of the published commands (LVLH-aligned lab axes at the port)'),
    Param('pose_timeout_s', 0.1, 'The node stops ticking while the robot pose is older than this [s]', min=0.001,
          max=10.0),
    Param('max_catch_up', 20, 'Steps a late timer callback may catch up, at most (beyond: dropped)', min=1,
          max=10**9),
    Param('command_consumers', [], 'Fully qualified names of the nodes that must subscribe to chaser/pose_cmd '
          'before the node starts stepping (the robot side, e.g. /chaser/motion_table)', type='str[]',
          check=fully_qualified_names_check),
    Param('robot_answer_topic', '', 'std_msgs/Float64MultiArray topic on which the robot side answers the commands '
          'with, as its last element, the time up to which it has realised them (the motion table\'s '
          'table/tracking_error: [position, angle, stamp]). The first start waits for an answer to a command '
          'of this node: a table that took its first commands late (held up on a busy machine, the twin not yet '
          'waiting for it) left the arm behind the approach. Empty: no wait'),
    Param('min_command_subscribers', 1, 'The node starts stepping once this many subscribers listen to chaser/pose_cmd '
          '(the robot side, and a recorder that must see the whole mission)', min=0, max=100),
    Param('status_period_s', 0.1, 'facility/status is published every this much simulated time [s] (and at '
          'every phase change)', min=0.001, max=60.0),
]
OUTPUT_DEPTH = 1000
STATUS_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)



class DockingFacilityNode(Node):
    def __init__(self):
        super().__init__('docking_facility')
        p = declare_parameters(self, PARAMS)
        self.scenario = load_docking_scenario(p.scenario_file or None)
        self.rule = DockingFacility(self.scenario, p.compensation or None)
        self.frame_id, self.pose_timeout_s, self.max_catch_up = p.frame_id, p.pose_timeout_s, p.max_catch_up
        self.min_command_subscribers = p.min_command_subscribers
        self.command_consumers = tuple(p.command_consumers)
        self._consumers_reported = None
        self.answer = RobotAnswer(bool(p.robot_answer_topic))
        self._answer_sub = None
        if p.robot_answer_topic:
            # taken by hand while the node waits to start (hil_common.polled), never woken for: nothing is
            # added to or removed from the executor's entities once the mission runs (it was destroyed at
            # the start, the suspected cause of a rare stall there: docs/docking.md)
            self._answer_sub = PolledSubscription(self, Float64MultiArray, p.robot_answer_topic, 10, raw=False)
            self.answer_topic_name = self._answer_sub.topic_name
        self._answer_reported = False
        self.status_every = max(1, int(round(p.status_period_s / self.scenario.control_period_s)))
        self.pacer: StepPacer | None = None
        self.epoch_s: float | None = None          # node-clock time of the rule's t = 0
        self.axis = self.rule.axis
        dt = self.scenario.control_period_s
        self.poses, self.forces = StampedSamples(dt), StampedSamples(dt)
        self.pose_time_s: float | None = None
        self.dropped_steps = 0
        self.late_sample_steps = 0
        self._waiting_k = -1
        # a deep history: a reader held up on a busy machine (the live run's observer, a recorder) gets
        # the commands it missed resent when it runs again, instead of a gap (1 s at 1 kHz)
        self.pub_pose = self.create_publisher(PoseStamped, 'chaser/pose_cmd', OUTPUT_DEPTH)
        self.pub_twist = self.create_publisher(TwistStamped, 'chaser/twist_cmd', OUTPUT_DEPTH)
        self.pub_virtual = self.create_publisher(WrenchStamped, 'facility/virtual_wrench', OUTPUT_DEPTH)
        self.pub_status = self.create_publisher(DiagnosticStatus, 'facility/status', STATUS_QOS)
        self.create_subscription(WrenchStamped, 'facility/ft/wrench', self.on_wrench, 100)
        self.create_subscription(PoseStamped, 'facility/robot_pose_lvlh', self.on_pose, 100)
        self.completed = False
        self.timer = self.create_timer(self.scenario.control_period_s, self.tick)
        self.get_logger().info(
            f'{self.scenario.name}: m = {self.rule.mass_kg:g} kg, k_V = {self.rule.gains.stiffness_n_m:.4g} N/m, '
            f'b_V = {self.rule.gains.damping_ns_m:.4g} N s/m ({self.rule.compensation}), '
            f'm_min = {self.rule.m_min_kg:.3g} kg')

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _sample_stamp(self, header) -> float:
        """The header stamp; an unstamped (zero) sample is taken as valid at the current step."""
        stamp = stamp_to_seconds(header.stamp)
        if stamp > 0.0:
            return stamp
        return self._now() if self.pacer is None else self.epoch_s + self.rule.k * self.scenario.control_period_s

    def on_wrench(self, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        self.forces.put(self._sample_stamp(msg.header), -float(np.array([f.x, f.y, f.z]) @ self.axis))
        self._resume()

    def on_answer(self, msg: Float64MultiArray) -> None:
        if len(msg.data):
            self.answer.answer(float(msg.data[-1]))

    def destroy_node(self):
        if self._answer_sub is not None:
            self._answer_sub.destroy()
        return super().destroy_node()

    def robot_answers(self) -> bool:
        """Whether the robot side has answered a command of this node (:class:`RobotAnswer`); the answers
        that came are taken now, until one does (the mission's own timeline judges from there)."""
        if self._answer_sub is not None and not self.answer.answered:
            for msg in self._answer_sub.take_all():
                self.on_answer(msg)
        if self.answer.answered:
            return True
        if not self._answer_reported:
            self._answer_reported = True
            self.get_logger().info(f'waiting for the robot side to answer the commands on {self.answer_topic_name}')
        return False

    def on_pose(self, msg: PoseStamped) -> None:
        q = msg.pose.position
        self.pose_time_s = self._now()
        self.poses.put(self._sample_stamp(msg.header), np.array([q.x, q.y, q.z]))
        self._resume()

    def _resume(self) -> None:
        """A step waiting for its samples runs as soon as they are there, not at the next tick."""
        if self.pacer is not None and self._waiting_k == self.rule.k and not self.completed:
            self.advance(self._now())

    def tick(self) -> None:
        if self.completed:
            return
        now = self._now()
        fresh = self.pose_time_s is not None and now - self.pose_time_s <= self.pose_timeout_s
        dt = self.scenario.control_period_s
        if self.pacer is None:                    # (re)start once a pose is valid now (not only stamped later)
            fresh = fresh and self.poses.ready(now) and self.consumers_listen() and self.robot_answers()
        if not fresh:
            if self.pacer is not None:
                self.dropped_steps += self.pacer.overruns
            self.pacer = None                     # hold; resume without catching up
            if self.answer.first_command_s is None and self.consumers_listen():
                self.answer.command_heard(now)    # the first command its robot side hears
            self.publish(self.rule.state_lvlh, now)
        elif self.pacer is None:                  # (re)start: the timeline continues from now
            self.pacer = StepPacer(dt, now, max_catch_up=self.max_catch_up)
            self.epoch_s = now - self.rule.k * dt
            self.publish(self.rule.state_lvlh, now)
        else:
            self.advance(now)

    def consumers_listen(self) -> bool:
        """Whether the robot side (``command_consumers``) and ``min_command_subscribers`` listen to the commands."""
        if self.pub_pose.get_subscription_count() < self.min_command_subscribers:
            return False
        if not self.command_consumers:
            return True
        missing = missing_consumers(self.command_consumers, listening_nodes(self, self.pub_pose))
        if missing != self._consumers_reported:
            self._consumers_reported = missing
            if missing:
                self.get_logger().info(f'waiting for {", ".join(missing)} to subscribe to {self.pub_pose.topic_name}')
        return not missing

    def advance(self, now: float) -> None:
        """Run the steps due at ``now`` whose samples are final; the others wait."""
        dt = self.scenario.control_period_s
        overruns = self.pacer.overruns
        due = self.pacer.due(now)
        if self.pacer.overruns > overruns:         # dropped steps: the simulated timeline slips behind
            self.epoch_s += (self.pacer.overruns - overruns) * dt
        for i in range(due):
            t_k = self.epoch_s + self.rule.k * dt
            if not (self.poses.complete_at(t_k) and self.forces.complete_at(t_k)):
                # its samples are late: the step waits for them (a deadline miss, counted once per
                # step); the steps not run now are due again when a sample arrives or at the next tick
                self.pacer.steps_done -= due - i
                if self._waiting_k != self.rule.k:
                    self._waiting_k = self.rule.k
                    self.late_sample_steps += 1
                break
            self.step(t_k)
            if self.completed:
                return
        if self.pacer.overruns > overruns:
            self.get_logger().warning(f'{self.dropped_steps + self.pacer.overruns} steps dropped so far '
                                      '(late timer)', throttle_duration_sec=5.0)

    def step(self, t_s: float) -> None:
        """One rule step at node-clock time ``t_s`` with the samples valid then; publishes its command."""
        pose, force = self.poses.at(t_s), self.forces.at(t_s)       # never None for poses: ready at the start
        phase = self.rule.phase
        self.rule.step(0.0 if force is None else force[1], pose[1], sample_time_s=pose[0])
        self.rule.begin_tick()                    # a burn due at the new step belongs to its command
        self.publish(self.rule.state_lvlh, t_s + self.scenario.control_period_s)
        if self.rule.complete:                    # the mission is over: report it and go quiet
            self.completed = True
            self.timer.cancel()
            self.publish_status()
            self.get_logger().info(f'mission complete at t = {self.rule.t:.3f} s (restitution '
                                   f'{self.rule.restitution:.4f}, late-sample steps {self.late_sample_steps})')
        elif self.rule.phase != phase or self.rule.k % self.status_every == 0:
            self.publish_status()

    def publish_status(self) -> None:
        r = self.rule
        values = {'phase': r.phase, 't_s': r.t, 'epoch_s': self.epoch_s, 'impulse_n_s': r.impulse_n_s,
                  'closing_speed_in_m_s': r.closing_speed_in_m_s, 'contact_start_s': r.contact_start_s,
                  'separation_s': r.separation_s, 'restitution': r.restitution,
                  'separation_state_lvlh': None if r.separation_state is None else r.separation_state.tolist(),
                  'late_sample_steps': self.late_sample_steps,
                  'pose_sample_misses': self.poses.misses, 'wrench_sample_misses': self.forces.misses,
                  'dropped_steps': self.dropped_steps + (self.pacer.overruns if self.pacer else 0)}
        values['complete'] = self.completed
        msg = DiagnosticStatus(level=DiagnosticStatus.OK, name=self.get_fully_qualified_name(),
                               message='complete' if self.completed else r.phase)
        msg.values = [KeyValue(key=k, value='' if v is None else repr(v)) for k, v in values.items()]
        self.pub_status.publish(msg)

    def publish(self, state, t_s: float) -> None:
        pose = PoseStamped()
        seconds_to_stamp(t_s, pose.header.stamp)
        pose.header.frame_id = self.frame_id
        pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = (float(v) for v in state[0:3])
        pose.pose.orientation.w = 1.0
        self.pub_pose.publish(pose)
        twist = TwistStamped()
        twist.header = pose.header
        twist.twist.linear.x, twist.twist.linear.y, twist.twist.linear.z = (float(v) for v in state[3:6])
        self.pub_twist.publish(twist)
        virtual = WrenchStamped()
        virtual.header = pose.header
        f = -self.rule.last_force_virtual_n * self.axis
        virtual.wrench.force.x, virtual.wrench.force.y, virtual.wrench.force.z = (float(v) for v in f)
        self.pub_virtual.publish(virtual)


def main(args=None) -> int:
    return run_node(DockingFacilityNode, 'docking_facility', args)


if __name__ == '__main__':
    sys.exit(main())
