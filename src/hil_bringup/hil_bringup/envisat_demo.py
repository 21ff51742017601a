"""The Envisat capture demo (seed 004 §III-C, §V): lockstep runs, run folder, plots, MCAP.

1. Unforced validation (``F_b = tau = 0``, seed 004 Figs. 8-9): the HIL loop
   (:class:`hil_bringup.runners.mission.HilMission`) against the absolute reference
   (:class:`hil_bringup.runners.mission.AbsoluteMission`, the "GNCDE").
2. Capture with the example OBSW (seed 004 Figs. 12-13): sync, approach, grasp, post-grasp,
   HIL and reference side by side.
3. Optionally the ROS graph: the same node set as ``envisat_capture.launch.py`` started as
   executables (loopback DDS), recorded to MCAP for a few seconds.

Writes ``metrics.json``, ``fig08_relative_position.png``, ``fig09_relative_orientation.png``,
``fig12_errors_and_actuation.png``, ``fig13_relative_velocity.png``, ``capture_render.png``
and ``capture/`` (a rosbag2 bag: ``capture_0.mcap`` and ``metadata.yaml``) into the run folder; the
live part adds ``live/`` (its recording), ``live_nodes/`` (node logs, parameters, ``live_summary.json``).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from hil_bringup.runners.mission import AbsoluteMission, HilMission, MissionRecord, compare_relative_pose
from hil_bringup.runners.twin_validation import run_unforced_validation

SEED_GRASP_TIME_S = 32.6
SEED_APPROACH_START_S = 9.1
SEED_ABSOLUTE_LIMIT_S = 14.0


def settle_time(rec: MissionRecord, after_s: float, speed_m_s: float = 1e-3, rate_deg_s: float = 0.05) -> float | None:
    """First time after ``after_s`` from which the relative velocity stays below both thresholds."""
    speed = np.linalg.norm(rec.twist_base_rel_client[:, :3], axis=1)
    rate = np.degrees(np.linalg.norm(rec.twist_base_rel_client[:, 3:], axis=1))
    ok = (speed < speed_m_s) & (rate < rate_deg_s) & (rec.t > after_s)
    stays = np.flip(np.cumprod(np.flip(ok)).astype(bool))
    return float(rec.t[np.argmax(stays)]) if stays.any() else None


def momentum_drift(rec: MissionRecord, from_s: float) -> dict:
    p = rec.momentum_in_orbit[rec.t >= from_s]
    return {'linear_relative': float(np.linalg.norm(p[:, :3] - p[0, :3], axis=1).max() / np.linalg.norm(p[0, :3])),
            'angular_relative': float(np.linalg.norm(p[:, 3:] - p[0, 3:], axis=1).max() / np.linalg.norm(p[0, 3:]))}


def capture_metrics(scenario, hil: HilMission, rec: MissionRecord, ref_rec: MissionRecord) -> dict:
    times = dict(hil.controller.phase_times)
    post = times.get('post_grasp')
    out = {
        'phase_times_s': times,
        'seed004_approach_start_s': SEED_APPROACH_START_S,
        'seed004_grasp_time_s': SEED_GRASP_TIME_S,
        'gripper_latched_at_s': hil.contact.latch_time_s,
        'hil_vs_reference': compare_relative_pose(rec, ref_rec),
        'max_thrust_n': float(np.abs(rec.wrench_base_com[:, :3]).max()),
        'max_joint_torque_nm': float(np.abs(rec.tau_arm).max()),
        'max_relative_angular_rate_before_grasp_deg_s': float(np.degrees(np.abs(
            rec.twist_base_rel_client[(rec.t > 15.0) & (rec.t < times.get('grasp', np.inf)), 3:])).max()
            if np.any((rec.t > 15.0) & (rec.t < times.get('grasp', np.inf))) else float('nan')),
    }
    if post is not None:
        out['relative_velocity_settled_at_s'] = settle_time(rec, post)
        out['final_relative_speed_mm_s'] = float(np.linalg.norm(rec.twist_base_rel_client[-1, :3]) * 1e3)
        out['final_relative_rate_deg_s'] = float(np.degrees(np.linalg.norm(rec.twist_base_rel_client[-1, 3:])))
        out['momentum_drift_after_grasp'] = momentum_drift(rec, post)
    box_c, box_s = scenario.workspace_box_m, scenario.servicer_workspace_box_m
    out['workspace'] = {
        'client_box_m': box_c.tolist(), 'servicer_box_m': box_s.tolist(),
        'relative_client_table_exit_s': rec.exit_time('pos_grasp_in_nominal_cmd', box_c),
        'relative_servicer_table_exit_s': rec.exit_time('pos_base_in_nominal_cmd', box_s),
        'absolute_client_exit_s': rec.exit_time('pos_grasp_in_orbit', box_c),
        'absolute_servicer_exit_s': rec.exit_time('pos_base_in_orbit', box_s),
        'seed004_absolute_limit_s': SEED_ABSOLUTE_LIMIT_S,
    }
    return out


# -- plots in the style of seed 004 (hil_bringup.plot_style) -------------------------------------
def plot_fig8_fig9(hil: MissionRecord, ref: MissionRecord, out: Path, title: str, suffix: str = '',
                   label: str = 'HIL (relative formulation)') -> list[Path]:
    """Fig. 8 (relative position) and Fig. 9 (relative attitude as a rotation vector), the HIL run
    over the absolute reference, with the error below each (position per axis, attitude as an angle)."""
    from hil_bringup import plot_style as ps

    n = min(len(hil.t), len(ref.t))
    t = hil.t[:n]
    paths = []
    rot_hil, rot_ref = ps.rotation_vectors(hil.rpy_base_in_client), ps.rotation_vectors(ref.rpy_base_in_client)
    for name, a, b, quantity, unit in (
            (f'fig08_relative_position{suffix}.png', hil.pos_base_in_client, ref.pos_base_in_client, 'p', 'm'),
            (f'fig09_relative_orientation{suffix}.png', rot_hil, rot_ref, 'rotation vector', 'rad')):
        fig, axes = ps.figure(4, 1, title=f'{title}: servicer CoM relative to the client CoM (cf. seed 004 '
                                          f'{"Fig. 8" if unit == "m" else "Fig. 9, as a rotation vector"})')
        for i, axis in enumerate('xyz'):
            ax = axes[i, 0]
            ax.plot(hil.t, a[:, i], label=label, **ps.UNDER_TEST)
            ax.plot(ref.t, b[:, i], label='absolute reference (GNCDE)', **ps.REFERENCE)
            ps.label(ax, f'{quantity} {axis}', unit)
        ps.legend(axes[0, 0])
        if unit == 'm':
            err = np.linalg.norm(a[:n] - b[:n], axis=1)
            ps.label(axes[3, 0], 'position error |HIL - reference|', 'm', 't [s]')
        else:
            err = ps.angle_between(hil.rpy_base_in_client[:n], ref.rpy_base_in_client[:n])
            ps.label(axes[3, 0], 'attitude error angle', 'rad', 't [s]')
        ps.error_axis(axes[3, 0], t, err, 'HIL vs reference')
        paths.append(ps.save(fig, out / name))
    return paths


def plot_fig12(rec: MissionRecord, phase_times: dict, out: Path) -> Path:
    from hil_bringup import plot_style as ps

    fig, axes = ps.figure(2, 2, width=12.0, row_height=3.2,
                          title='Envisat capture (cf. seed 004 Fig. 12): OBSW errors and actuation')
    t = rec.t
    for i, axis in enumerate('xyz'):
        axes[0, 0].plot(t, rec.tool_error[:, i] * 1e3, label=f'dp_m,{axis}')
        axes[0, 1].plot(t, rec.base_error[:, i] * 1e3, label=f'dp_b,{axis}')
        axes[1, 1].plot(t, rec.wrench_base_com[:, i], label=f'F_b,{axis}')
    for j in range(rec.tau_arm.shape[1]):
        axes[1, 0].plot(t, rec.tau_arm[:, j], lw=0.8, label=f'tau_{j + 1}')
    for ax, (title, quantity, unit) in zip(axes.flat, (
            ('manipulator error: tool to grasp fixture', 'dp_m', 'mm'),
            ('base error: to the synchronisation set point', 'dp_b', 'mm'),
            ('arm joint torques (Eq. 22)', 'tau', 'N m'), ('thruster force on the base', 'F_b', 'N'))):
        ax.set_title(title, fontsize=9)
        ps.label(ax, quantity, unit)
    for ax in axes[1]:
        ax.set_xlabel('t [s]')
    for ax in axes.flat:
        ps.mark_events(ax, phase_times, ('approach', 'grasp', 'post_grasp'))
        ps.legend(ax, ncol=2)
    return ps.save(fig, out / 'fig12_errors_and_actuation.png')


def plot_fig13(rec: MissionRecord, phase_times: dict, out: Path) -> Path:
    from hil_bringup import plot_style as ps

    fig, axes = ps.figure(2, 1, width=9.0, row_height=3.0,
                          title='Servicer velocity relative to the client (cf. seed 004 Fig. 13)')
    for i, axis in enumerate('xyz'):
        axes[0, 0].plot(rec.t, np.degrees(rec.twist_base_rel_client[:, 3 + i]), label=f'w_{axis}')
        axes[1, 0].plot(rec.t, rec.twist_base_rel_client[:, i] * 1e3, label=f'v_{axis}')
    axes[0, 0].axhspan(-0.05, 0.05, color='green', alpha=0.15, label='settled band +-0.05 deg/s')
    axes[1, 0].axhspan(-1.0, 1.0, color='green', alpha=0.15, label='settled band +-1 mm/s')
    ps.label(axes[0, 0], 'relative angular velocity', 'deg/s')
    ps.label(axes[1, 0], 'relative linear velocity', 'mm/s', 't [s]')
    for ax in axes.flat:
        ps.mark_events(ax, phase_times, ('grasp',))
        ps.legend(ax, ncol=3)
    return ps.save(fig, out / 'fig13_relative_velocity.png')


def twin_capture_with_pictures(scenario, duration_s: float, out: Path, every_s: float = 1.0) -> tuple[dict, list[Path]]:
    """The capture with the MuJoCo lab twin in the loop (:class:`hil_bringup.runners.twin_capture.TwinCaptureMission`:
    physical grasp, no software contact), rendered offscreen while it runs: an MP4 per view
    (:mod:`hil_lab_twin.animation`) and stills at the approach start and at the grasp."""
    from hil_bringup.console import Progress
    from hil_bringup.runners.twin_capture import TwinCaptureMission, capture_figures
    from hil_lab_twin.animation import FrameGrabber, TwinCamera, View, add_arrow, write_animation, write_still

    mission = TwinCaptureMission(scenario)
    twin = mission.twin
    ring = twin.site_pose_in_world('client_ft_site').translation
    tool = twin.site_pose_in_world('servicer_wrist_ft_site').translation
    mid = 0.5 * (ring + tool)
    views = [View('facility', lookat=tuple(0.5 * (twin.base_pose('client').translation + twin.base_pose('servicer').translation)
                                            + np.array([0.0, 0.0, 1.0])), distance=6.5, azimuth=110.0, elevation=-18.0),
             View('grasp', lookat=tuple(mid), distance=1.1, azimuth=70.0, elevation=-15.0)]
    camera = TwinCamera(twin, 480, 352)

    def forces(scene):
        """The two F/T sensors' processed forces (tared, the mock-up's and the gripper's weight removed) as
        arrows at the sensors, 0.02 m per N: the grasp's contact wrench, equal and opposite once closed."""
        for chain, site, rgba in ((mission.client_ft, 'client_ft_site', (0.2, 0.5, 1.0, 1.0)),
                                  (mission.wrist_ft, 'servicer_wrist_ft_site', (1.0, 0.3, 0.2, 1.0))):
            pose = twin.site_pose_in_world(site)
            add_arrow(scene, pose.translation, 0.02 * (pose.rotation @ chain.wrench()[:3]), 0.012, rgba)
    try:
        with Progress('HIL+twin ', duration_s) as bar:
            grabber = FrameGrabber(camera, views, every_s, then=bar, decorate=forces)
            rec = mission.run(duration_s, 0.05, grabber)
    finally:
        camera.close()
    figures = capture_figures(rec, mission.controller)
    files = [write_animation(out / f'twin_capture_{v.name}', grabber.frames[v.name], fps=4.0) for v in views]
    times = np.array(grabber.times)
    for event in ('approach', 'grasp'):
        t_event = mission.controller.phase_times.get(event)
        if t_event is not None and len(times):
            k = int(np.argmin(np.abs(times - (t_event + (1.0 if event == 'grasp' else 0.0)))))
            files += [write_still(out / f'twin_{event}_{v.name}.png', grabber.frames[v.name][k]) for v in views]
    figures['faults'] = mission.faults()
    twin.close()
    return figures, files


