"""``docking_demo``: the seed 003 docking on the CISAS facility, in simulation (lockstep runner).

    docking_demo [--scenario PATH] [--out runs/docking] [--no-live] [--lab emulated|twin] [--live-timeout-s 600]

Runs, with the rule objects of :mod:`hil_docking` and the scenario YAML
(``share/hil_docking/scenarios/cisas_docking.yaml``):

* the mission (:func:`hil_docking.mission.run_mission`): CW approach, the impact through the
  delayed facility loop with virtual-force compensation, the post-impact leg
  -> ``fig02_trajectory.png`` (seed 003 Fig. 2 style);
* the same impact with no compensation, ``eps = k Delta`` and the pole placement
  -> ``impact_compensation.png``;
* the designer map for Delta = 5, 10, 15 ms -> ``fig06_min_mass.png`` (Fig. 6 style), with the
  scenario's applied contact law marked;
* the three feed-forward variants on the CISAS arm along the approach (seed iteration times,
  ``Kp = 50`` and damped ``Kd``) -> ``fig08_joint_errors.png`` (Fig. 8 style) and a table of
  joint errors and time per iteration;

* the mission through the MuJoCo lab twin, lockstep (:func:`hil_docking.twin_mission.run_twin_mission`:
  the probe on its spring of ``k_L`` meets the target's plate, MuJoCo computes the contact, the F/T
  sensor measures it through the driver's chain), rendered offscreen -> ``twin_docking_*.mp4`` (or
  animated PNG) and stills of the approach, the deepest contact and the post-impact leg;

and records the mission to the bag folder ``mission/`` (rosbag2, MCAP storage, through
:class:`hil_bringup.recorder.McapWriter`): ``/chaser/pose_lvlh``, ``/chaser/twist_lvlh``,
``/facility/robot_pose_lvlh``, ``/facility/ft/wrench`` (``f_L`` on the chaser mock-up),
``/facility/virtual_wrench`` (``f_V``), ``/cisas/joint_states`` (the arm along the approach).
Stamps are simulated time from 0. Plots through matplotlib's Agg backend.

**Live stage** (unless ``--no-live``): the graph of ``cisas_docking.launch.py``
(:func:`hil_docking.graph.cisas_graph`, the same definition) on loopback DDS in a ROS domain of
its own, flying the same scenario with the emulated CISAS robot and contact (``--lab twin``: the MuJoCo lab
twin, its contact measured by the F/T sensor and checked against ``k_L x + b_L x'``), judged by
:func:`hil_docking.live.judge_live` (CW approach on the transfer arc, compensated restitution,
post-impact leg on the free CW motion) and recorded to the bag folder ``live/`` (MCAP). Its
verdict goes to ``live_summary.json``; when the live part fails the demo prints why and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from hil_docking.arm import cisas_arm_spec, cisas_pin_model
from hil_docking.contact import COMPENSATIONS
from hil_docking.cw import CWModel, two_impulse_transfer
from hil_docking.designer_cli import draw_fig6
from hil_docking.feedforward import (SEED_ITERATION_TIME_S, cw_joint_reference, damped_kd,
                                     simulate_tracking, time_per_iteration_s)
from hil_docking.mission import CONTACT, POST_IMPACT, MissionRun, run_mission
from hil_docking.scenario import DockingScenario, load_docking_scenario
from hil_motion_table.kinematics import SerialKinematics

RECORD_HZ = 100.0
SEED_FIG8_ORDER = ('lagrange_mg', 'lagrange_g', 'newton_euler')      # rows of seed 003 Fig. 8
LABELS = {'newton_euler': 'Newton-Euler', 'lagrange_mg': 'Lagrange-Euler M+G', 'lagrange_g': 'Lagrange-Euler G only'}


def _plt():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def plot_trajectory(run: MissionRun, path: Path) -> Path:
    """Seed 003 Fig. 2 style: the relative trajectory in the CW frame, by phase."""
    plt = _plt()
    fig = plt.figure(figsize=(6.5, 5.5))
    ax = fig.add_subplot(projection='3d')
    r = run.state_lvlh[:, 0:3]
    for phase, colour, label in (('approach', 'tab:blue', 'approach (CW)'), (CONTACT, 'tab:red', 'contact'),
                                 (POST_IMPACT, 'tab:green', 'post-impact leg')):
        sel = run.phase == phase
        ax.plot(r[sel, 0], r[sel, 1], r[sel, 2], color=colour, label=label)
    for t, dv in run.burns:
        k = int(round(t / run.scenario.control_period_s))
        ax.quiver(*r[k], *(dv * 2.0), color='k', linewidth=1.0)
    ax.scatter([0], [0], [0], color='k', marker='x', label='target port')
    ax.scatter(*r[0], color='tab:blue', marker='o', label='chaser start')
    ax.set_xlabel('dx radial [m]')
    ax.set_ylabel('dy along-track [m]')
    ax.set_zlabel('dz normal [m]')
    ax.set_title('Simulated docking manoeuvre (seed 003 Fig. 2)\nburns drawn as 2 s x dv')
    ax.legend(fontsize=7, loc='upper left')
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_impact(runs: dict, path: Path) -> Path:
    plt = _plt()
    fig, axes = plt.subplots(2, 1, figsize=(7.0, 5.5), sharex=True)
    for comp, run in runs.items():
        sel = (run.phase == CONTACT) | ((run.phase == POST_IMPACT) & (run.t < run.t[run.phase == CONTACT][-1] + 0.1))
        axis = run.scenario.docking_axis_lvlh
        t0 = run.t[run.phase == CONTACT][0]
        s = run.summary
        axes[0].plot(run.t[sel] - t0, run.force_facility_n[sel] + run.force_virtual_n[sel],
                     label=f'{comp}: gamma = {s["restitution"]:.3f}')
        axes[1].plot(run.t[sel] - t0, run.state_lvlh[sel, 3:6] @ axis, label=comp)
    s = next(iter(runs.values())).summary
    axes[0].set_title(f'Impact through the facility loop (orbital gamma = {s["restitution_orbital"]:.3f})')
    axes[0].set_ylabel('f_L + f_V [N]')
    axes[1].set_ylabel('closing rate [m/s]')
    axes[1].set_xlabel('time from the second burn [s]')
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_joint_errors(runs: dict, path: Path) -> Path:
    """Seed 003 Fig. 8 style: one row per control variant, joint errors in degrees."""
    plt = _plt()
    fig, axes = plt.subplots(len(runs), 1, figsize=(7.5, 2.4 * len(runs)), sharex=True, squeeze=False)
    for ax, (variant, run) in zip(axes[:, 0], runs.items()):
        for j in range(6):
            ax.plot(run.t, np.degrees(run.q_error[:, j]), linewidth=0.9, label=f'joint {j + 1}')
        ax.set_ylabel('error [deg]')
        ax.set_title(f'{LABELS[variant]} (torque held {run.iteration_time_s * 1e3:.1f} ms): '
                     f'max {run.max_error_deg.max():.3g} deg', fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0, 0].legend(fontsize=7, ncol=6, loc='upper left')
    axes[-1, 0].set_xlabel('time [s]')
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def feedforward_comparison(sc: DockingScenario, say=print) -> tuple[dict, dict, object]:
    """The three variants along the scenario's approach: runs, {variant: (max error deg, our time s)}, reference."""
    kin = SerialKinematics(cisas_arm_spec())
    cw = CWModel.at_altitude(sc.altitude_m)
    transfer = two_impulse_transfer(cw, sc.start_lvlh_m, np.zeros(3), sc.approach_duration_s,
                                    vf=sc.closing_speed_m_s * sc.docking_axis_lvlh)
    rot = kin.forward(kin.spec.q_home).rotation
    ref = cw_joint_reference(kin, cw, transfer, sc.dock_position_in_base_m, rot, 5e-3)
    model = cisas_pin_model()
    kd = damped_kd(model, kin.spec.q_home)
    runs, table = {}, {}
    for variant in SEED_FIG8_ORDER:
        runs[variant] = simulate_tracking(model, ref, variant, SEED_ITERATION_TIME_S[variant], kd=kd,
                                          max_substep_s=1e-3)
        table[variant] = (float(runs[variant].max_error_deg.max()), time_per_iteration_s(model, ref, variant))
        say(f'  {LABELS[variant]:<24s} max joint error {table[variant][0]:.4f} deg '
            f'(joint {int(np.argmax(runs[variant].max_error_deg)) + 1}), feed-forward {table[variant][1] * 1e6:.1f} us '
            f'per iteration (seed: {SEED_ITERATION_TIME_S[variant] * 1e3:.1f} ms in MATLAB)')
    return runs, table, ref


