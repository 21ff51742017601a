"""The Envisat graph live, as ``ros2 launch hil_bringup envisat_capture.launch.py`` starts it.

The demo's live part (:func:`hil_bringup.envisat_demo.ros_graph_part`) starts the node set of
:func:`hil_bringup.graphs.envisat_graph` -- the launch file's one definition -- on loopback
DDS with the MuJoCo lab twin, stage by stage by readiness. Checked here:

* the running nodes are exactly the graph's, each carrying exactly the graph's parameters
  (read back from the nodes over their parameter services);
* on the twin's simulated clock (``lab_clock:=auto``): no fault stays latched, no node dies,
  commands reach the robots, the stack answers the twin nearly every step, and the OBSW runs
  through sync and approach to the grasp when the ideal-robot lockstep runner does; the
  gripper then holds the ring in the twin (the two mock-ups move as one body); the servicer
  node re-bases the nominal onto the stack and the client's node follows its plan: the two
  admittances' nominals stay one through it, and the table commands move on without a jump;
* with the lab in real time (``lab_clock:=wall``) under a stated load, holds are reported and
  recover on their own;
* a graph whose robots never come up is reported as a failure (the demo then exits non-zero).
"""

import numpy as np
import pytest

from hil_bringup import envisat_demo
from hil_bringup.live_report import LiveExpectations
from hil_bringup.scenario import load_scenario
from hil_bringup.client_hot_path_node import sample_counts as client_sample_counts
from hil_bringup.servicer_hot_path_node import sample_counts
from hil_common.ros_testing import spin_until


def _parameters_of(node, executor, fqn, names):
    from rcl_interfaces.srv import GetParameters
    from rclpy.parameter import parameter_value_to_python

    client = node.create_client(GetParameters, f'{fqn}/get_parameters')
    assert client.wait_for_service(timeout_sec=10.0), f'{fqn} has no parameter service'
    future = client.call_async(GetParameters.Request(names=list(names)))
    executor.spin_until_future_complete(future, timeout_sec=30.0)
    assert future.done(), f'{fqn}: no answer'
    node.destroy_client(client)
    return dict(zip(names, (parameter_value_to_python(v) for v in future.result().values)))


RUN_S = 12.5      # simulated seconds of the live capture (sync 1 s, approach 2 s at twice the tool bandwidth: the grasp at
#                   ~5.8 s, the re-basing ramp to ~10.4 s, then 2 s: 500 samples after it, or 250 with the grasp the 1 s
#                   late the test allows)
TOOL_BANDWIDTH_RAD_S = 2.4   # the scenario's 1.2 closes the tool on the ring in 10.2 s after a 3 s approach, this in 4.7 s
#                              (ideal-robot lockstep: the same grasp, 15.4 N peak contact force, 4.6 mm/s after it)
REBASE_AFTER_S, REBASE_RAMP_S = 1.0, 2.0     # the re-basing, shortened (the scenario's: 5 s, 10 s)


