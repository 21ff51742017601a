"""``hil_demo``: the README's demo command (``./dev demo``).

With a full mission scenario (a ``servicer`` section, as the shipped ``envisat_capture``)
it runs the Envisat capture (:mod:`hil_bringup.envisat_demo`): the unforced validation and
the capture with the example OBSW in the deterministic lockstep runner beside the absolute
reference, plots in the style of seed 004 Figs. 8, 9, 12, 13, a rendered picture, metrics
and an MCAP recording; then the ROS part below.

With a client-only scenario (``--client-only``, or a file without ``servicer``):

1. a deterministic lockstep run of the Envisat client (seed 004 §III-A): the relative
   formulation beside the absolute one, with a bounded push at the grasp point; it
   reports when the absolute command would leave the lab workspace while the relative
   command stays put, and writes a run folder (metrics.json, trajectory CSV, plots);
2. the same rule in the ROS graph: the client admittance node and a scripted wrench
   source started as the executables launch_ros would start, on loopback-only DDS, with
   the commanded table pose monitored for a few seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from hil_common.network import apply_network_profile, demo_domain_id, describe


def _progress(total_s: float):
    state = {'next': 0.0, 't0': time.monotonic()}

    def report(t: float) -> None:
        if t + 1e-9 >= state['next'] or t >= total_s:
            wall = time.monotonic() - state['t0']
            rate = t / wall if wall > 0 else float('inf')
            print(f'  lockstep: {t:7.1f} / {total_s:.0f} s simulated  ({rate:5.1f}x real time)', flush=True)
            state['next'] += total_s / 10.0
    return report


def lockstep_part(scenario, duration_s: float, out_dir: Path) -> dict:
    from hil_bringup.runners.client import analytic_exit_time_spin, push_in_orbit, run_client

    demo = scenario.demo
    force = np.array(demo.get('push_force_orbit_n', [0.0, 0.0, 10.0]), dtype=float)
    start, width = float(demo.get('push_start_s', 5.0)), float(demo.get('push_duration_s', 1.0))
    print(f'[1/2] lockstep client run: {scenario.client.name}, {duration_s:.0f} s, push {force.tolist()} N '
          f'at the grasp point from {start:.1f} s for {width:.1f} s', flush=True)
    run = run_client(scenario, duration_s, push_in_orbit(force, start, width), record_every_s=0.05,
                     progress=_progress(duration_s))
    box = scenario.workspace_box_m
    spin = float(np.linalg.norm(scenario.client.twist_client_body_0[3:]))
    radius = float(np.linalg.norm(scenario.client.pose_grasp_in_client.translation))
    after = run.t >= start + width
    drift = np.linalg.norm(run.pos_grasp_in_nominal_cmd - run.pos_grasp_in_nominal_cmd[0], axis=1)
    metrics = {
        'scenario': scenario.name,
        'duration_s': duration_s,
        'workspace_box_m': box.tolist(),
        'absolute_exit_time_s': run.workspace_exit_time(box, 'absolute'),
        'absolute_exit_time_pure_spin_prediction_s': analytic_exit_time_spin(radius, spin, 0.5 * float(box[0])),
        'seed004_reported_absolute_limit_s': 14.0,
        'relative_exit_time_s': run.workspace_exit_time(box, 'relative'),
        'relative_grasp_drift_before_push_m': float(drift[run.t < start].max()),
        'relative_grasp_drift_end_m': float(drift[-1]),
        'push_impulse_ns': float(np.linalg.norm(force) * width),
        # |p_c| grows at impulse/mass (p_c itself turns with the nominal frame).
        'drift_rate_m_s': (float((np.linalg.norm(run.pos_client_in_nominal[-1]) - np.linalg.norm(run.pos_client_in_nominal[after][0]))
                                 / (run.t[-1] - run.t[after][0])) if after.sum() >= 2 else None),
        'drift_rate_predicted_m_s': float(np.linalg.norm(force) * width / scenario.client.body.mass_kg),
        'max_relative_angular_rate_deg_s': float(np.degrees(np.linalg.norm(run.twist_client_rel_body[:, 3:], axis=1).max())),
    }
    np.savetxt(out_dir / 'client_trajectory.csv',
               np.column_stack([run.t, run.pos_grasp_in_nominal_cmd, run.pos_grasp_in_orbit, run.twist_client_rel_body]),
               delimiter=',', header='t_s,grasp_rel_x,grasp_rel_y,grasp_rel_z,grasp_abs_x,grasp_abs_y,grasp_abs_z,'
               'vc_x,vc_y,vc_z,wc_x,wc_y,wc_z', comments='')
    _plot(run, box, start, width, out_dir / 'client_workspace.png')
    return metrics


def _plot(run, box, start, width, path: Path) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for label, p, style in (('absolute formulation', run.pos_grasp_in_orbit, '-'), ('relative formulation', run.pos_grasp_in_nominal_cmd, '--')):
        d = p - p[0]
        for i, axis in enumerate('xyz'):
            axes[0].plot(run.t, d[:, i], style, label=f'{label}, {axis}')
    axes[0].axhspan(-0.5 * box[0], 0.5 * box[0], color='green', alpha=0.08, label='lab workspace (1 m box)')
    axes[0].set_ylim(-3.5, 3.5)
    axes[0].set(xlabel='t [s]', ylabel='grasp-point command - start [m]', title='Grasp-point command in the lab')
    axes[0].legend(fontsize=7)
    drift = run.pos_grasp_in_nominal_cmd - run.pos_grasp_in_nominal_cmd[0]
    for i, axis in enumerate('xyz'):
        axes[1].plot(run.t, drift[:, i] * 1e3, label=axis)
    axes[1].axvspan(start, start + width, color='orange', alpha=0.3, label='push')
    axes[1].set(xlabel='t [s]', ylabel='[mm]', title='Relative command after the push (Eq. 11)')
    axes[1].legend(fontsize=8)
    axes[2].plot(run.t, np.linalg.norm(run.twist_client_rel_body[:, :3], axis=1) * 1e3, label='|v_c| [mm/s]')
    axes[2].plot(run.t, np.degrees(np.linalg.norm(run.twist_client_rel_body[:, 3:], axis=1)) * 1e3, label='|w_c| [mdeg/s]')
    axes[2].set(xlabel='t [s]', title='Commanded relative velocity (bounded, Eq. 29)')
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def ros_part(scenario, seconds: float, out_dir: Path) -> dict:
    """The node set of ``client_admittance.launch.py`` (:func:`hil_bringup.graphs.client_graph`) on loopback DDS."""
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Odometry

    from hil_bringup.graph_runner import RunningGraph
    from hil_bringup.graphs import client_graph
    from hil_common.ros_testing import spin_until, test_node

    graph = client_graph({'scenario': str(scenario.source)}, scenario=scenario)
    print(f'[2/2] ROS graph for {seconds:.0f} s: ' + ', '.join(n.fqn for n in graph.nodes) + f' ({describe()})', flush=True)
    poses, states = [], []
    with test_node('hil_demo_monitor') as (node, executor):
        node.create_subscription(PoseStamped, 'client/table/pose_cmd', poses.append, 50)
        node.create_subscription(Odometry, 'client/state', states.append, 50)
        with RunningGraph(graph, out_dir / 'graph', say=lambda m: print(m, flush=True)) as running:
            t0 = time.monotonic()
            while time.monotonic() - t0 < seconds:
                spin_until(executor, lambda: False, 1.0)
                if poses:
                    p = poses[-1].pose.position
                    print(f'  ros: {time.monotonic() - t0:4.1f} s  pose_cmd p_c = [{p.x:+.6f} {p.y:+.6f} {p.z:+.6f}] m  '
                          f'({len(poses)} commands)', flush=True)
        results = running.stop()
    if not poses:
        print('  ros: no pose command received; node output:\n' + '\n'.join(r.output for r in results), file=sys.stderr)
    return {'ros_seconds': seconds, 'ros_pose_commands': len(poses), 'ros_state_messages': len(states),
            'ros_command_rate_hz': len(poses) / seconds, 'ros_node_failures': [r.spec.fqn for r in results if r.crashed]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--scenario', default='envisat_capture', help='scenario name or YAML path')
    parser.add_argument('--duration', type=float, default=None, help='lockstep duration [s] (default: scenario demo.duration_s)')
    parser.add_argument('--ros-seconds', type=float, default=None,
                        help='how long the live ROS graph runs once started [s] (default: the Envisat capture until 5 s after its '
                             'post-grasp, in the twin\'s simulated time; '
                             '5 client-only; 0 skips it)')
    parser.add_argument('--out', default=os.environ.get('HIL_RUNS_DIR', 'runs'), help='parent folder of the run folder')
    parser.add_argument('--client-only', action='store_true', help='the client-only demo even for a full mission')
    parser.add_argument('--unforced', type=float, default=None,
                        help='unforced validation duration [s] (default: scenario mission.unforced_duration_s; 0 skips)')
    args = parser.parse_args(argv)
    apply_network_profile()
    demo_domain_id()         # a random ROS domain unless ROS_DOMAIN_ID is set: two demos on one host do not cross

    from hil_bringup.scenario import ScenarioError, load_scenario
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as exc:
        print(f'hil_demo: {exc}', file=sys.stderr)
        return 2
    if scenario.servicer is not None and not args.client_only:
        return envisat_main(scenario, args)
    duration = args.duration if args.duration is not None else float(scenario.demo.get('duration_s', 120.0))
    out_dir = Path(args.out) / f'{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{scenario.name}-client'
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f'HIL client-only demo: scenario {scenario.source}\n  run folder {out_dir.resolve()}', flush=True)
    metrics = lockstep_part(scenario, duration, out_dir)
    ros_seconds = 5.0 if args.ros_seconds is None else args.ros_seconds
    if ros_seconds > 0:
        metrics.update(ros_part(scenario, ros_seconds, out_dir))
    (out_dir / 'metrics.json').write_text(json.dumps(metrics, indent=2))
    print('\nSummary')
    print(f"  absolute formulation leaves the {metrics['workspace_box_m']} m box after {metrics['absolute_exit_time_s']:.2f} s "
          f"(pure spin predicts {metrics['absolute_exit_time_pure_spin_prediction_s']:.2f} s; seed 004: 14 s on OOS-Sim)")
    print(f"  relative formulation: drift {metrics['relative_grasp_drift_before_push_m']:.1e} m before the push, "
          f"{metrics['relative_grasp_drift_end_m'] * 1e3:.1f} mm at {duration:.0f} s after a {metrics['push_impulse_ns']:.0f} N s push "
          + (f"(drift rate {metrics['drift_rate_m_s'] * 1e3:.4f} mm/s, impulse/mass {metrics['drift_rate_predicted_m_s'] * 1e3:.4f} mm/s)"
             if metrics['drift_rate_m_s'] is not None else '(run longer than the push to see the drift rate)'))
    if 'ros_pose_commands' in metrics:
        print(f"  ROS graph: {metrics['ros_pose_commands']} pose commands in {metrics['ros_seconds']:.0f} s "
              f"({metrics['ros_command_rate_hz']:.0f} Hz)")
    print(f'  wrote {out_dir}/metrics.json, client_trajectory.csv, client_workspace.png')
    ok = (metrics['relative_exit_time_s'] is None and metrics.get('ros_pose_commands', 1) > 0
          and not metrics.get('ros_node_failures'))
    return 0 if ok else 1


def envisat_main(scenario, args) -> int:
    from hil_bringup import envisat_demo

    out_dir = Path(args.out) / f'{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{scenario.name}'
    print(f'HIL Envisat capture demo: scenario {scenario.source}\n  run folder {out_dir.resolve()}\n  {describe()}',
          flush=True)
    metrics = envisat_demo.run(scenario, out_dir, args.duration, args.unforced)
    phase_times = metrics['capture']['phase_times_s']
    if args.ros_seconds is not None:
        ros_seconds = args.ros_seconds
    else:   # the whole capture: until 5 s after the lockstep run's post-grasp (the same timeline), and with
        # the post-grasp re-basing until about 3 s after its ramp (the servicer node plans it rebase_lead_s
        # ahead; the live timeline starts 1.5-2 s after the lockstep run's, as the graph comes up: 6 s margin)
        from hil_dynamics.rebase import DEFAULT_LEAD_S

        ros_seconds = phase_times['post_grasp'] + 5.0 if 'post_grasp' in phase_times else 40.0
        if 'post_grasp' in phase_times and scenario.rebase is not None and scenario.rebase.enabled:
            ros_seconds = (phase_times['post_grasp'] + scenario.rebase.after_post_grasp_s + DEFAULT_LEAD_S
                           + scenario.rebase.ramp_s + 6.0)
    if ros_seconds > 0:
        print(f'[5/5] live: the node set of envisat_capture.launch.py (hil_bringup.graphs.envisat_graph) on {describe()}, '
              f"{ros_seconds:.0f} s of the lab twin's simulated time once ready (it waits for the stack every step, "
              'so a busy machine only takes longer)', flush=True)
        expect = envisat_demo.live_expectations(phase_times, ros_seconds)
        # the rate a 2-core machine runs the whole graph with its twin at
        metrics['ros_graph'] = envisat_demo.ros_graph_part(scenario, out_dir, ros_seconds, expect, launch_arguments={
            'control_rate_hz': '250'})
        metrics['files'] += ['live/', 'live_nodes/']
        if (out_dir / 'live').is_dir():     # seed 004 Figs. 12-13, F/T wrenches, passivity, from the recording
            from hil_bringup.live_plots import plot_live_capture, read_live_run, rebase_figures
            try:
                live = read_live_run(out_dir)
                metrics['files'] += [p.name for p in plot_live_capture(out_dir, out_dir, live)]
                metrics['live_plots_notes'] = live['notes']
                metrics['live_rebase'] = rebase_figures(live)
            except Exception as exc:  # noqa: BLE001 - a plotting failure must not lose the run's metrics
                metrics['live_plots_error'] = f'{type(exc).__name__}: {exc}'
                print(f'  live plots FAILED: {metrics["live_plots_error"]}', flush=True)
    (out_dir / 'metrics.json').write_text(json.dumps(metrics, indent=2))
    print('\nSummary')
    for line in envisat_demo.summary(metrics):
        print(f'  {line}')
    capture = metrics['capture']
    ok = ('post_grasp' in capture['phase_times_s'] and capture['workspace']['relative_client_table_exit_s'] is None
          and capture['workspace']['relative_servicer_table_exit_s'] is None)
    if not ok:
        print('  LOCKSTEP FAILED: the capture did not reach post_grasp inside both workspaces')
    if 'capture_twin' in metrics and metrics['capture_twin'].get('grasp_latch_s') is None:
        ok = False
        print('  TWIN CAPTURE FAILED: the gripper never closed on the ring')
    if 'ros_graph' in metrics:
        ok = print_live_summary(metrics['ros_graph'], 'envisat_capture.launch.py') and ok
        rebase_due = (args.ros_seconds is None and 'post_grasp' in phase_times and scenario.rebase is not None
                      and scenario.rebase.enabled)
        ok = print_live_rebase(metrics.get('live_rebase'), rebase_due) and ok
    print(f"  wrote {out_dir}/metrics.json, {', '.join(metrics['files'])}")
    return 0 if ok else 1


def print_live_rebase(rebase: dict | None, due: bool) -> bool:
    """Print what the live post-grasp re-basing did (:func:`hil_bringup.live_plots.rebase_figures`); False
    when it was due and did not happen, or the two admittances' nominals parted."""
    if rebase is None:
        if due:
            print('  LIVE RE-BASING FAILED: no plan was published (nominal/rebase_plan) after post_grasp')
        return not due
    print(f"  live re-basing: plan from {rebase['plan_start_s']:.1f} s over {rebase['ramp_s']:g} s (compound "
          f"{rebase['compound_mass_kg']:.0f} kg); the two admittances' nominals apart by at most "
          f"{rebase['nominals_apart_m']:.1e} m, {rebase['nominals_apart_rad']:.1e} rad; after the ramp the nominal "
          f"moves with the stack's free motion to {rebase['compound_moves_after_ramp'] or float('nan'):.1e}")
    good = (rebase['nominals_apart_m'] is not None and rebase['nominals_apart_m'] < 1e-6
            and rebase['nominals_apart_rad'] < 1e-6
            and (rebase['compound_moves_after_ramp'] is None or rebase['compound_moves_after_ramp'] < 1e-8))
    if not good:
        print('  LIVE RE-BASING FAILED: the two nominals parted, or the nominal is not the stack\'s free motion')
    if due and rebase['compound_moves_after_ramp'] is None:
        print('  LIVE RE-BASING FAILED: the run ended before the ramp did')
        good = False
    return good


