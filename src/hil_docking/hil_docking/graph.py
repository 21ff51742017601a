"""The ROS graph of the seed 003 docking, defined once (no rclpy, no launch).

:func:`cisas_graph` builds the :class:`hil_bringup.graphs.Graph` of ``cisas_docking.launch.py``
from the launch arguments :data:`CISAS_ARGS` (strings, as ``ros2 launch`` gives them) and the
docking scenario. The launch file (``share/hil_docking/launch/cisas_docking.launch.py``), the
live stage of ``docking_demo`` and the DDS tests (:mod:`hil_docking.live`) start this one
definition. The builder lives here, not in :mod:`hil_bringup.graphs`, because ``hil_docking``
depends on ``hil_bringup`` (recorder, graph runner), not the reverse.

The graph with ``lab:=emulated`` (the default):

* stage ``lab``: ``facility_emulator_node`` (:mod:`hil_docking.facility_emulator_node`), the
  CISAS robot as an ideal robot with the loop delay and the facility's lumped contact;
* stage ``stack``: ``docking_facility_node`` (:mod:`hil_docking.docking_facility_node`), the CW
  relative admittance with the planned burns and the virtual force (seed 003 Fig. 5).

With ``lab:=cisas`` (the real facility, :func:`cisas_lab_nodes`) the stage ``io`` replaces the
emulator: the CISAS arm's ``motion_table_node``, ``mockup_pose_node`` and the chaser's F/T driver.
``lab:=twin`` runs the same ``io`` nodes against the MuJoCo lab twin of the facility (stage ``lab``:
``lab_twin_node`` with :func:`hil_docking.lab_twin.cisas_twin_config`, the arm, its F/T sensor
over RDT/UDP on 127.0.0.1, the probe on its spring ``k_L`` and the target's plate), on the
twin's simulated clock: the contact happens in the twin and the sensor measures it.

Both read the same scenario file. A scenario the designer finds unstable for its facility loop
(equivalent mass below the exact ``m_min``) is refused here, before anything starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from hil_bringup.graphs import (READY_TIMEOUT_ARG, RECORD_ARGS, Arg, Graph, GraphError, NodeSpec, Ready, Stage, float_arg,
                                resolve_arguments, simulated_clock_twin)
from hil_docking.contact import COMPENSATIONS

CISAS_ARGS = (
    Arg('scenario', 'cisas_docking', 'docking scenario: a name in share/hil_docking/scenarios or a YAML path'),
    Arg('lab', 'emulated', 'the lab side of the loop: the emulated CISAS robot and contact (facility_emulator_node), '
                           'or the CISAS facility (cisas: its arm through motion_table_node robot:=cisas, the mock-up '
                           'pose from its joint states, its F/T sensor; docs/docking.md), or its MuJoCo lab twin (twin: '
                           'the same nodes against the twin, with the probe and the plate of k_L)',
        ('emulated', 'cisas', 'twin')),
    Arg('ft_host', '127.0.0.1', "lab:=cisas: the chaser F/T sensor's address (a lab opts in to its network)"),
    Arg('ft_port', '49152', "lab:=cisas|twin: the chaser F/T sensor's RDT UDP port"),
    Arg('servo_bandwidth_hz', '30', "lab:=twin: position-loop bandwidth of the twin's CISAS arm [Hz] (a small arm; "
                                    'hil_lab_twin ServoConfig, transport delay 4 ms)'),
    READY_TIMEOUT_ARG,
    Arg('compensation', '', "virtual-force compensation, overriding the scenario's facility.compensation (empty: "
                            'the scenario value)', ('',) + COMPENSATIONS),
    Arg('pose_timeout_s', '2.0', 'the docking node holds while the last robot pose arrived longer ago than this [s] '
                                 '(the emulated robot answers every command, so only a dead robot stops it)'),
    *RECORD_ARGS,
)

_POSE, _TWIST, _WRENCH = 'geometry_msgs/msg/PoseStamped', 'geometry_msgs/msg/TwistStamped', 'geometry_msgs/msg/WrenchStamped'
CISAS_STATUS_TOPIC = 'facility/status'
CISAS_RECORD_TOPICS = (
    ('chaser/pose_cmd', _POSE), ('chaser/twist_cmd', _TWIST), ('facility/robot_pose_lvlh', _POSE),
    ('facility/ft/wrench', _WRENCH), ('facility/virtual_wrench', _WRENCH),
    (CISAS_STATUS_TOPIC, 'diagnostic_msgs/msg/DiagnosticStatus'),
)
#: Latched (transient-local) topics among them.
CISAS_LATCHED_TOPICS = (CISAS_STATUS_TOPIC,)
#: The arm's motion table commands once it has the arm's joint states (before, it drops the poses it is
#: sent); it publishes the realised twist from each. The docking node starts after that.
TABLE_READY = ('/chaser/table/twist_measured', 'geometry_msgs/msg/TwistStamped')


def scenario_file(name_or_path: str) -> Path:
    """The scenario file a ``scenario:=`` argument names (a ``.yaml`` path, else a shipped scenario)."""
    from hil_docking.scenario import scenario_path

    path = Path(name_or_path) if name_or_path.endswith(('.yaml', '.yml')) else scenario_path(name_or_path)
    if not path.is_file():
        raise GraphError(f'launch argument scenario:={name_or_path!r}: no such scenario ({path})')
    return path.resolve()


def cisas_graph(given: Mapping[str, str] | None = None) -> Graph:
    """The node set of ``cisas_docking.launch.py`` for launch arguments ``given`` (strings)."""
    from hil_docking.facility_rule import DockingFacility
    from hil_docking.scenario import load_docking_scenario

    args = resolve_arguments(CISAS_ARGS, given)
    path = scenario_file(args['scenario'])
    scenario = load_docking_scenario(path)                     # errors name the field
    DockingFacility(scenario, args['compensation'] or None)     # refuses a loop the designer finds unstable
    facility = {'scenario_file': str(path), 'compensation': args['compensation'],
                'pose_timeout_s': float_arg(args, 'pose_timeout_s', 0.001, 10.0)}
    if args['lab'] in ('emulated', 'twin'):
        # The emulated lab and the twin on its simulated clock wait for the stack: when the machine is slow,
        # the docking node waits for the robot's samples and never drops steps; the simulated timeline
        # falls behind the wall clock. The real facility does not wait (a robot moves on), so there the
        # node drops the steps it missed.
        facility['max_catch_up'] = 10**9
    # the mission starts once its robot side listens to the commands (DDS matches it late on a busy machine)
    facility['command_consumers'] = ['/facility_emulator'] if args['lab'] == 'emulated' else ['/chaser/motion_table']
    if args['lab'] != 'emulated':      # and once the arm's table answers them (its tracking errors cover them)
        facility['robot_answer_topic'] = '/chaser/table/tracking_error'
    stack = Stage('stack', (NodeSpec('hil_docking', 'docking_facility_node', 'docking_facility', parameters=facility,
                                     use_sim_time=args['lab'] == 'twin'),))
    if args['lab'] == 'cisas':
        return Graph('cisas_docking', (Stage('io', cisas_lab_nodes(args, path, scenario),
                                             Ready((TABLE_READY,), timeout_s=float_arg(args, 'ready_timeout_s', 1.0, 3600.0))),
                                       stack),
                     CISAS_RECORD_TOPICS).check()
    if args['lab'] == 'twin':
        return cisas_twin_graph(args, path, scenario, stack)
    return Graph('cisas_docking', (
        Stage('lab', (NodeSpec('hil_docking', 'facility_emulator_node', 'facility_emulator',
                               parameters={'scenario_file': str(path)}),)),
        stack,
    ), CISAS_RECORD_TOPICS).check()


def cisas_lab_nodes(args: Mapping[str, str], path: Path, scenario) -> tuple:
    """``lab:=cisas``: the CISAS arm as the chaser's motion table, the mock-up pose from its joints,
    and its F/T driver, all under ``/chaser`` (the arm's ros2_control topics ``/chaser/joint_states``
    and ``/chaser/forward_position_controller/commands``).

    The table commands the mock-up in the docking port's frame: ``command_frame`` nominal with
    ``N = (I, arm.dock_position_in_base_m)`` (the base axes are the LVLH-aligned lab axes) and the
    commanded body at the flange with the LVLH axes, ``Y = (R_home^T, 0)``, so the flange goes to
    ``(R_home, p_dock + dr)``: the flange orientation of the arm's home, held (as the Newton-Euler
    reference of :func:`hil_docking.feedforward.cw_joint_reference` holds it). The F/T driver
    expresses the wrench in those axes: the sensor is assumed at the flange with the flange's axes
    (no mounting rotation in the scenario; a lab states its own), so its constant rotation into the
    LVLH-aligned axes is ``R_home``."""
    import numpy as np
    import pinocchio as pin

    from hil_bringup.facility import xyz_rpy
    from hil_bringup.graphs import int_arg
    from hil_motion_table.kinematics_helpers import make_kinematics

    kin = make_kinematics('cisas')
    rotation_home = kin.forward(kin.spec.q_home).rotation
    q_sensor = pin.Quaternion(rotation_home)
    table = {'robot': 'cisas', 'command_frame': 'nominal',
             'pose_nominal_in_base_xyz_rpy': xyz_rpy(pin.SE3(np.eye(3), np.asarray(scenario.dock_position_in_base_m))),
             'pose_body_in_flange_xyz_rpy': xyz_rpy(pin.SE3(rotation_home.T, np.zeros(3)))}
    ft = {'sensor_ip': args['ft_host'], 'sensor_port': int_arg(args, 'ft_port', 1, 65535), 'sensor_frame': 'chaser_ft_sensor',
          'software_bias.on_start': True,       # the probe's weight (a lab tares its sensor with the mock-up on)
          'target_frame.enabled': True, 'target_frame.frame_id': 'target_lvlh',
          'target_frame.sensor_in_target_xyzw': [float(q_sensor.x), float(q_sensor.y), float(q_sensor.z), float(q_sensor.w)]}
    return (
        NodeSpec('hil_sensors', 'ft_sensor_node', 'ft_sensor', 'chaser', ft,
                 remappings=(('ft/wrench', '/facility/ft/wrench'),)),
        NodeSpec('hil_motion_table', 'motion_table_node', 'motion_table', 'chaser', table,
                 remappings=(('table/pose_cmd', '/chaser/pose_cmd'), ('table/twist_cmd', '/chaser/twist_cmd'))),
        NodeSpec('hil_docking', 'mockup_pose_node', 'mockup_pose', 'chaser', {'scenario_file': str(path)},
                 remappings=(('facility/robot_pose_lvlh', '/facility/robot_pose_lvlh'),)),
    )


def cisas_twin_graph(args: Mapping[str, str], path: Path, scenario, stack: Stage) -> Graph:
    """``lab:=twin``: the nodes of ``lab:=cisas`` (:func:`cisas_lab_nodes`) against the MuJoCo lab twin
    of the facility (:func:`hil_docking.lab_twin.cisas_twin_config`) on its simulated clock.

    The twin steps at the docking node's control rate (one joint state and one F/T sample per step),
    and publishes ``/clock`` once the F/T driver has passed the step's sample on, so every step of
    the docking node uses the pose and the wrench of its own time, as the emulated lab gives them.
    Two settings differ from ``lab:=cisas`` so that the loop is the same in every run: the driver
    stamps each sample with the twin's time of it (``sensor_clock_stamps``), and the arm's table sends
    stamped single-point trajectories (``joint_trajectory``, not ``forward_position``), of which the twin
    takes for its step from ``t`` only the one stamped ``t`` (``command_stamps``)."""
    import dataclasses

    from hil_bringup.graphs import int_arg
    from hil_docking.lab_twin import CHASER_SENSOR, cisas_twin_config
    from hil_lab_twin.scene import ServoConfig, config_to_yaml

    rate_hz = 1.0 / scenario.control_period_s
    port = int_arg(args, 'ft_port', 1, 65535)
    timeout_s = float_arg(args, 'ready_timeout_s', 1.0, 3600.0)
    twin = cisas_twin_config(scenario, ServoConfig(bandwidth_hz=float_arg(args, 'servo_bandwidth_hz', 0.1, 500.0)))
    lab = NodeSpec('hil_lab_twin', 'lab_twin_node', 'lab_twin', parameters={
        'layout': 'config', 'twin_config_yaml': config_to_yaml(twin), 'publish_rate_hz': rate_hz,
        'rdt_ports': [f'{CHASER_SENSOR}:{port}'], 'publish_wrench': False,
        **simulated_clock_twin(['/facility/ft/wrench'])})
    io = []
    for node in cisas_lab_nodes({**args, 'ft_host': '127.0.0.1'}, path, scenario):
        extra = {}
        if node.executable == 'ft_sensor_node':
            # the docking node steps on the samples' stamps: each carries the twin's time of its sample (its
            # ft_sequence), not the driver's clock when it read it, so the loop is the same in every run
            extra = {'sensor_rate_hz': 1000.0, 'publish_rate_hz': rate_hz, 'deadband.enabled': True,
                     'sensor_clock_stamps': True}
        elif node.executable == 'motion_table_node':
            # On the twin's clock a gap in the arm's joint states is the table's own stall (the twin publishes
            # them every step and waits for the table once it commands): the table rides through it, as the
            # snare and teleop graphs' tables do, instead of holding for joint_states_recover_s. Before its
            # first command the twin does not wait for it; a table held up then had judged its first
            # command stale and held the arm still for 0.5 s of the approach.
            # Stamped single-point trajectories (ros2_control's joint_trajectory_controller, as in the snare and
            # teleop twins): the twin steps from t once the arm's command stamped t has come (command_stamps),
            # never on one still in flight from the step before, so the loop's delay is the same in every run.
            extra = {'output': 'joint_trajectory', 'period_s': scenario.control_period_s,
                     'trajectory_lead_s': scenario.control_period_s,
                     'joint_states_timeout_s': 1.0, 'joint_states_recover_s': 0.02}
        io.append(dataclasses.replace(node, parameters={**node.parameters, **extra}, use_sim_time=True))
    return Graph('cisas_docking', (
        Stage('lab', (lab,), Ready((('/chaser/joint_states', 'sensor_msgs/msg/JointState'),), timeout_s=timeout_s)),
        Stage('io', tuple(io), Ready((('/facility/ft/wrench', 'geometry_msgs/msg/WrenchStamped'), TABLE_READY),
                                     timeout_s=timeout_s, max_force_n=1.0)),
        stack,
    ), CISAS_RECORD_TOPICS).check()