def record_mcap(run: MissionRun, tracking, reference, path: Path, rate_hz: float = RECORD_HZ) -> Path:
    """Write the mission to the bag folder ``path`` (rosbag2, MCAP) at ``rate_hz``."""
    from rosbags.typesys import Stores, get_typestore

    from hil_bringup.recorder import McapWriter

    ts = get_typestore(Stores.ROS2_JAZZY)
    T = ts.types
    Header, Time = T['std_msgs/msg/Header'], T['builtin_interfaces/msg/Time']
    Vec, Pt, Quat = T['geometry_msgs/msg/Vector3'], T['geometry_msgs/msg/Point'], T['geometry_msgs/msg/Quaternion']
    PoseStamped, Pose = T['geometry_msgs/msg/PoseStamped'], T['geometry_msgs/msg/Pose']
    TwistStamped, Twist = T['geometry_msgs/msg/TwistStamped'], T['geometry_msgs/msg/Twist']
    WrenchStamped, Wrench = T['geometry_msgs/msg/WrenchStamped'], T['geometry_msgs/msg/Wrench']
    JointState = T['sensor_msgs/msg/JointState']

    def header(t, frame='target_lvlh'):
        ns = int(round(t * 1e9))
        return Header(stamp=Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000), frame_id=frame)

    def pose(t, p):
        return PoseStamped(header=header(t), pose=Pose(position=Pt(x=p[0], y=p[1], z=p[2]),
                                                       orientation=Quat(x=0.0, y=0.0, z=0.0, w=1.0)))

    def twist(t, v):
        return TwistStamped(header=header(t), twist=Twist(linear=Vec(x=v[0], y=v[1], z=v[2]),
                                                          angular=Vec(x=0.0, y=0.0, z=0.0)))

    def wrench(t, f):
        return WrenchStamped(header=header(t), wrench=Wrench(force=Vec(x=f[0], y=f[1], z=f[2]),
                                                             torque=Vec(x=0.0, y=0.0, z=0.0)))

    axis = run.scenario.docking_axis_lvlh
    every = max(1, int(round(1.0 / (rate_hz * run.scenario.control_period_s))))
    writer = McapWriter(path)

    def put(topic, msgtype, msg, t):
        writer.write_serialized(topic, msgtype, ts.serialize_cdr(msg, msgtype), int(round(t * 1e9)))
    try:
        for k in range(0, run.t.size, every):
            t = float(run.t[k])
            s = [float(v) for v in run.state_lvlh[k]]
            put('/chaser/pose_lvlh', 'geometry_msgs/msg/PoseStamped', pose(t, s[0:3]), t)
            put('/chaser/twist_lvlh', 'geometry_msgs/msg/TwistStamped', twist(t, s[3:6]), t)
            put('/facility/robot_pose_lvlh', 'geometry_msgs/msg/PoseStamped',
                pose(t, [float(v) for v in run.robot_position_lvlh[k]]), t)
            put('/facility/ft/wrench', 'geometry_msgs/msg/WrenchStamped',
                wrench(t, [float(v) for v in -run.force_facility_n[k] * axis]), t)
            put('/facility/virtual_wrench', 'geometry_msgs/msg/WrenchStamped',
                wrench(t, [float(v) for v in -run.force_virtual_n[k] * axis]), t)
        names = list(cisas_arm_spec().joint_names)
        every_ff = max(1, int(round(1.0 / (rate_hz * tracking.iteration_time_s))))
        for i in range(0, tracking.t.size, every_ff):
            t = float(tracking.t[i])
            q_ref = np.array([np.interp(t, reference.t, reference.q[:, j]) for j in range(6)])
            q = q_ref - tracking.q_error[i]
            msg = JointState(header=header(t, 'cisas_base'), name=names, position=q.astype(float),
                             velocity=np.zeros(0), effort=tracking.tau[i].astype(float))
            put('/cisas/joint_states', 'sensor_msgs/msg/JointState', msg, t)
    finally:
        writer.close()
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog='docking_demo', description=__doc__.split('\n\n')[0])
    parser.add_argument('--scenario', type=Path, default=None, help='scenario YAML (default: cisas_docking)')
    parser.add_argument('--out', type=Path, default=Path('runs/docking'))
    parser.add_argument('--no-live', action='store_true', help='skip the live stage (the ROS graph)')
    parser.add_argument('--lab', choices=('emulated', 'twin'), default='emulated',
                        help="the live stage's lab: the emulated CISAS robot and contact, or the MuJoCo lab twin with "
                             'the probe and plate of k_L (cisas_docking.launch.py lab:=...)')
    parser.add_argument('--live-timeout-s', type=float, default=600.0,
                        help='wall time the live stage may take before it counts as failed [s]')
    args = parser.parse_args(argv)
    t_start = time.perf_counter()

    def say(msg):
        print(f'[{time.perf_counter() - t_start:6.1f} s] {msg}', flush=True)
    sc = load_docking_scenario(args.scenario)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    say(f'scenario {sc.name}: mission with the {sc.compensation!r} compensation')
    run = run_mission(sc, progress=lambda m: say('  ' + m))
    say(f'wrote {plot_trajectory(run, out / "fig02_trajectory.png")}')
    say('impact with each virtual-force compensation:')
    runs = {}
    for comp in COMPENSATIONS:
        runs[comp] = run if comp == sc.compensation else run_mission(sc, compensation=comp)
        s = runs[comp].summary
        say(f'  {comp:<12s} restitution {s["restitution"]:.4f} (orbital {s["restitution_orbital"]:.4f}), contact '
            f'{s["contact_duration_s"] * 1e3:.0f} ms (orbital {s["contact_duration_orbital_s"] * 1e3:.0f} ms)')
    say(f'wrote {plot_impact(runs, out / "impact_compensation.png")}')
    say(f'wrote {draw_fig6(out / "fig06_min_mass.png")} (exact-delay m_min; dashed: seed Eq. 29)')
    say('feed-forward variants on the CISAS arm along the approach (Kp = 50, damped Kd):')
    tracking, table, reference = feedforward_comparison(sc, say=lambda m: say(m))
    say(f'wrote {plot_joint_errors(tracking, out / "fig08_joint_errors.png")}')
    bag = record_mcap(run, tracking['newton_euler'], reference, out / 'mission')
    say(f'wrote {bag} (rosbag2, MCAP)')
    summary = dict(run.summary, feedforward={v: {'max_joint_error_deg': e, 'time_per_iteration_s': t}
                                             for v, (e, t) in table.items()})
    say('the mission through the MuJoCo lab twin (lockstep): the probe on its spring of k_L meets the target plate')
    from hil_docking.scenario import scenario_path
    from hil_docking.twin_mission import twin_mission_with_pictures

    twin, files = twin_mission_with_pictures(args.scenario or scenario_path(), out, say=say,
                                             max_time_s=sc.approach_duration_s + sc.post_impact_duration_s + 5.0)
    if not twin['complete']:
        say(f"the mission through the twin did not finish its post-impact leg by {twin['t_s']:.1f} s: FAILED")
        return 1
    say(f"  twin: restitution {twin['restitution']:.4f} (orbital {run.summary['restitution_orbital']:.4f}), impulse "
        f"{twin['impulse_n_s']:.3f} N s, peak f_L {twin['force_n'].max():.2f} N measured at "
        f"{twin['penetration_m'].max() * 1e3:.2f} mm penetration")
    for path in files:
        say(f'wrote {path}')
    summary['twin'] = {k: twin[k] for k in ('restitution', 'impulse_n_s', 'closing_speed_in_m_s', 'contact_start_s',
                                            'separation_s')}
    (out / 'summary.json').write_text(json.dumps(summary, indent=2))
    say(f'wrote {out / "summary.json"}')
    if args.no_live:
        say('done (live stage skipped)')
        return 0
    ok = live_stage(sc, args.scenario, out, args.live_timeout_s, say, lockstep=run.summary, lab=args.lab,
                    twin_lockstep=twin if args.lab == 'twin' else None)
    say('done' if ok else 'done: THE LIVE STAGE FAILED (see above)')
    return 0 if ok else 1


