"""Pictures of a live Envisat capture, made from what the live graph recorded (no rclpy).

The demo's live stage (:func:`hil_bringup.envisat_demo.ros_graph_part`) leaves in its run folder

* ``live/``: the graph's topics (``hil_bringup.graphs.ENVISAT_RECORD_TOPICS``), a rosbag2 bag in
  MCAP storage; message stamps are the lab twin's simulated time, the bag's log times the
  recorder's wall clock;
* ``live_nodes/live_summary.json``: the OBSW phases in run time and ``lab_clock.start_s``, the
  twin's time at the run's t = 0; ``live_nodes/params/obsw_controller.yaml``: the example
  OBSW's parameters (its URDF and set points).

:func:`read_live_run` turns them into arrays on the run's clock (``t = stamp - start_s``) and
:func:`plot_live_capture` draws, in the style of the lockstep figures
(:func:`hil_bringup.envisat_demo.plot_fig12`, ``plot_fig13``, :mod:`hil_bringup.plot_style`):

* ``live_fig12_errors_and_actuation.png`` (seed 004 Fig. 12): the OBSW's manipulator error
  (tool to grasp fixture, tool axes) and base error (``e_b = log6(g_b*^-1 g_b)``, the
  synchronisation set point), both recomputed from the recorded Eq. (23) states
  (``client/state``, ``servicer/state``), the arm's measured joints and the OBSW's parameters
  with its own kinematics (:meth:`hil_admittance.obsw.ObswController.tool_kinematics`), since
  the OBSW does not publish them; the OBSW's joint torques (``servicer_arm/torque_cmd``) and
  thrust (``servicer/base_wrench_cmd``);
* ``live_fig13_relative_velocity.png`` (seed 004 Fig. 13): the servicer base's body twist
  relative to the client (``V_b - Ad_{g_tb^-1} V_t``, base axes), and the two bodies'
  angular rates;
* ``live_contact_wrenches.png``: both F/T sensors' wrench magnitudes (client flange, servicer
  wrist; torques about each sensor's own origin), the grasp marked;
* ``live_passivity.png``: the passivity observers (seed 004 Eqs. 26-28, ``*/passivity``,
  ``[E_obs, E_port, E_integration, E_dissipated, beta]``): observed and dissipated energy.

Messages without a header (``Float64MultiArray``, ``Bool``, ``String``) get the stamp of the
stamped message their publisher sends in the same step (``COMPANIONS``) that the recorder logged
nearest to them, so every series is on the twin's clock. Whatever a run did not record is
listed in ``notes`` and written on the empty panel.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pinocchio as pin

#: An unstamped topic -> the stamped topic its node publishes in the same step.
COMPANIONS = {
    'servicer_arm/torque_cmd': 'servicer/base_wrench_cmd',     # obsw_controller_node: F_b, then tau, then grip
    'servicer/gripper_cmd': 'servicer/base_wrench_cmd',
    'obsw/phase': 'servicer/base_wrench_cmd',
    'servicer/passivity': 'servicer/state',                    # servicer_admittance_node: state, then passivity
    'client/passivity': 'client/state',
}
PASSIVITY_LAYOUT = ('E_obs', 'E_port', 'E_integration', 'E_dissipated', 'beta')
_TOPICS = ('client/state', 'servicer/state', 'servicer/base_wrench_cmd', 'servicer_arm/torque_cmd',
           'client/ft/wrench', 'servicer/ft/wrench', 'client/passivity', 'servicer/passivity',
           'servicer_arm/joint_states', 'servicer/gripper_cmd', 'obsw/phase',
           'client_ft/sensor_pose', 'servicer_wrist_ft/sensor_pose', 'client/table/pose_cmd', 'servicer/table/pose_cmd',
           'nominal/rebase_plan')
PHASE_LINES = ('approach', 'grasp', 'post_grasp')


def _stamp_s(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def read_bag(bag: Path) -> dict:
    """``topic -> (log times [ns], stamps [s] or None, messages)`` of the topics plotted here."""
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    out: dict[str, tuple[list, list, list]] = {}
    with AnyReader([Path(bag)], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        connections = [c for c in reader.connections if c.topic.lstrip('/') in _TOPICS]
        for conn, log_ns, raw in reader.messages(connections=connections):
            msg = reader.deserialize(raw, conn.msgtype)
            logs, stamps, msgs = out.setdefault(conn.topic.lstrip('/'), ([], [], []))
            logs.append(log_ns)
            stamps.append(_stamp_s(msg) if hasattr(msg, 'header') else None)
            msgs.append(msg)
    return {topic: (np.array(logs, dtype=np.int64), None if stamps[0] is None else np.array(stamps), msgs)
            for topic, (logs, stamps, msgs) in out.items()}


def companion_stamps(log_ns, companion_log_ns, companion_stamps_s) -> np.ndarray:
    """The stamp of the companion message logged nearest to each of ``log_ns`` (see the module doc)."""
    log_ns, c_log = np.asarray(log_ns, dtype=np.int64), np.asarray(companion_log_ns, dtype=np.int64)
    order = np.argsort(c_log, kind='stable')
    c_log, c_stamp = c_log[order], np.asarray(companion_stamps_s, dtype=float)[order]
    k = np.clip(np.searchsorted(c_log, log_ns), 1, len(c_log) - 1) if len(c_log) > 1 else np.zeros(len(log_ns), int)
    if len(c_log) > 1:
        k = np.where(np.abs(c_log[k - 1] - log_ns) <= np.abs(c_log[k] - log_ns), k - 1, k)
    return c_stamp[k]


def interpolate_states(t_src, poses, twists, t_query):
    """Poses (geodesic on SE(3)) and body twists (linear) of a state series at ``t_query`` inside its span."""
    t_src = np.asarray(t_src, dtype=float)
    k = np.clip(np.searchsorted(t_src, t_query, side='right') - 1, 0, len(t_src) - 2)
    out_poses, out_twists = [], []
    for tq, i in zip(t_query, k):
        span = t_src[i + 1] - t_src[i]
        a = 0.0 if span <= 0.0 else min(max((tq - t_src[i]) / span, 0.0), 1.0)
        step = pin.log6(poses[i].actInv(poses[i + 1])).vector
        out_poses.append(poses[i] * pin.exp6(pin.Motion(a * step)))
        out_twists.append((1.0 - a) * twists[i] + a * twists[i + 1])
    return out_poses, np.array(out_twists).reshape(-1, 6)


def load_obsw(folder: Path):
    """The example OBSW rebuilt from the parameters it ran with (``live_nodes/params``), or None."""
    import yaml

    from hil_admittance.obsw import ObswController
    from hil_common.conversions import xyz_rpy_to_pose
    from hil_dynamics.servicer import ServicerModel

    path = folder / 'live_nodes' / 'params' / 'obsw_controller.yaml'
    if not path.is_file():
        return None
    values = next(iter(yaml.safe_load(path.read_text()).values()))['ros__parameters']
    if 'urdf_xml' not in values:
        return None                 # a controller under test other than the example: its own parameters
    model = ServicerModel(values['urdf_xml'], values.get('ee_frame', 'lbr_flange'))
    pose = lambda name: xyz_rpy_to_pose(values[name])   # noqa: E731
    controller = ObswController(model, pose('pose_tool_in_flange_xyz_rpy'), pose('pose_grasp_in_client_xyz_rpy'),
                                pose('pose_tool_at_grasp_in_grasp_xyz_rpy'), pose('pose_base_in_client_desired_xyz_rpy'),
                                values['q_hold'])
    joint_names = list(values.get('joint_names') or model.joint_names)
    return controller, joint_names


def read_live_run(folder) -> dict:
    """The recorded live run of ``folder`` (its ``live/`` bag and ``live_nodes/``) as arrays on the run's clock.

    Keys (``t_*`` in s of run time, each series with its own time base):
    ``t_state``, ``twist_base_rel_client`` (N, 6; base axes, linear first), ``rate_client_body``,
    ``rate_base_body`` (N, 3 rad/s), ``base_error``, ``tool_error`` (N, 6; m, rad; absent without
    the OBSW's parameters); ``t_thrust``, ``wrench_base_com_cmd``; ``t_tau``, ``tau_arm_cmd``;
    ``t_ft_client``, ``wrench_client_ft_in_sensor``; ``t_ft_wrist``, ``wrench_wrist_ft_in_sensor``;
    ``t_passivity_client``, ``passivity_client``, ``t_passivity_servicer``, ``passivity_servicer``
    (N, 5, ``PASSIVITY_LAYOUT``); ``t_nominal_client``, ``pose_nominal_client``, ``t_nominal_servicer``,
    ``pose_nominal_servicer`` (N, 7 x y z qx qy qz qw: each admittance's nominal in orbit, where a state and
    a table command share a stamp), ``pose_cmd_client``, ``pose_cmd_servicer`` (the table commands ``g_c``,
    ``g_s`` at those stamps); ``rebase_plans`` (the re-basing plans published); ``t_gripper``, ``gripper_cmd``; plus
    ``phase_times_s`` (dict: when the demo's observer got each phase), ``phase_stamps_s`` (dict: each phase by the
    OBSW's stamp, that of the message it published in the same step, to one OBSW step; empty without the recorded
    ``obsw/phase``), ``start_s`` (the twin's time at t = 0) and ``notes`` (list of what is missing and why).
    """
    from hil_admittance.node_common import arm_joints
    from hil_common.conversions import pose_from_msg, twist_from_msg, wrench_from_msg
    from hil_dynamics.contact import relative_twist

    folder = Path(folder)
    topics = read_bag(folder / 'live')
    summary_path = folder / 'live_nodes' / 'live_summary.json'
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    notes: list[str] = []
    phases = {p['phase']: float(p['t_s']) for p in summary.get('phases', [])}

    def stamps_of(topic):
        logs, stamps, _ = topics[topic]
        if stamps is not None:
            return stamps
        companion = topics.get(COMPANIONS.get(topic, ''))
        if companion is None or not len(companion[0]):
            return None
        return companion_stamps(logs, companion[0], companion[1])

    start_s = (summary.get('lab_clock') or {}).get('start_s')
    if start_s is None:      # older runs: the first phase's run time against its stamp in the bag
        if phases and 'obsw/phase' in topics and stamps_of('obsw/phase') is not None:
            first = min(phases, key=phases.get)
            names = [m.data for m in topics['obsw/phase'][2]]
            if first in names:
                start_s = float(stamps_of('obsw/phase')[names.index(first)] - phases[first])
                notes.append('no lab_clock.start_s in live_summary.json: t = 0 placed by the first OBSW phase')
        if start_s is None:
            start_s = 0.0
            notes.append('no lab_clock.start_s in live_summary.json: times are the twin\'s clock')
    if not phases and 'obsw/phase' in topics and stamps_of('obsw/phase') is not None:
        for name, t in zip((m.data for m in topics['obsw/phase'][2]), stamps_of('obsw/phase')):
            phases.setdefault(name, float(t - start_s))
    # each phase by the OBSW's own stamp (its companion's, known to one OBSW step), not by when an observer got it
    phase_stamps: dict[str, float] = {}
    if 'obsw/phase' in topics and stamps_of('obsw/phase') is not None:
        for name, t in zip((m.data for m in topics['obsw/phase'][2]), stamps_of('obsw/phase')):
            phase_stamps.setdefault(name, float(t - start_s))
    data: dict = {'phase_times_s': phases, 'phase_stamps_s': phase_stamps, 'start_s': float(start_s), 'notes': notes}

    def series(topic, key_t, key_v, convert, width):
        if topic not in topics or not len(topics[topic][0]):
            notes.append(f'{topic}: no messages recorded')
            return
        stamps = stamps_of(topic)
        if stamps is None:
            notes.append(f'{topic}: no stamps and no companion topic recorded')
            return
        data[key_t] = stamps - start_s
        data[key_v] = np.array([convert(m) for m in topics[topic][2]], dtype=float).reshape(-1, width)

    series('servicer/base_wrench_cmd', 't_thrust', 'wrench_base_com_cmd', lambda m: wrench_from_msg(m.wrench), 6)
    series('client/ft/wrench', 't_ft_client', 'wrench_client_ft_in_sensor', lambda m: wrench_from_msg(m.wrench), 6)
    series('servicer/ft/wrench', 't_ft_wrist', 'wrench_wrist_ft_in_sensor', lambda m: wrench_from_msg(m.wrench), 6)
    series('client/passivity', 't_passivity_client', 'passivity_client', lambda m: list(m.data)[:5], 5)
    series('servicer/passivity', 't_passivity_servicer', 'passivity_servicer', lambda m: list(m.data)[:5], 5)
    series('servicer/gripper_cmd', 't_gripper', 'gripper_cmd', lambda m: float(m.data), 1)
    if 'servicer_arm/torque_cmd' in topics and len(topics['servicer_arm/torque_cmd'][0]):
        width = max(len(m.data) for m in topics['servicer_arm/torque_cmd'][2])
        keep = [len(m.data) == width for m in topics['servicer_arm/torque_cmd'][2]]
        series('servicer_arm/torque_cmd', 't_tau', 'tau_arm_cmd',
               lambda m: list(m.data) if len(m.data) == width else [np.nan] * width, width)
        if 't_tau' in data and not all(keep):
            data['t_tau'], data['tau_arm_cmd'] = data['t_tau'][keep], data['tau_arm_cmd'][keep]
    else:
        notes.append('servicer_arm/torque_cmd: no messages recorded')

    # Each admittance's own nominal, g_n = g_t g_c^-1 = g_b g_s^-1 (Eq. 23), from its state and its table's pose
    # command of the same stamp: the two must be one (the mission clock, the re-basing plan)
    for which, command in (('client', 'client/table/pose_cmd'), ('servicer', 'servicer/table/pose_cmd')):
        if not all(topic in topics and len(topics[topic][0]) for topic in (f'{which}/state', command)):
            continue
        commands = {round(float(t), 6): m for t, m in zip(topics[command][1], topics[command][2])}
        pairs = [(float(t), pose_from_msg(m.pose.pose) * pose_from_msg(commands[round(float(t), 6)].pose).inverse())
                 for t, m in zip(topics[f'{which}/state'][1], topics[f'{which}/state'][2]) if round(float(t), 6) in commands]
        if pairs:
            data[f't_nominal_{which}'] = np.array([t for t, _ in pairs]) - start_s
            data[f'pose_nominal_{which}'] = np.array([pin.SE3ToXYZQUAT(g) for _, g in pairs])
            data[f'pose_cmd_{which}'] = np.array([pin.SE3ToXYZQUAT(pose_from_msg(commands[round(t, 6)].pose))
                                                  for t, _ in pairs])
    if 'nominal/rebase_plan' in topics:
        data['rebase_plans'] = [list(m.data) for m in topics['nominal/rebase_plan'][2]]

    # Eq. (23) states of both bodies on one time base: the sparser topic's stamps, the other interpolated.
    if not all(topic in topics and len(topics[topic][0]) >= 2 for topic in ('client/state', 'servicer/state')):
        notes.append('client/state or servicer/state: too few messages for the relative motion and the OBSW errors')
        return data
    states = {}
    for which in ('client', 'servicer'):
        _, stamps, msgs = topics[f'{which}/state']
        order = np.argsort(stamps, kind='stable')
        t = stamps[order] - start_s
        keep = np.concatenate(([True], np.diff(t) > 0.0))           # one state per stamp
        states[which] = (t[keep], [pose_from_msg(msgs[i].pose.pose) for i in order[keep]],
                         np.array([twist_from_msg(msgs[i].twist.twist) for i in order[keep]]))
    sparse, dense = sorted(states, key=lambda w: len(states[w][0]))
    t_grid = states[sparse][0]
    t_grid = t_grid[(t_grid >= states[dense][0][0]) & (t_grid <= states[dense][0][-1])]
    if len(t_grid) < 2:
        notes.append('client/state and servicer/state do not overlap in time')
        return data
    pick = np.searchsorted(states[sparse][0], t_grid)
    on_grid = {sparse: ([states[sparse][1][i] for i in pick], states[sparse][2][pick]),
               dense: interpolate_states(*states[dense], t_grid)}
    (g_t, v_t), (g_b, v_b) = on_grid['client'], on_grid['servicer']
    data['t_state'] = t_grid
    data['twist_base_rel_client'] = np.array([relative_twist(gt.actInv(gb), vt, vb)
                                              for gt, vt, gb, vb in zip(g_t, v_t, g_b, v_b)])
    data['rate_client_body'], data['rate_base_body'] = v_t[:, 3:].copy(), v_b[:, 3:].copy()

    obsw = load_obsw(folder)
    if obsw is None:
        notes.append('no example-OBSW parameters (live_nodes/params/obsw_controller.yaml): no manipulator/base errors')
        return data
    controller, joint_names = obsw
    # The OBSW's errors (hil_admittance.obsw.ObswController.update): e_b = log6(g_bt*^-1 g_t^-1 g_b) and the
    # tool relative to the fixture target, -log6(g_tool^-1 g_t g_target_in_client), in tool axes.
    data['base_error'] = np.array([pin.log6(controller.pose_base_in_client_desired.actInv(gt.actInv(gb))).vector
                                   for gt, gb in zip(g_t, g_b)])
    joints = topics.get('servicer_arm/joint_states')
    if joints is None or len(joints[0]) < 2:
        notes.append('servicer_arm/joint_states: too few messages: no manipulator error')
        return data
    rows = [(s, arm_joints(m, joint_names)) for s, m in zip(joints[1], joints[2])]
    t_q = np.array([s for s, qd in rows if qd is not None]) - start_s
    q = np.array([qd[0] for _, qd in rows if qd is not None])
    order = np.argsort(t_q, kind='stable')
    t_q, q = t_q[order], q[order]
    q_grid = np.column_stack([np.interp(t_grid, t_q, q[:, j]) for j in range(q.shape[1])])
    tool_error = []
    for gt, gb, qk in zip(g_t, g_b, q_grid):
        pose_tool, _ = controller.tool_kinematics(gb, qk)
        tool_error.append(-pin.log6(pose_tool.actInv(gt * controller.pose_target_in_client)).vector)
    data['tool_error'] = np.array(tool_error)
    _lab_against_simulation(folder, topics, data, controller, start_s, notes)
    return data


def _node_parameter(folder: Path, files: tuple, name: str):
    """Parameter ``name`` of the first of the nodes' parameter ``files`` (``live_nodes/params``) that has it."""
    import yaml

    for file in files:
        path = folder / 'live_nodes' / 'params' / file
        if path.is_file():
            values = next(iter(yaml.safe_load(path.read_text()).values()))['ros__parameters']
            if name in values:
                return values[name]
    return None


def _lab_against_simulation(folder: Path, topics: dict, data: dict, controller, start_s: float, notes: list) -> None:
    """``lab_tool_error_m`` / ``lab_tool_error_rad`` (at ``t_lab``): the twin's measured tool pose relative to
    the grasp target (its two sensors' poses, ``<sensor>/sensor_pose``, through the poses of the sensors on
    the client and the flange the nodes ran with) against the simulated one (Eq. 23, ``tool_error``): how
    far the lab realises the simulated relative pose (issue 11 item 1). Sensor poses are matched to the
    states' stamps within a millisecond."""
    from hil_common.conversions import pose_from_msg, xyz_rpy_to_pose

    poses = [topics.get(t) for t in ('client_ft/sensor_pose', 'servicer_wrist_ft/sensor_pose')]
    sensor_in_client = _node_parameter(folder, ('client_hot_path.yaml', 'client_admittance.yaml'),
                                       'pose_sensor_in_client_xyz_rpy')
    sensor_in_ee = _node_parameter(folder, ('servicer_hot_path.yaml', 'servicer_admittance.yaml'),
                                   'pose_sensor_in_ee_xyz_rpy')
    if any(p is None or not len(p[0]) for p in poses) or sensor_in_client is None or sensor_in_ee is None:
        notes.append('no sensor poses of the twin or no sensor calibration recorded: the lab is not compared '
                     'with the simulation')
        return
    target_in_client_sensor = xyz_rpy_to_pose(sensor_in_client).actInv(controller.pose_target_in_client)
    tool_in_wrist_sensor = xyz_rpy_to_pose(sensor_in_ee).actInv(controller.pose_tool_in_flange)
    by_stamp = []
    for _, stamps, msgs in poses:
        by_stamp.append({int(round((s - start_s) * 1e3)): m for s, m in zip(stamps, msgs)})
    t_lab, err_m, err_rad = [], [], []
    for t, e in zip(data['t_state'], data['tool_error']):
        key = int(round(t * 1e3))
        if key not in by_stamp[0] or key not in by_stamp[1]:
            continue
        target = pose_from_msg(by_stamp[0][key].pose) * target_in_client_sensor
        tool = pose_from_msg(by_stamp[1][key].pose) * tool_in_wrist_sensor
        off = pin.exp6(pin.Motion(e)).actInv(target.actInv(tool))       # simulated -> measured
        t_lab.append(t)
        err_m.append(float(np.linalg.norm(off.translation)))
        err_rad.append(float(np.linalg.norm(pin.log3(off.rotation))))
    data['t_lab'], data['lab_tool_error_m'], data['lab_tool_error_rad'] = (np.array(t_lab), np.array(err_m),
                                                                          np.array(err_rad))


# -- figures (hil_bringup.plot_style) -------------------------------------------------------------
def _missing(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha='center', va='center', fontsize=8, wrap=True)


def _finish(axes, phases, xlabel_row) -> None:
    from hil_bringup import plot_style as ps

    for ax in np.ravel(axes):
        ps.mark_events(ax, phases, PHASE_LINES)
        ps.legend(ax, ncol=2)
    for ax in np.ravel(xlabel_row):
        ax.set_xlabel('t [s] (run time, the twin\'s simulated clock)')


def plot_live_capture(folder, out, data: dict | None = None) -> list[Path]:
    """The live run's figures (module doc) written into ``out``; returns their paths.

    ``data``: what :func:`read_live_run` returned for ``folder``, if the caller has read it already.
    """
    from hil_bringup import plot_style as ps

    d = read_live_run(folder) if data is None else data
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    phases = d['phase_times_s']
    title = 'Live Envisat capture (launch file\'s node set, lab twin)'
    paths = []

    fig, axes = ps.figure(2, 2, width=12.0, row_height=3.2, title=f'{title}: OBSW errors and actuation (cf. seed 004 Fig. 12)')
    for ax, key, name, what in ((axes[0, 0], 'tool_error', 'dp_m', 'manipulator error: tool to grasp fixture (tool axes)'),
                                (axes[0, 1], 'base_error', 'dp_b', 'base error: to the synchronisation set point')):
        ax.set_title(what, fontsize=9)
        ps.label(ax, name, 'mm')
        if key in d:
            for i, axis in enumerate('xyz'):
                ax.plot(d['t_state'], d[key][:, i] * 1e3, label=f'{name},{axis}')
        else:
            _missing(ax, 'not available: OBSW parameters or arm joints not recorded')
    axes[1, 0].set_title('arm joint torques commanded by the OBSW (servicer_arm/torque_cmd)', fontsize=9)
    ps.label(axes[1, 0], 'tau', 'N m')
    if 'tau_arm_cmd' in d:
        for j in range(d['tau_arm_cmd'].shape[1]):
            axes[1, 0].plot(d['t_tau'], d['tau_arm_cmd'][:, j], lw=0.8, label=f'tau_{j + 1}')
    else:
        _missing(axes[1, 0], 'servicer_arm/torque_cmd not recorded')
    axes[1, 1].set_title('thruster force on the base (servicer/base_wrench_cmd)', fontsize=9)
    ps.label(axes[1, 1], 'F_b', 'N')
    if 'wrench_base_com_cmd' in d:
        for i, axis in enumerate('xyz'):
            axes[1, 1].plot(d['t_thrust'], d['wrench_base_com_cmd'][:, i], label=f'F_b,{axis}')
    else:
        _missing(axes[1, 1], 'servicer/base_wrench_cmd not recorded')
    _finish(axes, phases, axes[1])
    paths.append(ps.save(fig, out / 'live_fig12_errors_and_actuation.png'))

    fig, axes = ps.figure(3, 1, width=9.0, row_height=2.8, title=f'{title}: servicer base relative to the client, base axes '
                                                                 '(cf. seed 004 Fig. 13)')
    if 'twist_base_rel_client' in d:
        t, rel = d['t_state'], d['twist_base_rel_client']
        for i, axis in enumerate('xyz'):
            axes[0, 0].plot(t, np.degrees(rel[:, 3 + i]), label=f'w_{axis}')
            axes[1, 0].plot(t, rel[:, i] * 1e3, label=f'v_{axis}')
        axes[0, 0].axhspan(-0.05, 0.05, color='green', alpha=0.15, label='settled band +-0.05 deg/s')
        axes[1, 0].axhspan(-1.0, 1.0, color='green', alpha=0.15, label='settled band +-1 mm/s')
        axes[2, 0].plot(t, np.degrees(np.linalg.norm(d['rate_client_body'], axis=1)), label='|w| client (client/state)')
        axes[2, 0].plot(t, np.degrees(np.linalg.norm(d['rate_base_body'], axis=1)), label='|w| servicer base (servicer/state)',
                        ls='--')
    else:
        for ax in axes[:, 0]:
            _missing(ax, 'client/state, servicer/state not recorded')
    ps.label(axes[0, 0], 'rel. angular vel.', 'deg/s')
    ps.label(axes[1, 0], 'rel. linear vel.', 'mm/s')
    ps.label(axes[2, 0], 'angular rate', 'deg/s')
    _finish(axes, phases, axes[2, 0])
    paths.append(ps.save(fig, out / 'live_fig13_relative_velocity.png'))

    fig, axes = ps.figure(2, 1, width=9.0, row_height=2.8, title=f'{title}: contact wrenches of both F/T sensors')
    for key_t, key, name, style in (('t_ft_client', 'wrench_client_ft_in_sensor', 'client sensor (client/ft/wrench)', {}),
                                    ('t_ft_wrist', 'wrench_wrist_ft_in_sensor', 'wrist sensor (servicer/ft/wrench)',
                                     {'ls': '--'})):
        if key in d:
            axes[0, 0].plot(d[key_t], np.linalg.norm(d[key][:, :3], axis=1), lw=0.8, label=name, **style)
            axes[1, 0].plot(d[key_t], np.linalg.norm(d[key][:, 3:], axis=1), lw=0.8, label=name, **style)
        else:
            _missing(axes[0, 0], f'{name}: not recorded')
    ps.label(axes[0, 0], '|F|', 'N')
    ps.label(axes[1, 0], '|T| about the sensor origin', 'N m')
    _finish(axes, phases, axes[1, 0])
    paths.append(ps.save(fig, out / 'live_contact_wrenches.png'))

    fig, axes = ps.figure(2, 1, width=9.0, row_height=2.8, title=f'{title}: passivity observers (seed 004 Eqs. 26-28)')
    for ax, port in zip(axes[:, 0], ('client', 'servicer')):
        key = f'passivity_{port}'
        ax.set_title(f'{port} port ({port}/passivity)', fontsize=9)
        ps.label(ax, 'energy', 'J')
        if key in d:
            ax.plot(d[f't_{key}'], d[key][:, 0], label='observed E_obs', **ps.UNDER_TEST)
            ax.plot(d[f't_{key}'], d[key][:, 3], label='dissipated by the controller', **ps.DIFFERENCE)
        else:
            _missing(ax, f'{port}/passivity: no messages recorded' + (
                ' (the fused client_hot_path node, the default, does not publish it)' if port == 'client' else ''))
    _finish(axes, phases, axes[1, 0])
    paths.append(ps.save(fig, out / 'live_passivity.png'))
    return paths


def rebase_figures(run: dict) -> dict | None:
    """What the live post-grasp re-basing did (:mod:`hil_dynamics.rebase`), from :func:`read_live_run`; None
    when no plan was published.

    * ``nominals_apart_m`` / ``_rad``: the two admittances' nominals (``g_t g_c^-1`` and ``g_b g_s^-1``,
      Eq. 23) at their common stamps, the largest difference (over the run and from the plan's start on);
    * ``compound_moves_in_ramp`` / ``_after_ramp``: the plan's free compound (Eq. 4 with its mass
      properties), integrated here from where the servicer node placed it, seen from the recorded nominal:
      it moves while ``V_n`` blends over and stays put once the nominal is its free motion (max of
      ``log6``, m and rad);
    * ``table_step_in_ramp_m`` / ``table_step_before_m``: the largest change of the client table command
      between two states, in the ramp and in the second before the plan's start.
    """
    from hil_dynamics.client import ClientAdmittance
    from hil_dynamics.rebase import RebasePlan

    plans = run.get('rebase_plans') or []
    if not plans or 't_nominal_servicer' not in run or 't_nominal_client' not in run:
        return None
    plan = RebasePlan.from_list(plans[0])
    start = plan.t_start - run['start_s']
    out = {'plans': len(plans), 'plan_start_s': float(start), 'ramp_s': float(plan.ramp_s),
           'compound_mass_kg': float(plan.mass_kg)}
    client_n = {round(float(t), 4): x for t, x in zip(run['t_nominal_client'], run['pose_nominal_client'])}
    apart = np.array([(t, np.linalg.norm(x[:3] - client_n[round(float(t), 4)][:3]),
                       np.linalg.norm(pin.log3(pin.XYZQUATToSE3(x).rotation.T
                                               @ pin.XYZQUATToSE3(client_n[round(float(t), 4)]).rotation)))
                      for t, x in zip(run['t_nominal_servicer'], run['pose_nominal_servicer'])
                      if round(float(t), 4) in client_n]).reshape(-1, 3)
    since = apart[:, 0] >= start
    out.update(common_stamps=int(len(apart)), common_stamps_since_plan=int(since.sum()),
               nominals_apart_m=float(apart[:, 1].max()) if len(apart) else None,
               nominals_apart_rad=float(apart[:, 2].max()) if len(apart) else None)
    t_s, x_s = run['t_nominal_servicer'], run['pose_nominal_servicer']
    k = int(np.searchsorted(t_s, start - 1e-9))
    if k >= len(t_s) - 1:
        return out
    dt = float(np.median(np.diff(t_s)))
    free = ClientAdmittance(plan.body(), plan.twist_com_body, pin.XYZQUATToSE3(x_s[k]) * plan.pose_com_in_nominal)
    t, seen = float(t_s[k]), []
    for j in range(k, len(t_s)):
        if t_s[j] - t > 1e-9:
            free.step(np.zeros(6), float(t_s[j] - t))      # one free-body step per recorded interval
            t = float(t_s[j])
        seen.append(pin.XYZQUATToSE3(x_s[j]).actInv(free.state.pose_nominal_in_orbit))
    moves = np.array([np.abs(pin.log6(seen[-1].actInv(c)).vector).max() for c in seen])
    after = t_s[k:] > start + plan.ramp_s + max(dt, 0.05)
    out.update(compound_moves_in_ramp=float(moves[~after].max()),
               compound_moves_after_ramp=float(moves[after].max()) if after.any() else None,
               samples_after_ramp=int(after.sum()))
    t_c, g_c = run['t_nominal_client'], run['pose_cmd_client']
    steps = np.linalg.norm(np.diff(g_c[:, :3], axis=0), axis=1)
    in_ramp = (t_c[1:] >= start) & (t_c[1:] <= start + plan.ramp_s)
    before = (t_c[1:] >= start - 1.0) & (t_c[1:] < start)
    out.update(table_step_in_ramp_m=float(steps[in_ramp].max()) if in_ramp.any() else None,
               table_step_before_m=float(steps[before].max()) if before.any() else None)
    return out
