"""``snare_demo``: runs 1-4 of issue 12 in the lockstep runner, with progress, plots and an MCAP bag.

    ./dev run snare_demo [--out runs/snare_demo] [--only htv_capture ...] [--no-bag] [--live [SECONDS]] [--live-arg mounts:=false]

For each scenario it prints progress once per simulated second, writes the figures in the style
of the seeds' (run 1: seed 002 Figs. 14-16; run 2: Figs. 20-21; run 3: seed 000 Fig. 13 and a
Fig. 14-like sequence of the wires and the grapple; run 4: the case study at 0.32 m/s) to
``<out>/<scenario>.png`` and records the grapple's relative pose, the wire forces and the joint
angles to the bag ``<out>/<scenario>/`` (``hil_bringup.recorder.McapWriter``).

``--live`` adds the live stage: case 3 through the graph of ``snare_capture.launch.py`` with the lab
twin (:mod:`hil_snare.live`), the figure ``<out>/htv_capture_live.png`` against the lockstep run, the
nodes' logs in ``<out>/htv_capture_live/``, and pictures of the run in the twin (:mod:`hil_snare.pictures`:
``snare_live_lab.mp4``, ``snare_live_lee.mp4`` and stills at the start, the first wire contact and the end);
the demo exits non-zero when the live run missed its bounds. ``--live-arg NAME:=VALUE`` passes a launch
argument to the live graph (e.g. ``mounts:=false``: the wires fixed to the mock-ups, which diverges at the pinch).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from hil_snare.live import PINCH_RUN_S
from hil_snare.runner import capture_outcome, relative_state, run
from hil_snare.scenario import load_snare_scenario

SCENARIOS = ('contact_experiment', 'jemrms_capture', 'htv_capture', 'htv_case_study')


def _record_bag(path: Path, trace, joint_names):
    from geometry_msgs.msg import PointStamped, Vector3Stamped
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from hil_bringup.recorder import McapWriter

    a = trace.arrays()
    bag = McapWriter(path)
    for i, t in enumerate(a['t']):
        ns = int(round(t * 1e9))
        stamp_sec, stamp_ns = divmod(ns, 10 ** 9)
        p = PointStamped()
        p.header.stamp.sec, p.header.stamp.nanosec = stamp_sec, stamp_ns
        p.header.frame_id = 'lee'
        if np.all(np.isfinite(a['rel_position_m'][i])):
            p.point.x, p.point.y, p.point.z = (float(v) for v in a['rel_position_m'][i])
        bag.write('snare/grapple_section_in_lee', p, ns)
        v = Vector3Stamped()
        v.header = p.header
        if np.all(np.isfinite(a['rel_velocity_mps'][i])):
            v.vector.x, v.vector.y, v.vector.z = (float(u) for u in a['rel_velocity_mps'][i])
        bag.write('snare/grapple_velocity_in_lee', v, ns)
        f = Float64MultiArray()
        f.data = [float(u) for u in a['normal_force_n'][i]]
        bag.write('snare/wire_normal_force', f, ns)
        if joint_names:
            js = JointState()
            js.header.stamp = p.header.stamp
            js.name = list(joint_names)
            js.position = [float(u) for u in a['joints_rad'][i]]
            bag.write('snare/joint_states', js, ns)
    return bag.close()


def _plot(name, system, trace, path: Path, snapshots):
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    a = trace.arrays()
    t = a['t']
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    ax = axes[0, 0]
    for k, lab in ((1, 'y'), (2, 'z')):
        ax.plot(t, a['rel_position_m'][:, k] * 1e3, label=f'{lab} (wire plane)')
    ax.set_xlabel('time [s]')
    ax.set_ylabel('grapple section in wire frame [mm]')
    ax.set_title('relative position (cf. seed 000 Fig. 13)' if 'htv' in name else 'probe / grapple position')
    ax.legend()
    ax = axes[0, 1]
    for k, lab in enumerate('xyz'):
        ax.plot(t, a['rel_velocity_mps'][:, k], label=f'v_{lab}')
    ax.set_xlabel('time [s]')
    ax.set_ylabel('relative velocity [m/s]')
    ax.set_title('velocity (cf. seed 002 Fig. 14)' if name == 'contact_experiment' else 'relative velocity')
    ax.legend()
    ax = axes[1, 0]
    for k in range(a['normal_force_n'].shape[1]):
        ax.plot(t, a['normal_force_n'][:, k], label=f'wire {k}')
    ax.set_xlabel('time [s]')
    ax.set_ylabel('normal force [N]')
    ax.set_title('wire force (cf. seed 002 Fig. 16 / 21)')
    ax.legend()
    ax = axes[1, 1]
    if system.arm is not None:
        j = np.degrees(a['joints_rad'] - a['joints_rad'][0])
        for k in range(j.shape[1]):
            ax.plot(t, j[:, k], label=f'joint {k + 1}')
        ax.set_ylabel('joint angle change [deg]')
        ax.set_title('joint angles (cf. seed 002 Fig. 20)')
        ax.legend(fontsize=7)
    else:
        ax.plot(t, a['target_twist'][:, 5], label='yaw rate')
        ax.set_ylabel('angular velocity [rad/s]')
        ax.set_title('angular velocity (cf. seed 002 Fig. 15)')
    ax.set_xlabel('time [s]')
    fig.suptitle(name)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    if snapshots:
        fig, axes = plt.subplots(1, len(snapshots), figsize=(3 * len(snapshots), 3.2))
        for ax, (ts, curves, p) in zip(np.atleast_1d(axes), snapshots):
            for c in curves:
                ax.plot(c[:, 0] * 1e3, c[:, 1] * 1e3, 'k-')
            ring = getattr(system.wires, 'ring_radius_m', None)
            if ring:
                u = np.linspace(0, 2 * math.pi, 100)
                ax.plot(ring * 1e3 * np.cos(u), ring * 1e3 * np.sin(u), color='0.7')
            if np.all(np.isfinite(p)):
                ax.add_patch(plt.Circle((p[1] * 1e3, p[2] * 1e3), system.grapple.radius_m * 1e3, color='tab:red'))
            ax.set_aspect('equal')
            ax.set_title(f't = {ts:.1f} s')
            ax.set_xlabel('y [mm]')
        fig.suptitle(f'{name}: wires and grapple in the wire plane (cf. seed 000 Fig. 14)')
        fig.tight_layout()
        fig.savefig(path.with_name(path.stem + '_sequence.png'), dpi=90)
        plt.close(fig)


def run_scenario(name: str, out: Path, bag: bool = True, log=print) -> dict:
    sc = load_snare_scenario(name)
    system, ctrl, poses, x = sc.build()
    snapshots = []
    snap_times = np.linspace(0.0, sc.duration_s, 6)
    state = {'next': 1.0, 't0': 0.0}
    wall0 = time.perf_counter()

    def progress(t, p, v):
        t = t + state['t0']
        if t >= state['next'] - 1e-9:
            f = sum(c.normal_force_n for c in system.contacts)
            log(f'  {name}: t = {t:5.2f} s  section (y, z) = ({p[1] * 1e3:7.2f}, {p[2] * 1e3:7.2f}) mm  '
                f'|v_rel| = {np.linalg.norm(v):.4f} m/s  wire force {f:8.2f} N')
            state['next'] += 1.0

    # run in chunks so that the sequence snapshots are taken from the live state
    trace_all = None
    t0 = 0.0
    record_every = max(1, int(round(0.01 / sc.dt_s)))
    for t1 in list(snap_times[1:]):
        curves = [c.copy() for c in system.wires.curves(x[-1])]
        p, _, _ = relative_state(system, t0, poses, x)
        snapshots.append((t0, curves, p))
        state['t0'] = t0
        tr, poses, x = run(system, ctrl, poses, x, t1 - t0, sc.dt_s, sc.control_period_s, record_every, progress=progress)
        tr.t = [t0 + u for u in tr.t]
        if trace_all is None:
            trace_all = tr
        else:
            for k in trace_all.__dict__:
                getattr(trace_all, k).extend(getattr(tr, k)[1:])
        t0 = t1
    wall = time.perf_counter() - wall0
    a = trace_all.arrays()
    out.mkdir(parents=True, exist_ok=True)
    _plot(name, system, trace_all, out / f'{name}.png', snapshots if system.wires.has_drive else [])
    f = a['normal_force_n'].sum(axis=1)
    result = {'scenario': name, 'sim_s': sc.duration_s, 'wall_s': wall, 'peak_force_n': float(f.max()),
              'impulse_ns': float(np.trapezoid(f, a['t']))}
    if sc.kind == 'htv_capture':
        o = capture_outcome(system, trace_all)
        result['outcome'] = o.reason
    if bag:
        names = [f'joint{i + 1}' for i in range(system.n)]
        result['bag'] = str(out / name)
        result['bag_counts'] = _record_bag(out / name, trace_all, names)
    log(f'{name}: ' + ', '.join(f'{k} {v}' for k, v in result.items() if k != 'bag_counts'))
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default='runs/snare_demo')
    ap.add_argument('--only', nargs='*', default=list(SCENARIOS), choices=SCENARIOS)
    ap.add_argument('--no-bag', action='store_true')
    ap.add_argument('--live', type=float, nargs='?', const=PINCH_RUN_S, default=None, metavar='SECONDS',
                    help='also run case 3 live: the graph of snare_capture.launch.py with the lab twin, judged against '
                         'the lockstep runner (SECONDS of simulated time after the capture command, default '
                         f'{PINCH_RUN_S:g}: through the pinch)')
    ap.add_argument('--live-arg', action='append', default=[], metavar='NAME:=VALUE',
                    help='a launch argument of the live graph, e.g. mounts:=false (repeatable)')
    args = ap.parse_args(argv)
    out = Path(args.out)
    for name in args.only:
        print(f'== {name}')
        run_scenario(name, out, bag=not args.no_bag)
    ok = True
    if args.live is not None:
        given = dict(a.split(':=', 1) for a in args.live_arg if ':=' in a)
        bad = [a for a in args.live_arg if ':=' not in a]
        if bad:
            ap.error(f'--live-arg {bad[0]!r}: expected NAME:=VALUE')
        ok = live_stage(out, args.live, given)
    print(f'figures and bags in {out.resolve()}')
    return 0 if ok else 1


def live_stage(out: Path, duration_s: float, launch_arguments: dict | None = None) -> bool:
    """Case 3 live (:mod:`hil_snare.live`): progress, the comparison figure, and whether it passed its bounds."""
    import os

    from hil_snare import live

    print(f'== htv_capture live: the snare_capture graph with the lab twin, {duration_s:g} s after the capture command')
    ports = {'client_ft_port': str(20000 + os.getpid() % 20000), 'servicer_ft_port': str(20001 + os.getpid() % 20000),
             **(launch_arguments or {})}
    out.mkdir(parents=True, exist_ok=True)
    run_ = live.run_live(out / 'htv_capture_live', duration_s, ports)
    result = live.compare(run_, load_snare_scenario('htv_capture'), duration_s)
    if result.live:
        print(f'wrote {live.plot_comparison(result, out / "htv_capture_live.png")}')
    print(f'loop lag {1e3 * result.lag_s:.0f} ms (bound {1e3 * live.LAG_BOUND_S:g}), free drift differs by '
          f'{1e3 * result.drift_max_diff_m:.2f} mm (bound {1e3 * live.DRIFT_BOUND_M:g}), first contact '
          f'{result.first_contact_live_s:.2f} s vs {result.first_contact_lockstep_s:.2f} s lockstep, peak wire force '
          f'{result.peak_force_live_n:.0f} N vs {result.peak_force_lockstep_n:.0f} N, GF section within '
          f'{1e3 * result.section_max_diff_m:.2f} mm of the lockstep one (bound {1e3 * live.SECTION_BOUND_M:g}); mounts '
          f'{run_.mount}; node logs in {out / "htv_capture_live"}')
    if result.stall_sum_n[0] == result.stall_sum_n[0]:
        print(f'pinch over the last {live.PINCH_WINDOW_S:g} s: wires {result.stall_sum_n[0]:.1f}-{result.stall_sum_n[1]:.1f} N '
              f'(stall 500 N, bound {live.STALL_BOUND_N:g} N), GF {1e3 * result.pinch_axis_max_m:.2f} mm off the LEE axis '
              f'(bound {1e3 * live.PINCH_AXIS_BOUND_M:g} mm)')
    else:
        print(f'pinch not judged: the run ends {duration_s:g} s after the capture command, before '
              f'{live.PINCH_SETTLED_S:g} s (the wires settle at the stall by then)')
    if run_.joint_states and len(run_.t_sim) > 1:     # pictures of the run in the twin (hil_snare.pictures)
        from hil_snare.graph import snare_graph
        from hil_snare.pictures import render_live_run

        files, _ = render_live_run(run_, snare_graph(ports), out)
        for path in files:
            print(f'wrote {path}')
    if not result.ok:
        print('LIVE RUN FAILED: ' + '; '.join(result.problems))
    return result.ok


if __name__ == '__main__':
    raise SystemExit(main())
