"""The ROS graph of the HIL snare capture (seed 000 run 3 in the lab), defined once (no rclpy, no launch).

``snare_capture.launch.py``, ``snare_demo`` and the DDS test start :func:`snare_graph`; it is a
:class:`hil_bringup.graphs.Graph` like the Envisat and teleoperation graphs, so
:func:`hil_bringup.launch_common.graph_launch_description` and
:class:`hil_bringup.graph_runner.RunningGraph` take it unchanged.

Nodes (:mod:`hil_snare.lab` has the frames):

* ``lab_twin`` (``use_sim:=true``; :mod:`hil_snare.snare_twin_node`): the MuJoCo lab with the LEE
  mock-up on the KR 120 (``servicer``) and the GF mock-up on the UR10e (``client``) at Table 3's
  relative pose, the wires between them (on compliant carriages, ``mounts:=true``: :func:`snare_mount`),
  both F/T sensors served over RDT/UDP;
* ``client/ft_sensor``, ``servicer/ft_sensor``: the F/T drivers (tared at start);
* ``client/motion_table``, ``servicer/motion_table``: each table moves its mock-up's body (the HTV
  CoM, the LEE) relative to where it started;
* ``client_admittance``: the HTV (16 500 kg, :func:`hil_snare.targets.htv`) driven by the measured
  wire wrench (seed 004 Eq. 11), starting at rest in the drift frame;
* ``snare_servicer``: the SSRMS flexible-joint arm with its fixed ISS base, the measured wrench
  through ``J_e^T F_e``, its LEE streamed in the drift frame (seed 000 Eqs. 3-7).

Start order: the lab until both robots publish joints, then the drivers and tables until both
sensors stream tared wrenches, then the two simulations (the capture starts with them).
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from hil_bringup.graphs import (FT_HOST_ARG, LAB_CLOCK_ARG, READY_TIMEOUT_ARG, RECORD_ARGS, Arg, Graph, GraphError,
                                NodeSpec, Ready, Stage, float_arg, ft_ports, resolve_arguments, simulated_clock_twin,
                                twin_and_clock)

SNARE_ARGS = (
    Arg('scenario', 'htv_capture', 'snare scenario (name or YAML path) of kind htv_capture'),
    Arg('use_sim', 'true', 'MuJoCo lab twin with the wires (true) or the real facility (false)', ('true', 'false')),
    LAB_CLOCK_ARG,
    FT_HOST_ARG,
    Arg('client_ft_port', '49152', 'RDT UDP port of the F/T sensor under the GF mock-up'),
    Arg('servicer_ft_port', '49153', 'RDT UDP port of the F/T sensor behind the LEE mock-up'),
    Arg('servo_bandwidth_hz', '10', "position-loop bandwidth of the twin's robots [Hz] (hil_lab_twin ServoConfig)"),
    Arg('ft_cutoff_hz', '50', "the F/T drivers' low-pass cut-off [Hz]"),
    Arg('twin_timestep_s', '0.001', "the lab twin's physics step [s]"),
    Arg('mounts', 'true', "the twin's wire ring and GF shaft on compliant carriages (hil_snare.mount.CompliantMount); "
        'the lockstep comparison uses the same', ('true', 'false')),
    Arg('mount_stiffness_n_per_m', '50000', "each carriage's spring [N/m] (mounts:=true)"),
    Arg('control_rate_hz', '250', 'rate of the two simulations, the tables and the F/T topics [Hz]'),
    READY_TIMEOUT_ARG,
    *RECORD_ARGS,
)
_WRENCH, _POSE, _TWIST, _ODOM, _ARRAY, _JOINTS = (
    'geometry_msgs/msg/WrenchStamped', 'geometry_msgs/msg/PoseStamped', 'geometry_msgs/msg/TwistStamped',
    'nav_msgs/msg/Odometry', 'std_msgs/msg/Float64MultiArray', 'sensor_msgs/msg/JointState')
SNARE_ROBOT_TOPICS = (('client/joint_states', _JOINTS), ('servicer/joint_states', _JOINTS))
SNARE_WRENCH_TOPICS = (('client/ft/wrench', _WRENCH), ('servicer/ft/wrench', _WRENCH))
SNARE_RECORD_TOPICS = (
    ('client/ft/wrench', _WRENCH), ('servicer/ft/wrench', _WRENCH),
    ('client/table/pose_cmd', _POSE), ('servicer/table/pose_cmd', _POSE), ('servicer/table/twist_cmd', _TWIST),
    ('client/state', _ODOM), ('client/joint_states', _JOINTS), ('servicer/joint_states', _JOINTS),
    ('snare/twin_state', _ARRAY), ('servicer/lee/capture_cmd', 'std_msgs/msg/Bool'),
)
#: The F/T sensors' overload limits [N, N m]: the wires pinch with 500 N and the LEE sensor sits 0.4 m
#: behind the wire plane, beyond the drivers' default 50 N m (a lab needs a sensor of this range).
OVERLOAD_LIMITS = [2000.0, 2000.0, 2000.0, 400.0, 400.0, 400.0]


def _xyz_rpy(pose) -> list[float]:
    import pinocchio as pin

    return [*map(float, pose.translation), *map(float, pin.rpy.matrixToRpy(pose.rotation))]


def snare_mount(args: Mapping[str, str]):
    """The :class:`hil_snare.mount.CompliantMount` of both sides for resolved launch arguments, or ``None``
    (``mounts:=false``): what the twin steps and what the lockstep comparison (:mod:`hil_snare.live`) steps."""
    from hil_snare.mount import CompliantMount

    if args['mounts'] != 'true':
        return None
    return CompliantMount(stiffness_n_per_m=float_arg(args, 'mount_stiffness_n_per_m', 1e3, 1e7))


def snare_graph(given: Mapping[str, str] | None = None, scenario=None) -> Graph:
    """The node set of ``snare_capture.launch.py`` for launch arguments ``given`` (strings)."""
    from hil_lab_twin.scene import config_to_yaml
    from hil_snare import lab
    from hil_snare.scenario import load_snare_scenario
    from hil_snare.targets import htv

    args = resolve_arguments(SNARE_ARGS, given)
    scenario = scenario if scenario is not None else load_snare_scenario(args['scenario'])
    if scenario.kind != 'htv_capture':
        raise GraphError(f"launch argument scenario:={args['scenario']!r} is of kind {scenario.kind!r}; "
                         'the HIL snare capture needs an htv_capture scenario (the SSRMS and its LEE)')
    cfg = scenario.config
    if cfg.grapple_in_corner or any(cfg.lee_velocity_mps):
        raise GraphError(f"scenario {args['scenario']!r}: the HIL graph runs Table 3's start (grapple_in_corner: false, "
                         'lee_velocity_mps zero); the case study is lockstep only')
    use_sim, sim_clock = twin_and_clock(args)
    ports = ft_ports(args)
    rate = float_arg(args, 'control_rate_hz', 50.0, 1000.0)
    timeout_s = float_arg(args, 'ready_timeout_s', 1.0, 3600.0)
    period = 1.0 / rate
    layout = lab.SnareLabLayout()
    sensors = {'client': f'{layout.gf_ns}_ft', 'servicer': f'{layout.lee_ns}_ft'}

    lab_nodes = ()
    if use_sim:
        from hil_lab_twin.scene import ServoConfig

        servo = ServoConfig(bandwidth_hz=float_arg(args, 'servo_bandwidth_hz', 0.1, 500.0))
        mount = snare_mount(args)
        mount_params = {'compliant_mounts': mount is not None}
        if mount is not None:
            mount_params.update(mount_stiffness_n_per_m=mount.stiffness_n_per_m, mount_mass_kg=mount.mass_kg,
                                mount_damping_ratio=mount.damping_ratio)
        lab_nodes = (NodeSpec('hil_snare', 'snare_twin_node', 'lab_twin', parameters={
            'layout': 'config', 'twin_config_yaml': config_to_yaml(lab.snare_twin_config(
                cfg, layout, servo, timestep=float_arg(args, 'twin_timestep_s', 1e-4, 0.002))),
            'snare_scenario': str(scenario.source), **mount_params, 'publish_rate_hz': rate, 'publish_wrench': False,
            'rdt_ports': [f"{sensors[w]}:{ports[w]}" for w in ('client', 'servicer')],
            # /clock once the F/T drivers passed the step's samples on, so the admittances' timers run on
            # that step's wrenches, as in lockstep (without it they ran one step late now and then, and
            # the stiff first contact diverged in some runs)
            **(simulated_clock_twin(f'{w}/ft/wrench' for w in ('client', 'servicer')) if sim_clock else {})}),)

    def ft_driver(who):
        return NodeSpec('hil_sensors', 'ft_sensor_node', 'ft_sensor', who, {
            'sensor_ip': '127.0.0.1' if use_sim else args['ft_host'], 'sensor_port': ports[who],
            'sensor_rate_hz': 1000.0 if use_sim else 0.0, 'publish_rate_hz': rate, 'sensor_frame': sensors[who],
            'software_bias.on_start': True,
            'low_pass.cutoff_hz': float_arg(args, 'ft_cutoff_hz', 1.0, 450.0), 'overload.limits': OVERLOAD_LIMITS,
            'stale_timeout_ms': 1000.0})

    # a loaded host can stall a process: the tables hold through a stall and resume (as the teleop graph's)
    table = {'output': 'joint_trajectory', 'trajectory_lead_s': period, 'period_s': period,
             'joint_states_timeout_s': 1.0, 'latch_faults': False, 'command_frame': 'home', 'home_from_start': True,
             'joint_states_recover_s': 0.02}
    pose_htv_in_flange = lab.pose_body_in_flange(lab.pose_sensor_in_htv().inverse())
    pose_lee_in_flange = lab.pose_body_in_flange(lab.pose_sensor_in_lee().inverse())
    io = (ft_driver('client'), ft_driver('servicer'),
          NodeSpec('hil_motion_table', 'motion_table_node', 'motion_table', 'client', {
              **table, 'robot': layout.gf_model, 'pose_body_in_flange_xyz_rpy': _xyz_rpy(pose_htv_in_flange)}),
          NodeSpec('hil_motion_table', 'motion_table_node', 'motion_table', 'servicer', {
              **table, 'robot': layout.lee_model, 'pose_body_in_flange_xyz_rpy': _xyz_rpy(pose_lee_in_flange)}))
    body = htv()[0]
    stack = (
        NodeSpec('hil_admittance', 'client_admittance_node', 'client_admittance', parameters={
            'mass_kg': float(body.mass_kg), 'inertia_com_kgm2': [float(v) for v in np.asarray(body.inertia_com_kgm2).ravel()],
            'twist_client_body_0': [0.0] * 6, 'pose_sensor_in_client_xyz_rpy': _xyz_rpy(lab.pose_sensor_in_htv()),
            'rate_hz': rate, 'wrench_timeout_s': 0.5, 'wrench_frame_id': sensors['client'],
            'client_frame': 'htv_com', 'nominal_frame': 'htv_drift'}),
        NodeSpec('hil_snare', 'snare_servicer_node', 'snare_servicer', parameters={
            'rate_hz': rate, 'joints_deg': [float(v) for v in cfg.joints_deg],
            'k_g_nm_per_rad': float(cfg.gearbox.k_g_nm_per_rad), 'motor_inertia_kgm2': float(cfg.motor_inertia_kgm2),
            'motor_damping_nms_per_rad': float(cfg.motor_damping_nms_per_rad), 'kp_nm_per_rad': float(cfg.kp),
            'kd_nms_per_rad': float(cfg.kd), 'pose_sensor_in_lee': _xyz_rpy(lab.pose_sensor_in_lee()),
            'wrench_timeout_s': 0.5, 'drift_velocity_world_mps': [float(v) for v in lab.drift_velocity_world(cfg)],
            # the twin's LEE drive; a real facility's LEE mock-up has its own drive node
            'wait_for_lee_drive': use_sim, 'command_consumers': ['/servicer/motion_table'], 'lee_drive_node': '/lab_twin'}),
    )
    if sim_clock:     # the whole stack on the twin's timeline
        io, stack = (tuple(dataclasses.replace(n, use_sim_time=True) for n in nodes) for nodes in (io, stack))
    return Graph('snare_capture', (
        Stage('lab', lab_nodes, Ready(SNARE_ROBOT_TOPICS, timeout_s=timeout_s)),
        Stage('io', io, Ready(SNARE_WRENCH_TOPICS, timeout_s=timeout_s, max_force_n=1.0)),
        Stage('stack', stack),
    ), SNARE_RECORD_TOPICS).check()
