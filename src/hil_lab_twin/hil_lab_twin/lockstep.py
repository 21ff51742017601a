"""Lockstep coupling of a motion table and the twin, without DDS (deterministic, faster than real time).

The same rule objects as in the ROS graph: :class:`hil_motion_table.table.MotionTable`
turns each commanded pose into a joint command, which goes to the twin through the
forward position controller or as a streamed single-point joint trajectory, exactly as the
motion-table node publishes it; the twin then advances one command period. Tracking error
is measured versus the commanded pose at the twin's time, like the node's statistics.
"""

from __future__ import annotations

import math


from hil_motion_table.table import MotionTable, tracking_error
from hil_motion_table.tracking import PoseHistory, TrackingStats
from hil_common.errors import ConfigError


class TableInTheLoop:
    """One motion table driving robot ``ns`` of ``twin`` every ``period`` seconds."""

    def __init__(self, twin, ns: str, table: MotionTable, output: str = 'forward_position', period: float = 0.004,
                 trajectory_lead: float | None = None):
        if output not in ('forward_position', 'joint_trajectory'):
            raise ConfigError(f'output {output!r} is not forward_position or joint_trajectory')
        steps = period / twin.dt
        if not math.isclose(steps, round(steps)) or round(steps) < 1:
            raise ConfigError('period must be a whole number of twin time steps')
        self.twin, self.ns, self.table, self.output = twin, ns, table, output
        self.period, self.steps = period, int(round(steps))
        self.lead = period if trajectory_lead is None else trajectory_lead
        self.names = tuple(table.kin.joint_names)
        self.history = PoseHistory(horizon_s=1.0)
        self.stats = TrackingStats()
        self.table.initialize(twin.joint_state(ns).positions)

    def step(self, pose_cmd_in_base, twist_ff_body=None, record: bool = True):
        """Command one pose (stamped with the twin's time), advance one period, measure."""
        t = self.twin.time
        self.history.add(t, pose_cmd_in_base)
        out = self.table.step(pose_cmd_in_base, q_measured=self.twin.joint_state(self.ns).positions,
                              twist_ff_body=twist_ff_body, t=t)
        if self.output == 'forward_position':
            self.twin.command_positions(self.ns, out.q_command)
        else:
            self.twin.command_trajectory(self.ns, self.names, [(self.lead, out.q_command)])
        self.twin.step(self.steps)
        commanded = self.history.at(self.twin.time) or pose_cmd_in_base
        measured = self.table.measured_pose(self.twin.joint_state(self.ns).positions)
        error = tracking_error(commanded, measured)
        if record:
            self.stats.add(*error)
        return out, error

    def summary(self) -> dict:
        rms, peak = self.stats.rms, self.stats.max
        return {'rms_position_m': float(rms[0]), 'max_position_m': float(peak[0]),
                'rms_angle_rad': float(rms[1]), 'max_angle_rad': float(peak[1]), 'samples': self.stats.n,
                'faults': {k: v for k, v in self.table.stats.fault_counts.items() if v}}


def response_delay(servo) -> float:
    """First-order response delay of a twin robot: transport delay + 1/(2 pi bandwidth)."""
    return servo.delay_s + 1.0 / (2.0 * math.pi * servo.bandwidth_hz)


__all__ = ['TableInTheLoop', 'response_delay']