# -- recording -----------------------------------------------------------------------------------
def record_capture_mcap(rec: MissionRecord, joint_names, path: Path, rate_hz: float = 50.0) -> dict:
    """The HIL capture as the ROS graph would have published it (stamps = simulated time)."""
    from geometry_msgs.msg import PoseStamped, WrenchStamped
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray, String

    from hil_bringup.recorder import McapWriter
    from hil_common.conversions import seconds_to_stamp, twist_to_msg, wrench_to_msg

    def stamp(msg, t, frame):
        seconds_to_stamp(t, msg.header.stamp)
        msg.header.frame_id = frame

    def pose_msg(msg_pose, xyzquat):
        msg_pose.position.x, msg_pose.position.y, msg_pose.position.z = (float(v) for v in xyzquat[:3])
        o = msg_pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in xyzquat[3:])

    writer = McapWriter(path)
    dt = float(rec.t[1] - rec.t[0]) if len(rec.t) > 1 else 1.0
    every = max(1, int(round(1.0 / (rate_hz * dt))))
    last_phase = None
    try:
        for i in range(0, len(rec.t), every):
            t = float(rec.t[i])
            ns = int(round(t * 1e9))
            for topic, pose, twist, child in (('/client/state', rec.pose_client_in_orbit[i], rec.twist_client_body[i], 'client_com'),
                                              ('/servicer/state', rec.pose_base_in_orbit[i], rec.twist_base_body[i], 'servicer_base_com')):
                m = Odometry()
                stamp(m, t, 'orbit')
                m.child_frame_id = child
                pose_msg(m.pose.pose, pose)
                twist_to_msg(twist, m.twist.twist)
                writer.write(topic, m, ns)
            for topic, pose, frame in (('/client/table/pose_cmd', rec.pose_client_in_nominal_cmd[i], 'client_nominal'),
                                       ('/servicer/table/pose_cmd', rec.pose_base_in_nominal_cmd[i], 'client_nominal')):
                if np.all(np.isfinite(pose)):
                    m = PoseStamped()
                    stamp(m, t, frame)
                    pose_msg(m.pose, pose)
                    writer.write(topic, m, ns)
            for topic, wrench, frame in (('/servicer/base_wrench_cmd', rec.wrench_base_com[i], 'servicer_base_com'),
                                         ('/servicer/ft/wrench', rec.wrench_tool[i], 'tool')):
                m = WrenchStamped()
                stamp(m, t, frame)
                wrench_to_msg(wrench, m.wrench)
                writer.write(topic, m, ns)
            writer.write('/servicer_arm/torque_cmd', Float64MultiArray(data=[float(v) for v in rec.tau_arm[i]]), ns)
            js = JointState(name=list(joint_names), position=[float(v) for v in rec.q_arm[i]],
                            velocity=[float(v) for v in rec.dq_arm[i]])
            stamp(js, t, '')
            writer.write('/servicer_arm/joint_states', js, ns)
            if rec.phase[i] != last_phase:
                writer.write('/obsw/phase', String(data=rec.phase[i]), ns)
                last_phase = rec.phase[i]
    finally:
        counts = writer.close()
    return counts