def print_live_summary(g: dict, launch_file: str) -> bool:
    """Print what the live graph achieved; True when it did its job."""
    phases = ', '.join(f"{p['phase']} {p['t_s']:.1f} s" for p in g['phases']) or 'none'
    warnings = {n: v.get('WARN', 0) + v.get('ERROR', 0) for n, v in g['nodes'].items()}
    print(f"  live graph ({launch_file}'s node set, {g['duration_s']:.0f} s after start-up "
          f"{sum(g['stages_ready_s'].values()):.0f} s): phases {phases}; "
          f"{sum(g['messages'].values())} messages on {len(g['messages'])} topics; "
          f"faults {len(g['faults'])}; warnings/errors logged {sum(warnings.values())}"
          + (f" ({', '.join(f'{n} {c}' for n, c in warnings.items() if c)})" if any(warnings.values()) else ''))
    clock = g.get('lab_clock') or {}
    if clock.get('simulated'):
        print(f"  live graph on the lab twin's simulated clock: {g['duration_s']:.0f} s simulated in {clock['wall_s']:.0f} s "
              f"of wall time (real-time factor {clock['real_time_factor']})")
    if g['deadline_misses']:
        print(f"  live graph deadline misses: {g['deadline_misses']}")
    if g['ok']:
        print('  live graph: OK')
    else:
        print('  LIVE GRAPH FAILED:')
        for p in g['problems']:
            print(f'    - {p}')
        print(f"    node logs: {g['nodes_log_dir']}")
    return g['ok']


if __name__ == '__main__':
    sys.exit(main())