def live_stage(sc: DockingScenario, scenario_file: Path | None, out: Path, timeout_s: float, say,
               lockstep: dict | None = None, lab: str = 'emulated', twin_lockstep: dict | None = None) -> bool:
    """The graph of ``cisas_docking.launch.py`` live (:func:`hil_docking.live.run_live`); True when it did its job.
    ``twin_lockstep`` (``lab='twin'``): :func:`hil_docking.twin_mission.run_twin_mission` of the same scenario,
    whose restitution the live loop must give again (the same loop on the same timeline)."""
    from hil_common.network import apply_network_profile, demo_domain_id
    from hil_docking.live import measured_contact, run_live
    from hil_docking.scenario import scenario_path

    apply_network_profile()
    domain = demo_domain_id()          # a random ROS domain unless ROS_DOMAIN_ID is set: two runs do not cross
    say(f'live stage: the cisas_docking.launch.py lab:={lab} graph on loopback DDS (ROS domain {domain}), '
        f'{sc.approach_duration_s + sc.post_impact_duration_s:g} s of simulated mission plus the contact')
    try:
        summary = run_live(scenario_file or scenario_path(), out, say=lambda m: say(m), wall_timeout_s=timeout_s,
                           record=True, launch_arguments={'lab': lab},
                           lockstep_restitution=twin_lockstep['restitution'] if twin_lockstep else None)
        if lab == 'twin':       # the contact happened in the twin: what its sensor measured against k_L x + b_L x'
            summary['measured_contact'] = contact = measured_contact(out / 'live', sc)
            if not contact['ok']:
                summary['problems'].append(f"contact in the twin: {contact['problem']}")
                summary['ok'] = False
    except Exception as exc:  # noqa: BLE001 - any failure of the live part is reported, not a traceback
        say(f'live stage FAILED to run: {type(exc).__name__}: {exc}')
        return False
    (out / 'live_summary.json').write_text(json.dumps(summary, indent=2, default=float))
    if summary.get('restitution') is not None:
        ref = (f" (lockstep runner, robot velocity given: {lockstep['restitution_at_separation']:.4f}; the node "
               'differences the stamped positions)') if lockstep else ''
        if twin_lockstep:
            ref = f" (the lockstep loop through the twin on the graph's timeline: {twin_lockstep['restitution']:.4f})"
        say(f"  live: restitution {summary['restitution']:.4f}{ref}, orbital {summary['restitution_orbital']:.4f}; "
            f"impulse {summary['impulse_n_s']:.4g} N s; approach off the CW arc by at most "
            f"{summary.get('approach_max_off_arc_m', float('nan')):.2g} m; post-impact leg off the free CW motion by "
            f"at most {summary.get('post_impact_max_off_arc_m', float('nan')):.2g} m")
    say(f"  live: {summary.get('t_s') or 0.0:.3f} s simulated in {summary['wall_s']} s of wall time; steps that waited for a "
        f"late robot sample {summary.get('late_sample_steps')}, held samples {summary.get('pose_sample_misses')}, "
        f"dropped steps {summary.get('dropped_steps')}; recorded {sum(summary['recording'].values())} messages to "
        f"{out / 'live'}")
    if summary.get('twin_clock'):
        say(f"  live, the twin's clock: {summary['twin_clock']} (misses: steps taken without the arm's command; "
            'stale answers: commands for an earlier step, not taken for this one)')
    contact = summary.get('measured_contact')
    if contact and contact['ok']:
        say(f"  live, the contact in the twin: peak {contact['peak_force_n']:.2f} N measured by the F/T sensor against "
            f"k_L x + b_L x' = {contact['peak_law_n']:.2f} N of the penetration from the arm's joints (max "
            f"{contact['max_penetration_m'] * 1e3:.2f} mm)")
    say(f"wrote {out / 'live_summary.json'}")
    if not summary['ok']:
        say('live stage FAILED:')
        for problem in summary['problems']:
            say(f'  - {problem}')
        say(f"  node logs: {summary['nodes_log_dir']}")
    return bool(summary['ok'])


if __name__ == '__main__':
    sys.exit(main())