# -- the demo --------------------------------------------------------------------------------------
def _run_with_progress(mission, label: str, duration_s: float, **kw):
    from hil_bringup.console import Progress

    with Progress(label, duration_s) as bar:
        return mission.run(duration_s, progress=bar, **kw)


def run(scenario, out: Path, duration_s: float | None = None, unforced_s: float | None = None,
        stages: int = 5) -> dict:
    """The lockstep part of the demo: stages 1-4 of ``stages`` (the live graph is the last)."""
    from hil_bringup.console import Progress

    out.mkdir(parents=True, exist_ok=True)
    duration_s = duration_s or scenario.mission['duration_s']
    unforced_s = scenario.mission['unforced_duration_s'] if unforced_s is None else unforced_s
    metrics: dict = {'scenario': scenario.name, 'source': scenario.source}
    files = []
    if unforced_s > 0:
        print(f'[1/{stages}] unforced validation, F_b = tau = 0, {unforced_s:.0f} s, HIL (relative formulation) '
              f'and the absolute reference (seed 004 Figs. 8-9)', flush=True)
        hil_u = _run_with_progress(HilMission(scenario, forced=False), 'HIL      ', unforced_s, record_every_s=0.1)
        ref_u = _run_with_progress(AbsoluteMission(scenario, forced=False), 'reference', unforced_s, record_every_s=0.1)
        metrics['unforced'] = {**compare_relative_pose(hil_u, ref_u), 'target_position_m': 1e-4, 'target_angle_rad': 2e-4,
                               'seed004_hardware_position_m': 1e-3, 'seed004_hardware_angle_rad': 2e-3}
        files += plot_fig8_fig9(hil_u, ref_u, out, f'Unforced, {unforced_s:.0f} s')
    if unforced_s > 0 and scenario.unforced_validation is not None:
        v = scenario.unforced_validation
        print(f'[2/{stages}] unforced validation with the lab twin in the loop (servo delay and lag, F/T noise and '
              f'offsets), {v.duration_s:.0f} s at the seed\'s -1 deg/s', flush=True)
        with Progress('HIL+twin ', v.duration_s) as bar:
            twin = run_unforced_validation(scenario, record_every_s=0.1, progress=bar)
        metrics['unforced_twin_in_the_loop'] = {
            **twin['measured_vs_reference'], 'integrated_vs_reference': twin['integrated_vs_reference'],
            'relative_motion_range_m': twin['relative_motion_range_m'], 'table_faults': twin['table_faults'],
            'target_position_m': 1e-4, 'target_angle_rad': 2e-4}
        files += plot_fig8_fig9(twin['hil'], twin['reference'], out, f'Unforced, twin in the loop, {v.duration_s:.0f} s',
                                suffix='_twin', label='HIL, measured on the twin robots')
    print(f'[3/{stages}] capture with the example OBSW, {duration_s:.0f} s (seed 004 Figs. 12-13), HIL and the '
          f'absolute reference; then plots and capture/ (rosbag2, MCAP)', flush=True)
    hil = HilMission(scenario)
    rec = _run_with_progress(hil, 'HIL      ', duration_s)
    ref = AbsoluteMission(scenario)
    ref_rec = _run_with_progress(ref, 'reference', duration_s)
    metrics['capture'] = capture_metrics(scenario, hil, rec, ref_rec)
    phase_times = hil.controller.phase_times
    files += [plot_fig12(rec, phase_times, out), plot_fig13(rec, phase_times, out)]
    print(f'[4/{stages}] the same capture with the MuJoCo lab twin in the loop: the calibrated facility, the '
          f'gripper closing physically on the ring, both F/T sensors measuring it; rendered to MP4', flush=True)
    twin_figures, twin_files = twin_capture_with_pictures(scenario, duration_s, out)
    metrics['capture_twin'] = twin_figures
    files += twin_files
    metrics['recording'] = {'capture': record_capture_mcap(rec, hil.model.joint_names, out / 'capture')}
    metrics['files'] = [p.name for p in files] + ['capture/']
    return metrics


