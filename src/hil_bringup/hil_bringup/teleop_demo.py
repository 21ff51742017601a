"""Seed 001 demo: delayed teleoperation of a massive payload in simulation (lockstep runner).

    teleop_demo [--scenario massive_payload_teleop] [--out runs/teleop] [--quick] [--ros]

Runs, with the rule objects of :mod:`hil_teleop` and the scenario YAML:

* HIL validity (3000 kg, step ``v_s,r = 0.01 m/s``)            -> ``fig08_velocity.png``, ``fig09_force.png``
* 500 kg pulled 60 s without / with force feedback              -> ``fig10_no_feedback.png``, ``fig11_feedback.png``
* HILS 1 (scenario payload, 0.01 m/s for 20 s, no delay)        -> ``fig12_force_virtual.png``, ``fig13_position_virtual.png``
* HILS 2 (the scenario: scripted operator, delay)               -> ``fig14_force_position.png`` ... ``fig17_position_aligned.png``

and records HILS 2 to the bag ``hils2/`` (rosbag2, MCAP storage: ``hils2_0.mcap``, ``metadata.yaml``) on the topics the ROS graph
uses (``teleop/f_m``, ``teleop/x_vir``, ``teleop/f_vir``, ``slave/ft/wrench``, ``slave/x_s``,
``payload/pose``), so the same tools read the simulation and a lab run. ``--quick`` skips
the 60 s comparison. Plots through matplotlib's Agg backend.

With the lab twin in the loop (:mod:`hil_bringup.runners.teleop_twin`: KR 120 slave gripping the
mock-up on the UR10e payload table, F/T sensors, motion tables), it also runs the 3000 kg step
and HILS 2 -> ``twin/fig08..fig17*.png``, ``twin/hils2_twin/``, a rendered ``twin/facility.png`` and
the animation ``twin/hils2_twin.mp4`` (``--no-twin`` skips them).

``--ros`` runs the scenario instead as the ROS graph of ``massive_payload_teleop.launch.py``
over DDS on loopback, printing progress, and records it to the bag ``ros_graph/``
with ``ros_fig14``/``ros_fig17`` plots: ``--graph twin`` (default, ``sim:=true``: the MuJoCo lab
twin serving both F/T sensors over RDT/UDP to ``ft_sensor_node``, two ``motion_table_node``,
teleop master, delay line, slave law on the slave's joint states, client admittance as the
payload in the loop) or ``--graph contact`` (``sim:=contact``: the grip-contact simulator
instead of robots). With the twin the graph runs on the twin's simulated clock (``lab_clock:=auto``):
``--duration`` seconds of simulated time, however long this machine takes, and the demo prints the
real-time factor and the twin's barrier misses; the contact graph runs in real time. Only that mode
imports rclpy.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from hil_bringup.runners.teleop import run_teleop
from hil_bringup.runners.teleop_experiments import step_pull, with_gains
from hil_teleop.config import TeleopConfig, TeleopRun, mse
from hil_teleop.coordinates import pose_from_x
from hil_teleop.scenario import TeleopScenario, load_teleop_scenario

from hil_common.errors import StartError

RECORD_HZ = 50.0


# -- plots in the style of seed 001 Figs. 8-17 ---------------------------------------------
def _figure(path: Path, title: str, panels):
    """``panels`` = [(ylabel with unit, [(t, y, label), ...]), ...] stacked vertically, time in s."""
    from hil_bringup import plot_style as ps

    fig, axes = ps.figure(len(panels), 1, width=7.0, row_height=2.6, title=title)
    for ax, (ylabel, series) in zip(axes[:, 0], panels):
        for t, y, label in series:
            ax.plot(t, y, label=label, linewidth=1.0)
        ax.set_ylabel(ylabel)
        ps.legend(ax)
    axes[-1, 0].set_xlabel('t [s]')
    return ps.save(fig, path)


def plot_step(run: TeleopRun, out: Path, mass_kg: float) -> list[Path]:
    t = run.t
    return [
        _figure(out / 'fig08_velocity.png', f'Fig. 8 style: v_s,c and v_s,r (x), {mass_kg:.0f} kg',
                [('velocity [m/s]', [(t, run.v_s_r[:, 0], 'v_s,r'), (t, run.v_s_c[:, 0], 'v_s,c'),
                                     (t, run.v_s[:, 0], 'v_s')])]),
        _figure(out / 'fig09_force.png', f'Fig. 9 style: force of slave arm (x), {mass_kg:.0f} kg',
                [('f_s,x [N]', [(t, run.f_s[:, 0], 'f_s')])]),
    ]


def plot_feedback(runs: dict, out: Path) -> list[Path]:
    paths = []
    for fb, name, fig in ((False, 'fig10_no_feedback.png', 10), (True, 'fig11_feedback.png', 11)):
        r = runs[fb]
        paths.append(_figure(out / name, f'Fig. {fig} style: 500 kg {"with" if fb else "without"} force feedback '
                                         f'(MSE {mse(r.f_s[:, :3]):.2f} N^2)',
                             [('force [N]', [(r.t, r.f_s[:, i], f'f_s,{a}') for i, a in enumerate('xyz')]),
                              ('x_s [m]', [(r.t, r.x_s[:, 0], 'x_s')])]))
    return paths


def plot_virtual(run: TeleopRun, out: Path, first: int, label: str) -> list[Path]:
    """Slave vs virtual arm, the earth time axis shifted by the delay (seed Figs. 12-13 / 16-17)."""
    f_vir, f_s = run.aligned(run.f_vir, run.f_s)
    x_vir, x_s = run.aligned(run.x_vir, run.x_s)
    t = run.t[run.delay_steps():]
    return [
        _figure(out / f'fig{first:02d}_force_{"aligned" if run.delay_s else "virtual"}.png',
                f'Fig. {first} style: force of slave and virtual arm (x), {label}',
                [('force [N]', [(t, f_s[:, 0], 'slave f_s'), (t, f_vir[:, 0], f'virtual f_vir (t - {run.delay_s:g} s)')])]),
        _figure(out / f'fig{first + 1:02d}_position_{"aligned" if run.delay_s else "virtual"}.png',
                f'Fig. {first + 1} style: position of slave and virtual arm (x), {label}',
                [('x [m]', [(t, x_s[:, 0], 'slave x_s'), (t, x_vir[:, 0], f'virtual x_vir (t - {run.delay_s:g} s)')]),
                 ('error [mm]', [(t, 1e3 * (x_vir[:, 0] - x_s[:, 0]), 'x_vir - x_s')])]),
    ]


def plot_hils2(run: TeleopRun, out: Path, label: str) -> list[Path]:
    t = run.t
    return [
        _figure(out / 'fig14_force_position.png', f'Fig. 14 style: force and position of slave arm, {label}',
                [('force [N]', [(t, run.f_s[:, i], f'f_s,{a}') for i, a in enumerate('xyz')]),
                 ('x_s [m]', [(t, run.x_s[:, 0], 'x_s')])]),
        _figure(out / 'fig15_reference_velocity.png', f'Fig. 15 style: reference velocity of slave arm (x), {label}',
                [('v_s,r [m/s]', [(t, run.v_s_r[:, 0], 'v_s,r (orbit)'),
                                  (t, run.v_vir[:, 0], 'v_vir (earth)')])]),
        *plot_virtual(run, out, 16, label),
    ]


# -- MCAP recording --------------------------------------------------------------------------
def record_mcap(run: TeleopRun, path: Path, frame_id: str = 'slave_base', rate_hz: float = RECORD_HZ) -> Path:
    """Write ``run`` to the bag folder ``path`` (rosbag2, MCAP storage) at ``rate_hz`` (stamps = simulated time from 0)."""
    from rosbags.typesys import Stores, get_typestore

    from hil_bringup.recorder import McapWriter

    ts = get_typestore(Stores.ROS2_JAZZY)
    T = ts.types
    Header, Time = T['std_msgs/msg/Header'], T['builtin_interfaces/msg/Time']
    Vec, Pt, Quat = T['geometry_msgs/msg/Vector3'], T['geometry_msgs/msg/Point'], T['geometry_msgs/msg/Quaternion']
    WrenchStamped, Wrench = T['geometry_msgs/msg/WrenchStamped'], T['geometry_msgs/msg/Wrench']
    PoseStamped, Pose = T['geometry_msgs/msg/PoseStamped'], T['geometry_msgs/msg/Pose']

    def header(t):
        ns = int(round(t * 1e9))
        return Header(stamp=Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000), frame_id=frame_id)

    def wrench(t, w):
        return WrenchStamped(header=header(t), wrench=Wrench(force=Vec(x=w[0], y=w[1], z=w[2]),
                                                              torque=Vec(x=w[3], y=w[4], z=w[5])))

    def pose(t, x):
        g = pose_from_x(x)
        qx, qy, qz, qw = __import__('pinocchio').Quaternion(g.rotation).coeffs()
        p = g.translation
        return PoseStamped(header=header(t), pose=Pose(position=Pt(x=p[0], y=p[1], z=p[2]),
                                                      orientation=Quat(x=qx, y=qy, z=qz, w=qw)))

    topics = [('/teleop/f_m', 'geometry_msgs/msg/WrenchStamped', run.f_m, wrench),
              ('/teleop/f_vir', 'geometry_msgs/msg/WrenchStamped', run.f_vir, wrench),
              ('/slave/ft/wrench', 'geometry_msgs/msg/WrenchStamped', run.f_s, wrench),
              ('/teleop/x_vir', 'geometry_msgs/msg/PoseStamped', run.x_vir, pose),
              ('/slave/x_s', 'geometry_msgs/msg/PoseStamped', run.x_s, pose),
              ('/payload/pose', 'geometry_msgs/msg/PoseStamped', run.x_payload, pose)]
    every = max(1, int(round(1.0 / (rate_hz * run.dt))))
    writer = McapWriter(path)
    try:
        for k in range(0, len(run.t), every):
            t = float(run.t[k])
            for name, msgtype, data, make in topics:
                writer.write_serialized(name, msgtype, ts.serialize_cdr(make(t, [float(v) for v in data[k]]), msgtype),
                                        int(round(t * 1e9)))
    finally:
        writer.close()
    return path


# -- the same experiment as a ROS graph (real DDS on loopback) --------------------------------
# The node set is hil_bringup.graphs.teleop_graph, the one massive_payload_teleop.launch.py starts.
SIMS = {'twin': 'true', 'contact': 'contact'}
from hil_bringup.graphs import TELEOP_RECORD_TOPICS as RECORDED  # noqa: E402  (the graph's recorded topics)


def node_of_parameter_key(key: str) -> str:
    """Fully qualified node name of a :meth:`TeleopScenario.twin_node_parameters` key."""
    for who in ('slave', 'payload'):
        if key == f'{who}_ft':
            return f'/{who}/ft_sensor'
        if key == f'{who}_table':
            return f'/{who}/motion_table'
    return f'/{key}'


def run_graph(scenario: TeleopScenario, duration_s: float, bag: Path | None = None,
              overrides: dict | None = None, sim: str = 'contact', rate_hz: float | None = None,
              progress=None, lab_clock: str = 'auto', wall_budget_s: float | None = None,
              until: Callable[[dict], bool] | None = None) -> dict:
    """Run the graph of ``massive_payload_teleop.launch.py sim:=true|contact`` (``sim`` ``'twin'`` or
    ``'contact'``) for ``duration_s`` from the teleop master's first step (the operator's time zero);
    record :data:`RECORDED` (to ``bag`` as MCAP).

    With the twin on its simulated clock (``sim='twin'``, launch argument ``lab_clock`` ``'auto'`` or
    ``'simulated'``) the run lasts ``duration_s`` of the twin's simulated time (``/clock``), however
    long that takes, within ``wall_budget_s`` of wall time (default ``max(120, 20 duration_s)``), and
    the receive times are simulated times; otherwise it lasts ``duration_s`` of wall time. With
    ``until(data)`` it also lasts until that holds (within ``wall_budget_s``): on the wall clock a node that
    counts its own time in timer ticks falls behind on a busy machine, and a check of its state at a
    time of its own waits for it to get there.

    Returns ``{topic: [(receive_time_ns, message), ...]}``, the nodes' output under ``'_outputs'`` and
    the clock's account under ``'_lab_clock'``: ``simulated``, ``seconds`` (the run's duration on the
    lab's clock), ``wall_s``, ``real_time_factor``, ``finished`` (the run reached ``duration_s``, and ``until`` held) and,
    on the simulated clock, the twin's last ``lab_twin/status``: ``misses`` per robot (steps the twin
    took without the stack's command, after ``barrier_timeout_s``) and the twin's own ``twin_real_time_factor``.
    ``overrides`` = ``{node key: {parameter: value}}`` on top of the scenario's (keys of
    :meth:`TeleopScenario.twin_node_parameters`); ``progress(elapsed_s, data)`` is called about once a
    second of the lab's clock.
    """
    import tempfile
    import time

    from diagnostic_msgs.msg import DiagnosticStatus
    from geometry_msgs.msg import PoseStamped, WrenchStamped
    from rclpy.parameter import Parameter

    from hil_bringup.graph_runner import RunningGraph
    from hil_bringup.graphs import replace_parameters, teleop_graph
    from hil_common.network import apply_network_profile, free_udp_ports
    from hil_common.ros_testing import spin_until, test_node

    apply_network_profile()
    ports = free_udp_ports(2)
    graph = teleop_graph({'sim': SIMS[sim], 'slave_ft_port': str(ports[0]), 'payload_ft_port': str(ports[1]),
                          'lab_clock': lab_clock}, scenario=scenario, rate_hz=rate_hz)
    for key, values in (overrides or {}).items():
        graph = replace_parameters(graph, node_of_parameter_key(key), **values)
    master = graph.node('/teleop_master').parameters      # and this recorder sees the whole script
    graph = replace_parameters(graph, '/teleop_master',
                               scripted_start_subscribers=master['scripted_start_subscribers'] + 1)
    sim_clock = any(n.parameters.get('clock') == 'simulated' for n in graph.nodes if n.executable == 'lab_twin_node')
    wall_budget_s = wall_budget_s if wall_budget_s is not None else max(120.0, 20.0 * duration_s)
    data = {topic: [] for topic, _ in RECORDED}
    status = {}
    workdir = Path(tempfile.mkdtemp(prefix='teleop_graph_')) if bag is None else bag.parent / f'{bag.name}_graph'
    with test_node('teleop_recorder') as (node, executor):
        if sim_clock:          # the recorder on the twin's timeline too: receive times are simulated times
            node.set_parameters([Parameter('use_sim_time', Parameter.Type.BOOL, True)])

        def lab_s() -> float:
            return node.get_clock().now().nanoseconds * 1e-9 if sim_clock else time.monotonic()
        types = {'geometry_msgs/msg/PoseStamped': PoseStamped, 'geometry_msgs/msg/WrenchStamped': WrenchStamped}
        for topic, msgtype in RECORDED:
            node.create_subscription(types[msgtype], topic, lambda m, t=topic: data[t].append(
                (node.get_clock().now().nanoseconds, m)), 1000)
        if sim_clock:
            node.create_subscription(DiagnosticStatus, 'lab_twin/status', lambda m: status.update(
                {kv.key: kv.value for kv in m.values}), 10)
        running = RunningGraph(graph, workdir, say=lambda m: None)
        start = wall_start = None
        try:
            running.start()
            if sim_clock and not spin_until(executor, lambda: lab_s() > 0.0, 10.0):
                raise StartError('the lab twin publishes no /clock')
            # the run's time counts from the operator's zero: the teleop master's first step (the twin's
            # simulated time goes on while the stack's processes start, by how much depends on the machine)
            if not spin_until(executor, lambda: bool(data['teleop/f_m']) or bool(running.dead()), 60.0):
                raise StartError('the teleop master published nothing within 60 s of its start')
            start, wall_start = lab_s(), time.monotonic()
            while lab_s() - start < duration_s or (until is not None and not until(data)):
                if time.monotonic() - wall_start > wall_budget_s or running.dead():
                    break
                step_end = min(start + duration_s, lab_s() + 1.0)
                spin_until(executor, lambda: lab_s() >= step_end, 2.0)
                if progress is not None:
                    progress(lab_s() - start, data)
            seconds, wall_s = lab_s() - start, time.monotonic() - wall_start
            if sim_clock:      # the twin's account of the run (it reports once a wall second)
                status.clear()
                spin_until(executor, lambda: bool(status), 1.5)
        finally:
            if wall_start is None:
                seconds = wall_s = 0.0
            results = running.stop()
    data['_outputs'] = [r.output for r in results]
    account = {'simulated': sim_clock, 'seconds': seconds, 'wall_s': wall_s,
               'finished': seconds >= duration_s and (until is None or until(data)),
               'real_time_factor': seconds / wall_s if wall_s > 0 else float('nan')}
    if sim_clock:
        from hil_lab_twin.pacing import counters_from_status

        counters = counters_from_status(status)
        account['misses'] = counters['misses']
        account['twin_real_time_factor'] = counters['real_time_factor']
    data['_lab_clock'] = account
    if bag is not None:
        from hil_bringup.recorder import McapWriter

        writer = McapWriter(bag)
        try:
            for topic, msgtype in RECORDED:
                writer.add_topic('/' + topic, types[msgtype])
            for t_ns, topic, msg in sorted(((t_ns, topic, msg) for topic, _ in RECORDED for t_ns, msg in data[topic]),
                                           key=lambda row: row[0]):
                writer.write('/' + topic, msg, t_ns)
        finally:
            writer.close()
    return data


def plot_graph(data: dict, out: Path, delay_s: float, label: str) -> list[Path]:
    """Seed Figs. 14 and 17 style from a recorded ROS graph run (receive times)."""
    def series(topic, attr):
        rows = data[topic]
        if not rows:
            return np.zeros(0), np.zeros(0)
        t = np.array([t for t, _ in rows]) * 1e-9
        return t, np.array([attr(m) for _, m in rows])
    t_fs, f_s = series('slave/ft/wrench', lambda m: m.wrench.force.x)
    t_fp, f_p = series('payload/ft/wrench', lambda m: m.wrench.force.z)
    t_xs, x_s = series('slave/x_s', lambda m: m.pose.position.x)
    t_xv, x_v = series('teleop/x_vir', lambda m: m.pose.position.x)
    t0 = min([t[0] for t in (t_fs, t_xs, t_xv) if t.size] or [0.0])
    return [
        _figure(out / 'ros_fig14_force_position.png', f'Fig. 14 style (ROS graph): wrist and payload F/T, {label}',
                [('force [N]', [(t_fs - t0, f_s, 'slave wrist F/T, x (sensor frame)'),
                                (t_fp - t0, f_p, 'payload F/T, z (sensor frame)')]),
                 ('x [m]', [(t_xs - t0, x_s, 'slave x_s (joint states)')])]),
        _figure(out / 'ros_fig17_position_aligned.png', f'Fig. 17 style (ROS graph): slave vs virtual arm, {label}',
                [('x [m]', [(t_xs - t0, x_s, 'slave x_s(t)'),
                            (t_xv - t0 + delay_s, x_v, f'virtual x_vir(t - {delay_s:g} s)')])]),
    ]


# -- the demo --------------------------------------------------------------------------------
def run_demo(scenario: TeleopScenario, out: Path, quick: bool = False, twin: bool = True, say=print) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    c = scenario.config
    results, files = {}, []
    say('[1/5] HIL validity: 3000 kg, step v_s,r = 0.01 m/s (ideal lockstep)')
    step_cfg = dataclasses.replace(c, payload_mass_kg=3000.0, delay_s=0.0)
    step = step_pull(step_cfg, 0.01, duration_s=25.0)
    files += plot_step(step, out, 3000.0)
    results['step_3000kg_impulse_Ns'] = float(np.sum(step.f_s[int(1.0 / c.dt):, 0]) * c.dt)
    if not quick:
        say('[2/5] 500 kg pulled 60 s without / with force feedback (ideal lockstep)')
        base = dataclasses.replace(c, payload_mass_kg=500.0, delay_s=0.0, virtual_mass_factor=1.0)
        runs = {fb: step_pull(with_gains(base, force_feedback=fb), 0.01, duration_s=70.0, pull_s=60.0)
                for fb in (False, True)}
        files += plot_feedback(runs, out)
        results['mse_500kg_with_without_N2'] = (mse(runs[True].f_s[:, :3]), mse(runs[False].f_s[:, :3]))
    say('[3/5] HILS 1 and HILS 2 (the scenario, ideal lockstep)')
    hils1 = step_pull(dataclasses.replace(c, delay_s=0.0), 0.01, duration_s=30.0, pull_s=20.0)
    files += plot_virtual(hils1, out, 12, f'HILS 1, {c.payload_mass_kg:.0f} kg, no delay')
    hils2 = run_teleop(c, scenario.operator(), scenario.duration_s())
    label = f'HILS 2, {c.payload_mass_kg:.0f} kg, {c.delay_s:g} s delay'
    files += plot_hils2(hils2, out, label)
    x_vir, x_s = hils2.aligned(hils2.x_vir, hils2.x_s)
    results['hils2_max_position_error_mm'] = float(1e3 * np.abs(x_vir[:, 0] - x_s[:, 0]).max())
    results['hils2_peak_force_N'] = float(np.abs(hils2.f_s[:, 0]).max())
    files.append(record_mcap(hils2, out / 'hils2'))
    if twin:
        from hil_bringup.runners.teleop_twin import run_teleop_twin

        twin_out = out / 'twin'
        twin_out.mkdir(exist_ok=True)
        say('[4/5] lab twin in the loop: 3000 kg step (KR 120 gripping the mock-up on the UR10e, lockstep)')
        from hil_bringup.runners.teleop_experiments import STEP_START_S, X
        from hil_teleop.master import ScriptedOperator
        op = ScriptedOperator.velocity_steps([(STEP_START_S, 30.0, 0.01 * X)], step_cfg.gains.k_s, step_cfg.gains.g)
        tstep = run_teleop_twin(step_cfg, op, 25.0)
        files += plot_step(tstep, twin_out, 3000.0)
        results['twin_step_3000kg_payload_momentum_Ns'] = float(-tstep.payload_momentum_end[2])
        say(f'[5/5] lab twin in the loop: {label} ({scenario.duration_s():.0f} s simulated)')
        from hil_lab_twin.animation import FrameGrabber, TwinCamera, View, write_animation

        grab = {}

        def render(t, lab_twin):                # the facility during HILS 2, offscreen (EGL)
            if 'grabber' not in grab:
                grip = lab_twin.site_pose_in_world('slave_ft_site').translation
                grab['camera'] = TwinCamera(lab_twin, 640, 480)
                grab['grabber'] = FrameGrabber(grab['camera'], [View('facility', tuple(grip), 4.0, 120.0, -20.0)],
                                               every_s=max(0.2, scenario.duration_s() / 120.0))
            grab['grabber'](t)
        thils2 = run_teleop_twin(c, scenario.operator(), scenario.duration_s(), on_step=render)
        if 'grabber' in grab:
            files.append(write_animation(twin_out / 'hils2_twin', grab['grabber'].frames['facility'], fps=10.0))
            grab['camera'].close()
        files += plot_hils2(thils2, twin_out, label + ', lab twin')
        x_vir, x_s = thils2.aligned(thils2.x_vir, thils2.x_s)
        results['twin_hils2_max_position_error_mm'] = float(1e3 * np.abs(x_vir[:, 0] - x_s[:, 0]).max())
        results['twin_hils2_peak_force_N'] = float(np.abs(thils2.f_s[:, 0]).max())
        files.append(record_mcap(thils2, twin_out / 'hils2_twin'))
        try:                                    # the facility at the end of HILS 2 (needs EGL)
            thils2.twin_side.twin.render_png(twin_out / 'facility.png', 960, 720)
            files.append(twin_out / 'facility.png')
        except Exception as exc:  # noqa: BLE001 - no offscreen GL: say so, the figures are what matters
            say(f'  (no rendering of the facility: {exc})')
    results['files'] = [str(f) for f in files]
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--scenario', default='massive_payload_teleop', help='scenario name or YAML path')
    parser.add_argument('--out', default='runs/teleop', help='output directory (PNG figures, MCAP bag)')
    parser.add_argument('--quick', action='store_true', help='skip the 60 s with/without feedback comparison')
    parser.add_argument('--no-twin', action='store_true', help='skip the lockstep runs with the lab twin in the loop')
    parser.add_argument('--ros', action='store_true',
                        help='run the scenario as the ROS graph (DDS on loopback, real time) and record it to MCAP')
    parser.add_argument('--graph', default='twin', choices=sorted(SIMS),
                        help="with --ros: 'twin' (MuJoCo lab twin, F/T drivers, motion tables) or 'contact'")
    parser.add_argument('--rate', type=float, default=250.0, help='with --ros: control rate of the nodes [Hz]')
    parser.add_argument('--duration', type=float, default=None,
                        help="with --ros: duration [s] (default: scenario's), of the twin's simulated time with "
                             "--graph twin (its /clock), of wall time with --graph contact")
    args = parser.parse_args(argv)
    from hil_bringup.scenario import scenario_path
    from hil_common.network import apply_network_profile, demo_domain_id

    apply_network_profile()
    demo_domain_id()         # a random ROS domain unless ROS_DOMAIN_ID is set

    path = Path(args.scenario) if args.scenario.endswith('.yaml') else scenario_path(args.scenario)
    scenario = load_teleop_scenario(path)
    if args.ros:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        duration = args.duration or scenario.duration_s()

        def progress(elapsed, data):
            xs = data['slave/x_s']
            fs = data['slave/ft/wrench']
            x = f'{xs[-1][1].pose.position.x:.4f} m' if xs else '-'
            # twin graph: the wrist sensor's z axis points along the slave base x (the pull), reading -f_s
            f = (f'{(-fs[-1][1].wrench.force.z if args.graph == "twin" else fs[-1][1].wrench.force.x):+.2f} N'
                 if fs else '-')
            print(f'  {elapsed:5.1f}/{duration:.0f} s{" simulated" if args.graph == "twin" else ""}  slave x_s {x}  f_s,x {f}  '
                  f'({len(xs)} x_s, {len(fs)} wrenches)', flush=True)
        print(f'ROS graph ({args.graph}) for {duration:.0f} s on loopback DDS ...', flush=True)
        data = run_graph(scenario, duration, out / 'ros_graph', sim=args.graph,
                         rate_hz=args.rate if args.graph == 'twin' else None, progress=progress)
        for topic, _ in RECORDED:
            print(f'{topic}: {len(data[topic])} messages')
        clock = data['_lab_clock']
        if clock['simulated']:
            print(f"lab twin's simulated clock: {clock['seconds']:.1f} s simulated in {clock['wall_s']:.1f} s of wall "
                  f"time (real-time factor {clock['real_time_factor']:.2f}); barrier misses (steps the twin took "
                  f"without the stack's command): {sum(clock['misses'].values())} {clock['misses'] or ''}")
        if not clock['finished']:
            print(f"the run reached only {clock['seconds']:.1f} of {duration:g} s (wall budget, or a node exited)")
        payload = [m.pose.position.z for _, m in data['payload/table/pose_cmd']]
        if payload:
            print(f'payload displacement (admittance g_c, body z = towards the slave): {payload[-1] - payload[0]:.4f} m')
        files = plot_graph(data, out, scenario.config.delay_s, f'{scenario.config.payload_mass_kg:.0f} kg, '
                           f'{scenario.config.delay_s:g} s delay, {args.graph}')
        print('wrote:\n  ' + '\n  '.join(str(p) for p in [out / 'ros_graph', *files]))
        return 0
    results = run_demo(scenario, Path(args.out), args.quick, twin=not args.no_twin,
                       say=lambda m: print(m, flush=True))
    for key, value in results.items():
        if key != 'files':
            print(f'{key}: {value}')
    print('wrote:\n  ' + '\n  '.join(results['files']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