def _stamp(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


@pytest.mark.parametrize('servicer_hot_path', ['nodes', 'fused'])
def test_the_launch_file_graph_captures_live_with_the_twin(tmp_path, servicer_hot_path):
    """Sync, approach, the gripper closing on the ring in the twin, post-grasp: on the twin's
    simulated clock, so the timeline is the lockstep runner's however busy the machine is. With the
    servicer's hot path as two nodes (the default) and fused (``servicer_hot_path:=fused``)."""
    import copy

    from geometry_msgs.msg import PoseStamped
    from sensor_msgs.msg import JointState

    from hil_bringup.facility import load_facility

    from hil_bringup.graphs import envisat_graph
    from hil_bringup.runners.mission import HilMission
    from hil_bringup.runners.twin_capture import capture_figures
    from hil_common.conversions import pose_from_msg

    scenario = copy.deepcopy(load_scenario('envisat_capture'))
    scenario.obsw.sync_duration_s, scenario.obsw.approach_duration_s = 1.0, 2.0   # the grasp within RUN_S
    scenario.obsw.tool_bandwidth_rad_s = np.full(6, TOOL_BANDWIDTH_RAD_S)
    scenario.rebase.after_post_grasp_s, scenario.rebase.ramp_s = REBASE_AFTER_S, REBASE_RAMP_S
    seen, sensor_poses, fingers = {}, {'client_ft': [], 'servicer_wrist_ft': []}, []

    def inspect(running, node, executor):
        graph = running.graph
        def missing():               # discovery on a busy machine takes a while
            names = {f"{ns.rstrip('/')}/{n}" for n, ns in node.get_node_names_and_namespaces()}
            seen['missing'] = {n.fqn for n in graph.nodes} - names
            return not seen['missing']
        spin_until(executor, missing, 20.0)
        for spec in graph.nodes:
            got = _parameters_of(node, executor, spec.fqn, sorted(spec.ros_parameters))
            for key, want in spec.ros_parameters.items():
                value = got[key]
                if isinstance(want, (list, tuple)):
                    assert np.allclose(value, want) if want and not isinstance(want[0], str) else list(value) == list(want), \
                        (spec.fqn, key)
                else:
                    assert value == pytest.approx(want) if isinstance(want, float) else value == want, (spec.fqn, key)
        seen['checked'] = len(graph.nodes)
        for sensor, poses in sensor_poses.items():     # where the twin's two F/T sensors are in the lab
            node.create_subscription(PoseStamped, f'{sensor}/sensor_pose',
                                     lambda m, poses=poses: poses.append((_stamp(m), pose_from_msg(m.pose))), 50)
        node.create_subscription(JointState, 'servicer/gripper/joint_states',   # what the gripper reports
                                 lambda m: fingers.append((_stamp(m), sum(m.position))), 50)

    expect = LiveExpectations(phases=('sync', 'approach', 'grasp', 'post_grasp'),
                              min_messages={t: 100 for t in envisat_demo.ROBOT_COMMAND_TOPICS})
    args = {'realtime_priority': '0', 'control_rate_hz': '250', 'servicer_hot_path': servicer_hot_path}
    # to ~6 s after the grasp (the re-basing and 2 s after it)
    summary = envisat_demo.ros_graph_part(scenario, tmp_path, RUN_S, expect, on_running=inspect, launch_arguments=args)
    print('\nlive Envisat graph:', {k: summary[k] for k in ('phases', 'faults', 'stages_ready_s', 'lab_clock',
                                                            'deadline_misses')})
    assert summary['ok'], summary['problems']
    assert summary['lab_clock']['simulated']
    # no node loaded a compiled kernel in a callback (a 10-60 ms stall; hil_common.kernel_loads)
    late = {fqn: n['late_kernels'] for fqn, n in summary['nodes'].items() if n.get('late_kernels')}
    assert not late, '; '.join(f'{k}: {", ".join(v)}' for k, v in late.items())
    assert seen['missing'] == set() and seen['checked'] == len(envisat_graph(args).nodes)
    assert summary['messages']['client/ft/wrench'] > 100 and summary['messages']['servicer/ft/wrench'] > 100
    # the client's fused hot path: its quiet samples in the one compiled call, in the compiled loop's thread (which
    # takes the twin's /clock itself)
    counts = client_sample_counts(next(tmp_path.rglob('client_hot_path.log')).read_text())
    assert counts is not None
    samples, compiled, threaded, _, held = counts
    assert compiled > 0.5 * (samples - held) > 1000 and threaded > 0.5 * (samples - held), counts
    if servicer_hot_path == 'fused':       # its quiet samples ran in the one compiled call (compiled_samples)
        log = next(tmp_path.rglob('servicer_hot_path.log')).read_text()
        counts = sample_counts(log)
        assert counts is not None, log[-2000:]
        samples, compiled, threaded, _, held = counts
        # all but the first, the late ones, and those of the re-basing's ramp (in Python by design): 79 % in the
        # demo's 53 s, whose last 14 s are the ramp and after it
        assert compiled > 0.5 * (samples - held) > 1000, counts
        # in the compiled loop's thread, which takes the twin's /clock itself (before, under use_sim_time every sample
        # ran in the wrist callback, after the executor had taken /clock)
        assert threaded > 0.5 * (samples - held), counts
    # the stack answered the twin every step (misses: steps the twin took without it, after its barrier's 10 s), and
    # no hot path or admittance dropped a step: with the twin's start pace (graphs.ENVISAT_START_PACE) a node held up
    # in its start-up no longer finds the twin far on, and a robot is waited for once its commands keep pace
    misses = summary['deadline_misses'].get('lab_twin/status', {})
    assert sum(misses.values()) == 0, misses
    dropped = {topic: values['dropped_steps'] for topic, values in summary['deadline_misses'].items()
               if values.get('dropped_steps')}
    assert not dropped, summary['deadline_misses']

    # the timeline: the grasp latches as long after the approach starts as in the ideal-robot
    # lockstep run, within the loop's delays (the OBSW started during the inspection above, so
    # its 'sync' message is not its start)
    phases = {p['phase']: p['t_s'] for p in summary['phases']}
    ideal = HilMission(scenario)
    fig = capture_figures(ideal.run(8.0, record_every_s=0.05), ideal.controller)
    assert fig['grasp_latch_s'] is not None
    approach_ideal, approach_live = fig['grasp_latch_s'] - fig['approach_start_s'], phases['grasp'] - phases['approach']
    print(f'approach to grasp latch: live {approach_live:.2f} s, ideal-robot lockstep {approach_ideal:.2f} s')
    assert abs(approach_live - approach_ideal) < 1.0

    # the lab realises the simulated relative pose (Eq. 23): the twin's measured tool pose relative to the
    # grasp target against the simulated one, through the approach (0.16 mm and 0.28 mrad measured, 0.08 and 0.14 at
    # the scenario's tool bandwidth; with the two admittances' nominals started 0.1-0.17 s apart it was 12 mm and
    # 4-7 mrad, and the grip then overloaded the F/T sensors after the grasp)
    from hil_bringup.live_plots import read_live_run

    run = read_live_run(tmp_path)
    during = (run['t_lab'] > phases['approach'] + 1.0) & (run['t_lab'] < phases['grasp'])
    lab_m, lab_rad = run['lab_tool_error_m'][during], run['lab_tool_error_rad'][during]
    print(f'lab against simulation through the approach: {during.sum()} samples, at most {lab_m.max() * 1e3:.3f} mm '
          f'and {lab_rad.max() * 1e3:.3f} mrad')
    assert during.sum() > 500 and lab_m.max() < 1e-3 and lab_rad.max() < 1e-3

    # post-grasp re-basing live: the servicer node planned it once, the client's node followed, and the two
    # admittances' nominals (g_n = g_t g_c^-1 = g_b g_s^-1, Eq. 23) stay one through it and after (measured
    # 9e-10 m); from the ramp's end the nominal is the stack's free motion: the plan's free compound, integrated
    # from where the servicer node placed it, keeps its pose in the recorded nominal (measured 7e-11, through
    # the ramp it moves by 3 mm while V_n blends over); the table commands move on without a jump
    from hil_bringup.live_plots import rebase_figures

    rebase = rebase_figures(run)
    print('live re-basing:', rebase)
    assert rebase is not None and rebase['plans'] == 1, run['notes']
    # after the OBSW's post-grasp by REBASE_AFTER_S: the phase's time by the OBSW's own stamp (to one OBSW step of
    # 4 ms), not by when the test's observer got it, which beside two busy loops was once 0.09 s after the servicer
    # node had got it and planned from it
    plan_start, post = rebase['plan_start_s'], run['phase_stamps_s']['post_grasp']
    step_s = 1.0 / float(args['control_rate_hz'])
    assert post + REBASE_AFTER_S - step_s <= plan_start <= post + REBASE_AFTER_S + 1.2, (post, plan_start)
    assert rebase['ramp_s'] == REBASE_RAMP_S
    assert rebase['common_stamps_since_plan'] > 100
    assert rebase['nominals_apart_m'] < 1e-6 and rebase['nominals_apart_rad'] < 1e-6
    assert rebase['samples_after_ramp'] > 100 and rebase['compound_moves_after_ramp'] < 1e-8
    assert rebase['compound_moves_in_ramp'] > 1e-4
    assert rebase['table_step_in_ramp_m'] < 2.0 * rebase['table_step_before_m'] + 1e-5
    # both admittance ports are observed live (seed 004 Eq. 28; the fused hot path ignored
    # passivity_control before, and no table published its measured twist) and the loop stays
    # passive with the controllers on: the observed energy stays under 0.2 mJ (measured at most 0 and
    # 3e-21 J at the client port, 1.6e-5 and 2.1e-5 J at the servicer's; the lockstep run with 4 ms
    # robots observes 0.8 mJ at the client port without the controller). The controller's effect
    # itself is shown by the rule test's 1 Hz spring behind a late table
    for port in ('client', 'servicer'):
        energy = run[f'passivity_{port}'][:, 0]
        print(f'{port} port: {energy.size} observations, observed energy at most {energy.max():.3g} J, '
              f'dissipated {run[f"passivity_{port}"][-1, 3]:.3g} J')
        assert energy.size > 1000 and energy.max() < 2e-4

    # the gripper closed on the ring and holds it to the end: both pads on the lip, the two
    # half-openings adding up to the lip's thickness (as the gripper reports them); the fingers
    # close in closing_time_s after the OBSW's command, then settle
    # (open, the sum is 80 mm; closed on nothing, the fingers overtravel to about -45 mm)
    facility = load_facility('envisat_lab')
    closed_from = phases['grasp'] + facility.gripper['closing_time_s'] + 0.5
    start = summary['lab_clock']['start_s']             # the stamps are the twin's time
    held = np.array([total for t, total in fingers if t - start >= closed_from])
    lip = facility.ring['lip_thickness_m']
    print(f'fingers from {closed_from:.1f} s: {held.size} samples, half-openings sum {held.min() * 1e3:.2f} to '
          f'{held.max() * 1e3:.2f} mm (the lip: {lip * 1e3:.1f} mm)')
    assert held.size > 100 and np.all(np.abs(held - lip) < 3e-3)
    # the grasped stack is rigid: the pose of the wrist sensor seen from the client's sensor stays
    # fixed (the two mock-ups move as one body while the stack tumbles). Measured 0.02 mm and
    # 0.2 mrad; without the grip's no-slip solver in the live twin the gripper turned 0.7 rad on
    # the lip, with /clock ahead of the drivers' wrenches (the servicer's timer on the previous
    # step's data) it crept 16 mm and 54 mrad and the contact force grew to the F/T overload
    client = {round(t, 3): pose for t, pose in sensor_poses['client_ft'] if t - start >= closed_from}
    relative = [client[round(t, 3)].actInv(pose) for t, pose in sensor_poses['servicer_wrist_ft']
                if round(t, 3) in client]
    assert len(relative) > 100
    drift = max(np.linalg.norm(r.translation - relative[0].translation) for r in relative)
    turn = max(np.linalg.norm(pin_log3(relative[0].rotation.T @ r.rotation)) for r in relative)
    print(f'after the grasp the wrist sensor moved {drift * 1e3:.2f} mm, {turn * 1e3:.2f} mrad relative to the client sensor')
    assert drift < 1e-3 and turn < 5e-3


def pin_log3(rotation):
    import pinocchio as pin
    return pin.log3(rotation)


def test_a_graph_whose_robots_never_come_up_is_a_failure(tmp_path):
    scenario = load_scenario('envisat_capture')
    summary = envisat_demo.ros_graph_part(scenario, tmp_path, 2.0, LiveExpectations(phases=('sync',)),
                                          launch_arguments={'use_sim': 'false', 'ready_timeout_s': '3.0'})
    assert not summary['ok']
    assert any('did not become ready' in p and 'joint_states' in p for p in summary['problems']), summary['problems']
    assert any('phase sync never reached' in p for p in summary['problems'])


@pytest.mark.parametrize('servicer_hot_path', ['nodes', 'fused'])
def test_under_a_stated_load_the_graph_degrades_and_recovers_on_its_own(tmp_path, servicer_hot_path):
    """Issue 15 item 6, the lab in real time (``lab_clock:=wall``, as on a real facility, where no
    simulated clock waits for the stack): the launch file's graph with two busy CPU loops beside it for its first 8 s
    (the stated load: on this 2-core machine the graph gets at most half of it), then none.

    It starts, keeps running degraded (holds on late inputs are reported, not latched), the
    OBSW still gets through its synchronisation into the approach, and once the load is gone
    no fault is left latched: every hold cleared by the nodes' own recovery policy.

    The graph runs at a control rate this 2-core machine sustains in real time with headroom:
    at 50 Hz the twin, the eight nodes and the recorder take about 1.5 cores (measured per
    process; the twin's 1 kHz physics and F/T streams and the recorder are most of it). At 100
    and 250 Hz they took the whole machine with no load beside them, so there was nothing to
    recover to: the nodes ran late, held and dropped steps, and the arm's approach went unstable
    into F/T overloads (docs/envisat_capture.md, open).
    """
    import subprocess
    import sys
    import threading

    scenario = load_scenario('envisat_capture')
    scenario.obsw.sync_duration_s = 4.0
    loops = []

    def load(running, node, executor):
        loops.extend(subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(2))
        threading.Timer(8.0, lambda: [p.kill() for p in loops]).start()

    expect = LiveExpectations(phases=('sync', 'approach'),
                              min_messages={t: 50 for t in envisat_demo.ROBOT_COMMAND_TOPICS}, latch_grace_s=3.0)
    try:
        # 16 s, or on until the approach (at most 60 s): on a machine busier than the stated load (the suite beside
        # two more busy loops) the graph came up later (the sync at 12.9 s of the 16, in both variants)
        summary = envisat_demo.ros_graph_part(
            scenario, tmp_path, 16.0, expect, on_running=load,
            launch_arguments={'realtime_priority': '0', 'control_rate_hz': '50', 'stale_after_s': '0.5',
                              'live_view': 'false', 'lab_clock': 'wall', 'servicer_hot_path': servicer_hot_path},
            until=lambda report: any(phase == 'approach' for _, phase in report.phases), until_max_s=60.0)
    finally:
        for p in loops:
            p.kill()
    print('\nunder load:', {k: summary[k] for k in ('phases', 'faults', 'deadline_misses')})
    assert summary['ok'], summary['problems']
    assert all(f['cleared_s'] is not None or summary['duration_s'] - f['t_s'] <= 3.0 for f in summary['faults'])
    # the client's on the wall clock: in the compiled loop's thread too
    counts = client_sample_counts(next(tmp_path.rglob('client_hot_path.log')).read_text())
    assert counts is not None
    samples, compiled, threaded, _, held = counts
    assert samples - held > 100 and threaded > 0.5 * (samples - held), counts
    if servicer_hot_path == 'fused':       # on the wall clock its quiet samples ran in the compiled loop's thread
        counts = sample_counts(next(tmp_path.rglob('servicer_hot_path.log')).read_text())
        assert counts is not None
        samples, compiled, threaded, _, held = counts
        # (50 Hz here: 258 samples in one run beside two busy loops, 257 of them in the loop)
        assert samples - held > 100 and threaded > 0.5 * (samples - held), counts