def summary(metrics: dict) -> list[str]:
    from hil_bringup.console import angle, duration, length, number

    lines = []
    if 'unforced' in metrics:
        u = metrics['unforced']
        lines.append(f"unforced {duration(u['duration_s'])}: HIL vs absolute reference {length(u['max_position_error_m'])}, "
                     f"{angle(u['max_angle_error_rad'])} (target 0.1 mm / 0.2 mrad; seed 004 hardware 1 mm / 2 mrad)")
    if 'unforced_twin_in_the_loop' in metrics:
        u = metrics['unforced_twin_in_the_loop']
        lines.append(f"unforced {duration(u['duration_s'])}, twin in the loop, measured on the robots: "
                     f"{length(u['max_position_error_m'])}, {angle(u['max_angle_error_rad'])} (target 0.1 mm / 0.2 mrad)")
    c = metrics['capture']
    pt = c['phase_times_s']
    lines.append('phases: ' + ', '.join(f'{k} {duration(v)}' for k, v in pt.items())
                 + f" (seed 004: approach {SEED_APPROACH_START_S} s, grasp {SEED_GRASP_TIME_S} s)")
    if 'relative_velocity_settled_at_s' in c:
        lines.append(f"relative velocity < 1 mm/s and 0.05 deg/s from {duration(c['relative_velocity_settled_at_s'])}; "
                     f"momentum drift after the grasp: linear {number(c['momentum_drift_after_grasp']['linear_relative'], 2)}, "
                     f"angular {number(c['momentum_drift_after_grasp']['angular_relative'], 2)} (relative)")
    w = c['workspace']
    lines.append(f"workspace: relative formulation: client table exit {duration(w['relative_client_table_exit_s'])}, "
                 f"servicer table exit {duration(w['relative_servicer_table_exit_s'])}; absolute formulation would exit at "
                 f"{duration(w['absolute_client_exit_s'])} (client) / {duration(w['absolute_servicer_exit_s'])} (servicer) "
                 f"(seed 004: {SEED_ABSOLUTE_LIMIT_S} s)")
    h = c['hil_vs_reference']
    lines.append(f"capture HIL vs reference: {length(h['max_position_error_m'])}, {angle(h['max_angle_error_rad'])}")
    if 'capture_twin' in metrics:
        tw = metrics['capture_twin']
        speed = tw.get('relative_speed_after_grasp_m_s')
        lines.append(f"capture with the lab twin in the loop (physical grasp): approach {duration(tw['approach_start_s'])}, "
                     f"grasp latch {duration(tw['grasp_latch_s'])} (ideal robots {duration(pt.get('grasp'))}, seed 004 "
                     f"{SEED_GRASP_TIME_S} s); after the grasp max relative speed "
                     f"{'n/a' if speed is None else length(speed) + '/s'}, peak contact force "
                     f"{number(tw.get('peak_contact_force_n') or 0.0)} N")
    return lines


