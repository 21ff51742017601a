"""The docking of seed 003 closed through the MuJoCo lab twin, lockstep (no DDS; plain Python, no rclpy).

The loop of ``cisas_docking.launch.py lab:=twin`` in one process, with the same parameters (read from
the graph's node specs, :func:`hil_docking.graph.cisas_graph`) and the same rule objects:

* the twin (:func:`hil_docking.lab_twin.cisas_twin_config`): the CISAS arm, its F/T sensor, the probe
  on its spring of ``k_L`` and the target's plate; MuJoCo computes the contact;
* the F/T sensor read through the driver's chain (:func:`hil_sensors.ft_driver.wrench_chain`: tare at
  start, low-pass, dead band, rotation into the LVLH-aligned axes), ``f_L = -F . n``;
* the mock-up's position from the arm's joints (:class:`hil_docking.mockup_pose.MockupPose`);
* the docking rule (:class:`hil_docking.facility_rule.DockingFacility`: CW admittance, burns, virtual
  force), stepping on the sample times;
* the arm's motion table (:func:`hil_motion_table.motion_table_node.build_table`,
  :class:`~hil_motion_table.motion_table_node.CommandFrame`) commanding the twin's position servo.

Each control period, on the graph's timeline (the live graph on the twin's simulated clock runs the
same, and its restitution is this one's within the sensor's noise): the twin advances one period to
``t``; the rule steps on the sensor and the joints of ``t - dt`` (the docking node runs the step for
``t - dt`` once its clock reads ``t``), and its command goes to the table and from ``t`` on to the twin
(which delays it by its transport delay), as the table sends it (``output``: stamped single-point
trajectories in this graph). What it gives: a deterministic reference for the live twin graph, the
pictures of the docking in the twin (``frame_every_s``), and the impact measured by a real sensor model.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import numpy as np
import pinocchio as pin


#: How long the arm holds the start command before the mission starts [s]. The live graph holds it until the
#: arm's table answers (seconds); the transient it settles, the arm moving from its initial joints to the
#: table's solution for the start (0.4 N of probe ringing beyond the dead band), is over in well under this
#: (the servo's 5.3 ms time constant, the probe's 32 Hz at a damping ratio of 0.5).
HOLD_S = 0.5


class TwinDockingLab:
    """The lab side of ``cisas_docking.launch.py lab:=twin`` in one process: the twin, its sensor read
    through the driver's chain, the mock-up pose from the arm's joints, and the arm's motion table,
    all with the graph's parameters (``cisas_graph``'s node specs). ``start_dr_lvlh``: where the
    mock-up starts (default: the scenario's approach start)."""

    def __init__(self, scenario_file: Path, launch_arguments: dict | None = None, start_dr_lvlh=None):
        from hil_common.params import validate
        from hil_docking.graph import cisas_graph
        from hil_docking.lab_twin import CHASER_SENSOR, q_for_dr
        from hil_docking.mockup_pose import MockupPose
        from hil_docking.scenario import load_docking_scenario
        from hil_lab_twin.scene import config_from_yaml
        from hil_lab_twin.twin import LabTwin
        from hil_motion_table import motion_table_node as table_node
        from hil_sensors.ft_driver import check_parameters, wrench_chain

        self.graph = cisas_graph({**(launch_arguments or {}), 'scenario': str(scenario_file), 'lab': 'twin'})
        self.scenario = sc = load_docking_scenario(scenario_file)
        self.axis, self.dt = sc.docking_axis_lvlh, sc.control_period_s
        config = config_from_yaml(self.graph.node('/lab_twin').parameters['twin_config_yaml'])
        if start_dr_lvlh is not None:
            import dataclasses

            robot = dataclasses.replace(config.robots[0], q_initial=tuple(float(v) for v in q_for_dr(start_dr_lvlh, sc)))
            config = dataclasses.replace(config, robots=(robot,))
        self.twin = LabTwin(config)
        self.ft = check_parameters(self.graph.node('/chaser/ft_sensor').parameters)
        self.chain = wrench_chain(self.ft, self.ft['sensor_rate_hz'])
        self.read = self.twin.wrench_source(CHASER_SENSOR)
        values = validate(table_node.PARAMS, self.graph.node('/chaser/motion_table').parameters)
        self.table = table_node.build_table(values, clock=lambda: self.twin.time)
        # the table's output as the node sends it: positions, or single-point trajectories trajectory_lead_s ahead
        self.trajectory_lead_s = values['trajectory_lead_s'] if values['output'] == 'joint_trajectory' else None
        self.frame = table_node.CommandFrame(SimpleNamespace(**values), self.table.kin)
        self.mockup = MockupPose(self.table.kin, sc.dock_position_in_base_m)
        self.compensation = self.graph.node('/docking_facility').parameters['compensation'] or None

    def start(self) -> None:
        """The driver's tare once the stream starts (``software_bias.on_start``, the arm at rest), then the
        table from the measured joints; the mission's time starts here."""
        from hil_docking.lab_twin import CHASER_NS

        if self.ft['software_bias.on_start']:
            self.chain.tare.start(self.ft['software_bias.samples'])
            while self.chain.tare.active:
                self.twin.advance_to(self.twin.time + self.dt)
                self.chain.process(self.read()[0])
        q = self.twin.joint_state(CHASER_NS).positions
        self.frame.start(q)
        self.table.initialize(q)
        self.t0 = self.twin.time

    def measure(self, advance: bool = True) -> tuple[float, np.ndarray, float]:
        """One control period of the lab (with ``advance``: the twin advances), then ``(f_L, mock-up position in
        LVLH axes, time since start)`` as the driver and the pose node give them."""
        from hil_docking.lab_twin import CHASER_NS

        if advance:
            self.twin.advance_to(self.twin.time + self.dt)
        wrench = self.chain.process(self.read()[0])
        force = 0.0 if wrench is None else -float(np.asarray(wrench[:3]) @ self.axis)
        self.q = self.twin.joint_state(CHASER_NS).positions
        return force, self.mockup.pose_lvlh(self.q).translation, self.twin.time - self.t0

    def command(self, dr_lvlh, dv_lvlh) -> None:
        """The mock-up's commanded relative state, through the motion table to the arm's servo."""
        from hil_docking.lab_twin import CHASER_NS

        target = self.frame.target(pin.SE3(np.eye(3), np.asarray(dr_lvlh, dtype=float)))
        twist = self.frame.twist(np.concatenate([np.asarray(dv_lvlh, dtype=float), np.zeros(3)]))
        q_command = self.table.step(target, q_measured=self.q, twist_ff_body=twist).q_command
        if self.trajectory_lead_s is None:
            self.twin.command_positions(CHASER_NS, q_command)
        else:
            self.twin.command_trajectory(CHASER_NS, self.table.kin.joint_names, [(self.trajectory_lead_s, q_command)])

    def close(self) -> None:
        self.twin.close()


def run_twin_mission(scenario_file: Path, launch_arguments: dict | None = None,
                     on_step: Callable | None = None, max_time_s: float | None = None) -> dict:
    """Run the mission of ``scenario_file`` through the twin until the post-impact leg is over (or
    ``max_time_s`` of mission time). ``on_step(t_s, twin, rule)`` runs after every control period.
    Returns the rule's summary (restitution, impulse, closing speed, contact times) and the series
    ``t_s``, ``penetration_m``, ``force_n`` (``f_L`` as the driver chain gives it), ``command_lvlh``."""
    from hil_docking.facility_rule import DockingFacility

    lab = TwinDockingLab(scenario_file, launch_arguments)
    rule = DockingFacility(lab.scenario, lab.compensation)
    try:
        lab.start()
        series = {'t_s': [], 'penetration_m': [], 'force_n': [], 'command_lvlh': []}
        # the docking node holds the start command until its robot side answers (seconds in the live graph):
        # the arm moves from its initial joints to the table's solution for it, and the probe rings
        lab.measure(advance=False)
        for _ in range(int(round(HOLD_S / lab.dt))):
            lab.command(rule.state_lvlh[0:3], rule.state_lvlh[3:6])
            lab.measure()
        # the graph's timeline: the docking node's step for t runs when the clock reads t + dt (its period
        # is over), with the samples stamped t, and its command moves the arm from t + dt
        sample = lab.measure(advance=False)
        lab.command(rule.state_lvlh[0:3], rule.state_lvlh[3:6])
        while not rule.complete and (max_time_s is None or rule.t < max_time_s):
            force, position, t_s = sample
            sample = lab.measure()
            rule.step(force, position, sample_time_s=t_s)
            state = rule.begin_tick()
            lab.command(state[0:3], state[3:6])
            series['t_s'].append(rule.t)
            series['penetration_m'].append(float(position @ lab.axis))
            series['force_n'].append(force)
            series['command_lvlh'].append(state[0:3].copy())
            if on_step is not None:
                on_step(rule.t, lab.twin, rule)
    finally:
        lab.close()
    return {'restitution': rule.restitution, 'impulse_n_s': rule.impulse_n_s,
            'closing_speed_in_m_s': rule.closing_speed_in_m_s, 'contact_start_s': rule.contact_start_s,
            'separation_s': rule.separation_s, 'complete': rule.complete, 't_s': rule.t,
            **{k: np.asarray(v) for k, v in series.items()}}


def twin_mission_with_pictures(scenario_file: Path, out: Path, every_s: float = 0.1, say=print,
                               launch_arguments: dict | None = None, max_time_s: float | None = None) -> tuple[dict, list[Path]]:
    """:func:`run_twin_mission` rendered offscreen while it runs (:mod:`hil_lab_twin.animation`): an
    animation per view (the arm and the target; close on the probe and the plate, with the contact force as
    an arrow at the ball) and stills of the
    approach's start, the contact's deepest point and the post-impact leg. The result also holds the
    frames (``frames[view]``) and their times (``frame_times_s``)."""
    from hil_docking.lab_twin import CHASER_NS, CHASER_SENSOR
    from hil_lab_twin.animation import TwinCamera, View, add_arrow, write_animation, write_still

    frames, times, state = {}, [], {}

    def force_arrow(scene):
        """The contact force on the probe (the sensor's reading less its reading at the start, the probe's
        weight) as an arrow at the ball, 0.01 m per N."""
        twin = state['twin']
        reading = twin.wrench_true(CHASER_SENSOR)[:3]
        state.setdefault('rest', reading.copy())
        rotation = twin.site_pose_in_world(f'{CHASER_SENSOR}_site').rotation
        add_arrow(scene, twin.site_pose_in_world(f'{CHASER_NS}_probe_tip').translation,
                  0.01 * (rotation @ (reading - state['rest'])), 0.006, (0.2, 0.5, 1.0, 1.0))

    def grab(t_s, twin, rule):
        if 'camera' not in state:
            plate = twin.site_pose_in_world('dock_target_face').translation
            base = twin.base_pose('chaser').translation
            state['views'] = [View('facility', lookat=tuple(0.5 * (plate + base) + np.array([0.0, 0.0, 0.2])), distance=2.2,
                                   azimuth=200.0, elevation=-20.0),
                              View('contact', lookat=tuple(plate - 0.08 * np.asarray(rule.axis)), distance=0.5, azimuth=180.0, elevation=-15.0)]
            state['camera'] = TwinCamera(twin, 480, 352)
            state['twin'] = twin
            state['next'] = 0.0
        near_contact = rule.contact_start_s is not None and (rule.separation_s is None or t_s < rule.separation_s + 0.2)
        if t_s + 1e-9 >= state['next'] or (near_contact and len(times) and t_s - times[-1] >= 0.02 - 1e-9):
            for view in state['views']:
                frames.setdefault(view.name, []).append(state['camera'].render(view, force_arrow))
            times.append(t_s)
            state['next'] = t_s + every_s

    try:
        result = run_twin_mission(scenario_file, launch_arguments, on_step=grab, max_time_s=max_time_s)
    finally:
        if 'camera' in state:
            state['camera'].close()
    files = [write_animation(out / f'twin_docking_{name}', shots, fps=10.0) for name, shots in frames.items()]
    t = np.asarray(times)
    deepest = float(result['t_s'][int(np.argmax(result['penetration_m']))])
    for label, when in (('approach', 0.0), ('contact', deepest), ('post_impact', float(t[-1]) if len(t) else 0.0)):
        k = int(np.argmin(np.abs(t - when)))
        files += [write_still(out / f'twin_docking_{label}_{name}.png', shots[k]) for name, shots in frames.items()]
    result['frame_times_s'], result['frames'] = t, frames
    return result, files