# -- the ROS graph -----------------------------------------------------------------------------------
from hil_bringup.graphs import ENVISAT_LATCHED_TOPICS as LATCHED_TOPICS  # noqa: E402
#: Commands that must reach the robots in a live run (the graph did nothing otherwise).
ROBOT_COMMAND_TOPICS = ('client/forward_position_controller/commands', 'servicer/forward_position_controller/commands',
                        'servicer_arm/forward_effort_controller/commands')


def live_expectations(phase_times: dict, seconds: float, margin_s: float = 3.0):
    """What a live run of ``seconds`` must achieve: every phase the lockstep run entered before
    ``seconds - margin_s`` (the same scenario, so the same timeline), and robot commands at
    no less than a tenth of 100 Hz."""
    from hil_bringup.live_report import LiveExpectations

    phases = tuple(name for name, t in sorted(phase_times.items(), key=lambda kv: kv[1]) if t <= seconds - margin_s)
    return LiveExpectations(phases=phases, min_messages={t: int(10 * seconds) for t in ROBOT_COMMAND_TOPICS})


def ros_graph_part(scenario, out: Path, seconds: float, expectations=None, launch_arguments: dict | None = None,
                   say=print, on_running=None, until=None, until_max_s: float | None = None) -> dict:
    """Start the graph of ``envisat_capture.launch.py`` (:func:`hil_bringup.graphs.envisat_graph`, the same
    definition) on loopback DDS for ``seconds`` after it is ready, record every topic, and judge it.
    With ``until(report)`` (a :class:`hil_bringup.live_report.LiveReport`) the run goes on after ``seconds`` until it
    holds, up to ``until_max_s``: a run on the wall clock reaches its phases later on a busy machine, and is judged
    on what it reaches, not on when.

    Free UDP ports replace the default RDT ports, so two runs on one host do not cross. Returns the
    :class:`hil_bringup.live_report.LiveReport` summary (``ok``, ``problems``, phases, faults,
    messages per topic, deadline misses, node exits and their warning counts).
    ``on_running(running_graph, node, executor)`` is called once the graph is ready (tests inspect it).
    """
    from hil_bringup.graph_runner import GraphStartError, RunningGraph, log_levels
    from hil_bringup.recorder_node import message_class
    from hil_bringup.graphs import envisat_graph
    from hil_bringup.live_report import LiveExpectations, LiveReport
    from hil_bringup.recorder import LATCHED_QOS, TopicRecorder
    from hil_common.network import free_udp_ports
    from hil_common.ros_testing import spin_until, test_node

    import socket

    ports = free_udp_ports(2)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:    # the live view's WebSocket port
        sock.bind(('127.0.0.1', 0))
        view_port = sock.getsockname()[1]
    args = {'scenario': str(scenario.source), 'client_ft_port': str(ports[0]), 'servicer_ft_port': str(ports[1]),
            'live_view_port': str(view_port), **(launch_arguments or {})}
    graph = envisat_graph(args, scenario=scenario)
    report = LiveReport(expectations if expectations is not None else LiveExpectations())
    topics = [(name, message_class(type_name)) for name, type_name in graph.record_topics]
    running = RunningGraph(graph, out / 'live_nodes', say=say)
    summary_path = out / 'live_nodes' / 'live_summary.json'
    # With the twin's simulated clock the run lasts `seconds` of simulated time (the twin's /clock),
    # however long that takes on this machine, within a generous wall-time budget.
    sim_clock = any(n.parameters.get('clock') == 'simulated' for n in graph.nodes if n.executable == 'lab_twin_node')
    wall_budget_s = max(300.0, 40.0 * seconds)
    # the events executor: this node only watches and records the graph (the twin paces the run)
    with test_node('hil_envisat_recorder', 'events') as (node, executor):
        t0 = [None]
        lab_time = [None if sim_clock else 0.0]

        def now():
            if t0[0] is None or lab_time[0] is None:
                return 0.0
            return (lab_time[0] if sim_clock else time.monotonic()) - t0[0]

        if sim_clock:
            from rosgraph_msgs.msg import Clock
            node.create_subscription(Clock, '/clock', lambda m: lab_time.__setitem__(
                0, m.clock.sec + 1e-9 * m.clock.nanosec), 10)
        recorder = TopicRecorder(node, out / 'live', topics, latched=LATCHED_TOPICS)
        from diagnostic_msgs.msg import DiagnosticStatus
        from std_msgs.msg import String
        node.create_subscription(String, 'obsw/phase', lambda m: report.phase(now(), m.data), LATCHED_QOS)
        for name, type_name in graph.record_topics:
            if type_name == 'diagnostic_msgs/msg/DiagnosticStatus':
                node.create_subscription(DiagnosticStatus, name, lambda m, n=name: report.status(
                    now(), n, m.level, m.message, {kv.key: kv.value for kv in m.values}),
                    LATCHED_QOS if name in LATCHED_TOPICS else 10)
        try:
            try:
                running.start()
            except GraphStartError as exc:
                report.failed_to_start(str(exc))
            else:
                if sim_clock and not spin_until(executor, lambda: lab_time[0] is not None, 10.0):
                    report.failed_to_start('the lab twin publishes no /clock')
                t0[0] = lab_time[0] if sim_clock else time.monotonic()
                wall_start = time.monotonic()
                if args.get('live_view', 'true') == 'true':
                    say(f'  live 3-D view: Foxglove -> Open connection -> ws://127.0.0.1:{args["live_view_port"]} '
                        f'(topic /lab_scene); RViz: MarkerArray live_view/markers in lab_world')
                if on_running is not None:
                    on_running(running, node, executor)
                    t0[0] = lab_time[0] if sim_clock else time.monotonic()   # the run starts after the inspection
                    wall_start = time.monotonic()
                next_report = 0.0

                def running_on() -> bool:
                    if now() < seconds:
                        return True
                    return until is not None and now() < (until_max_s or seconds) and not until(report)

                while running_on():
                    spin_until(executor, lambda: now() >= next_report or not running_on(), 1.0)
                    dead = running.dead()
                    if dead:
                        say(f'  ros: node(s) exited: {", ".join(dead)}')
                        break
                    wall_s = time.monotonic() - wall_start
                    if wall_s > wall_budget_s:
                        report.failed_to_start(f'the simulated lab reached only {now():.1f} of {seconds:g} s in '
                                               f'{wall_s:.0f} s of wall time')
                        break
                    if now() >= next_report:
                        total = sum(recorder.received.values())
                        say(f'  ros: {now():5.1f} / {seconds:.0f} s{" simulated" if sim_clock else ""} '
                            f'({wall_s:.0f} s wall)  {total} messages, phase '
                            f'{report.phases[-1][1] if report.phases else "-"}, faults {len(report.faults)}')
                        next_report += 5.0
        finally:
            duration = now()
            wall_s = time.monotonic() - wall_start if t0[0] is not None else 0.0
            counts = recorder.close()
            results = running.stop()
    for topic, n in counts.items():
        report.counts[topic.lstrip('/')] = n
    summary = report.finish(duration, results, log_levels)
    summary['recording'] = {'live': counts}
    summary['stages_ready_s'] = {k: round(v, 2) for k, v in running.ready_s.items()}
    summary['lab_clock'] = {'simulated': sim_clock, 'wall_s': round(wall_s, 1),
                            # the twin's time at the run's t = 0 (the stamps of its messages are twin time)
                            'start_s': t0[0] if sim_clock else None,
                            'real_time_factor': round(duration / wall_s, 3) if wall_s > 0 else None}
    summary['nodes_log_dir'] = str(out / 'live_nodes' / 'logs')
    summary_path.parent.mkdir(parents=True, exist_ok=True)
    import json
    summary_path.write_text(json.dumps(summary, indent=2))
    return summary
