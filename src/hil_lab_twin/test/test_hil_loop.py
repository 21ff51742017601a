"""The whole HIL loop closed through the twin over DDS and RDT/UDP (loopback only).

Like the lab: the client mock-up on the UR10e is pushed; its F/T sensor streams over
RDT/UDP to the real driver (``hil_sensors`` ``ft_sensor_node``, tared at start), the client
admittance node (``hil_admittance``, seed 004 Eq. 11) integrates the measured wrench for a
50 kg client without nominal motion, the motion table turns the commanded relative pose
into joint commands, and the twin moves the mock-up. Every node is its installed
executable; none knows it drives a simulation.

Checks: the table carries the mock-up where the admittance node commands it: the flange
repeats the commanded displacement after the loop's delay (fitted: the single-point trajectory's lead plus
the twin servo's response delay, within half a step) within 1 mm at every sample, along the push; and the distance is ``F t^2 / (2 m)`` within 10 % for
a free body of mass m. The lab runs on the twin's simulated clock (every node and this test
on its /clock, series by their stamps): a busy machine slows the run down and the loop's
timing stays the lab's (on the wall clock, beside two busy loops, 48 of 190 samples were more
than 1 mm off the delayed command and the test failed).
"""

import math

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped, WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from hil_common.ros_testing import spin_until, start_node, stop_process
from hil_lab_twin.pacing import counters_from_status
from hil_motion_table.kinematics_helpers import make_kinematics

MASS_KG, PUSH_N, PUSH_S = 500.0, 50.0, 1.0
PERIOD_S = 0.004   # the twin's step, the admittance's and the F/T driver's output period


def force(msg) -> np.ndarray:
    return np.array([msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z])


def fit_lag(commanded, measured, lags_s=np.arange(0.0, 0.2, 0.002)):
    """The delay that best maps the commanded onto the measured series ``[[t, value], ...]``
    (least squares over the measured samples), and the residuals at that delay."""
    def residual(lag):
        return measured[:, 1] - np.interp(measured[:, 0] - lag, commanded[:, 0], commanded[:, 1], left=0.0)
    best = min(lags_s, key=lambda lag: float(np.sum(residual(lag) ** 2)))
    return float(best), residual(best)


def stamp_s(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def run_push(ros, free_udp_port) -> dict:
    """The push on the twin's simulated clock: the twin steps once the stack has answered, every node
    and this test run on its /clock, and the series are taken by their stamps (simulated times), so a
    busy machine slows the run down instead of desynchronising it."""
    from rclpy.parameter import Parameter

    node, executor = ros
    node.set_parameters([Parameter('use_sim_time', Parameter.Type.BOOL, True)])

    def now_s() -> float:
        return node.get_clock().now().nanoseconds * 1e-9

    def spin_simulated(seconds: float) -> None:
        end = now_s() + seconds
        assert spin_until(executor, lambda: now_s() >= end, 60.0 + 100.0 * seconds), 'the twin stopped'
    port = free_udp_port
    kin = make_kinematics('ur10e')
    base_rotation = np.array([[-1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0]])  # the client faces -x (yaw pi)
    states, wrenches, poses, statuses, procs, subs = [], [], [], [], [], []
    subs.append(node.create_subscription(JointState, '/client/joint_states', lambda m: states.append((stamp_s(m), m)),
                                         100))
    subs.append(node.create_subscription(WrenchStamped, '/client/ft/wrench', wrenches.append, 1000))
    subs.append(node.create_subscription(PoseStamped, '/client/table/pose_cmd',
                                         lambda m: poses.append((stamp_s(m), m)), 100))
    subs.append(node.create_subscription(DiagnosticStatus, '/client/table/status', statuses.append, 10))
    tracking_errors = []  # published once the motion table has both the measured joints and commands
    admittance_status = []  # OK once the client admittance integrates the measured wrench
    subs.append(node.create_subscription(DiagnosticStatus, '/client/admittance/status', admittance_status.append, 10))
    subs.append(node.create_subscription(Float64MultiArray, '/client/table/tracking_error', tracking_errors.append, 10))
    twin_clock = {}    # the twin's counters (every second): steps it took without the stack's answer are misses
    subs.append(node.create_subscription(DiagnosticStatus, '/lab_twin/status',
                                         lambda m: twin_clock.update({kv.key: kv.value for kv in m.values}), 10))
    pub_push = node.create_publisher(WrenchStamped, '/client/payload/push', 10)

    def flange_in_world(msg):
        return base_rotation @ kin.forward(np.array(msg.position)).translation

    try:
        # the lab is up before the stack connects to it (the driver latches a stale fault otherwise)
        procs.append(start_node('hil_lab_twin', 'lab_twin_node', 'tables:=["client:ur10e"]',
                                f'rdt_ports:=["client_ft:{port}"]', 'publish_wrench:=false', 'clock:=simulated',
                                f'publish_rate_hz:={1.0 / PERIOD_S}',
                                'clock_after_topics:=["client/ft/wrench"]', 'barrier_timeout_s:=10.0',
                                'command_stamps:=true'))
        assert spin_until(executor, lambda: len(states) > 10, 30.0), 'twin not up'
        procs.append(start_node('hil_sensors', 'ft_sensor_node', f'sensor_port:={port}', 'sensor_rate_hz:=1000.0',
                                f'publish_rate_hz:={1.0 / PERIOD_S}', 'software_bias.on_start:=true', 'low_pass.cutoff_hz:=50.0',
                                'stale_timeout_ms:=1000.0', 'use_sim_time:=true', ros_args=('-r', '__ns:=/client')))
        # engage the simulated client only once the sensor is tared (the mock-up's weight removed)
        assert spin_until(executor, lambda: len(wrenches) > 50 and np.linalg.norm(force(wrenches[-1])) < 0.3,
                          30.0), 'no tared F/T stream'
        procs.append(start_node('hil_admittance', 'client_admittance_node', f'mass_kg:={MASS_KG}',
                                'inertia_com_kgm2:=[5000.0, 0.0, 0.0, 0.0, 5000.0, 0.0, 0.0, 0.0, 5000.0]',
                                'twist_client_body_0:=[0.0, 0.0, 0.0, 0.0, 0.0, 0.0]',
                                'pose_sensor_in_client_xyz_rpy:=[0.0, 0.0, 0.0, 0.0, 0.0, 0.0]', f'rate_hz:={1.0 / PERIOD_S}',
                                'wrench_timeout_s:=0.5', 'use_sim_time:=true'))
        # the client CoM is taken at the sensor origin, 4 cm above the flange (the sensor's height).
        # (A light client, e.g. 50 kg against the 5.7 kg mock-up, makes the loop oscillate: the
        # mock-up's inertial reaction -m a is fed back through the sensor with the loop's delays.)
        procs.append(start_node('hil_motion_table', 'motion_table_node', 'robot:=ur10e', 'command_frame:=home',
                                'pose_body_in_flange_xyz_rpy:=[0.0, 0.0, 0.04, 0.0, 0.0, 0.0]',
                                'prediction_horizon_s:=0.0', 'joint_states_timeout_s:=1.0', 'use_sim_time:=true',
                                'output:=joint_trajectory', f'period_s:={PERIOD_S}', f'trajectory_lead_s:={PERIOD_S}',
                                ros_args=('-r', '__ns:=/client')))
        # The push waits for the admittance's first wrench: its subscription can match the driver's
        # publisher after the table is up, and until then it integrates unforced (a run pushed then
        # moved 21 of 49 mm: the first 0.3 s of the push never reached it)
        assert spin_until(executor, lambda: len(tracking_errors) > 10 and pub_push.get_subscription_count() > 0
                          and admittance_status and admittance_status[-1].level == DiagnosticStatus.OK, 30.0), \
            [s.message for s in admittance_status[-3:]]
        start_position = flange_in_world(states[-1][1])
        spin_simulated(1.0)
        # nothing pushes: the client stays put, up to the drift a tare residual below 0.3 N
        # can cause on a free 500 kg body in 1 s (0.3 * 1^2 / (2 * 500) = 0.3 mm)
        assert np.linalg.norm(force(wrenches[-1])) < 0.5
        assert np.linalg.norm(flange_in_world(states[-1][1]) - start_position) < 1e-3
        push = WrenchStamped()
        push.wrench.force.y = PUSH_N  # world +y, at the grapple
        t_push = now_s()
        pub_push.publish(push)
        # repeated (held until the next message), so a message lost right after discovery costs 20 ms at most
        timer = node.create_timer(0.02, lambda: pub_push.publish(push))
        spin_simulated(PUSH_S)
        node.destroy_timer(timer)
        t_state, state = states[-1]
        t_pose, pose = poses[-1] if poses else (math.nan, None)
        pub_push.publish(WrenchStamped())
        statuses.clear()
        spin_until(executor, lambda: statuses, 60.0)  # the tracking statistics, every 0.5 s (simulated)
        twin_clock.clear()
        spin_until(executor, lambda: twin_clock, 30.0)  # the twin's counters as of now (every second of wall time)
    finally:
        outputs = [stop_process(p) for p in reversed(procs)][::-1]  # the stack first, then the lab
        for sub in subs:
            node.destroy_subscription(sub)
        node.destroy_publisher(pub_push)
    if pose is None:  # no pose command got through at all: a starved run, to be repeated
        return {'pose_rate': 0.0, 'state_rate': 0.0, 'in_step': False, 'tracking': None, 'outputs': outputs}
    p = pose.pose.position  # client frame = sensor frame = flange axes at home
    return {
        'moved': flange_in_world(state) - start_position,
        'commanded': base_rotation @ kin.forward(kin.q_home).rotation @ np.array([p.x, p.y, p.z]),
        # The push's onset in the lab: the first measured sample of it (stamp, simulated time; the
        # sensor's stream before then holds the mock-up's weight until the tare). Not t_push: this
        # test's clock is the /clock it has processed, which a busy machine delays behind the twin's
        # (in CI the push met the mock-up about 0.2 s later).
        'onset': next((stamp_s(m) for m in wrenches if stamp_s(m) >= t_push and np.linalg.norm(force(m)) > 0.5 * PUSH_N),
                      math.nan),
        'elapsed': t_state - t_push,
        't_state': t_state,
        # what this test received (its readers, and the writers' 10-deep histories, lose messages while this
        # process is held up on a busy machine); that the stack answered every step is the twin's count
        'pose_rate': sum(1 for t, _ in poses if t_push < t <= t_push + PUSH_S) / PUSH_S,
        'state_rate': sum(1 for t, _ in states if t_push < t <= t_push + PUSH_S) / PUSH_S,
        'twin_steps': counters_from_status(twin_clock)['steps'],
        'twin_misses': counters_from_status(twin_clock)['misses'],
        'twin_stale_answers': counters_from_status(twin_clock)['stale_answers'],
        'in_step': abs(t_state - t_pose) < 0.03,
        'tracking': {kv.key: float(kv.value) for kv in statuses[-1].values} if statuses else None,
        # along the push (received times): the commanded and the measured displacement along the push (+y)
        'commanded_y': np.array([(t, (base_rotation @ kin.forward(kin.q_home).rotation
                                      @ np.array([m.pose.position.x, m.pose.position.y, m.pose.position.z]))[1])
                                 for t, m in poses if t_push - 0.2 < t <= t_state]),
        'moved_y': np.array([(t, (flange_in_world(m) - start_position)[1])
                             for t, m in states if t_push < t <= t_state]),
        # the measured force (stamps, simulated time; sensor frame), for the failure messages
        'measured_force': np.array([(stamp_s(m), *force(m)) for m in wrenches
                                    if stamp_s(m) >= t_push - 0.2]).reshape(-1, 4),   # (0, 4) if none came
        'outputs': outputs,
    }


def test_pushed_mockup_yields_like_the_simulated_client(ros, free_udp_port):
    # On the twin's simulated clock a busy machine only slows the run down: one attempt, and every step
    # answered (the twin took none without the table's command: no barrier miss). The rates this test
    # received are reported: in a fresh-clone suite run its own readers lost 14 % of the push's messages
    # (214 of 250 a second) while the twin missed nothing.
    run = run_push(ros, free_udp_port)
    info = {k: run[k] for k in ('pose_rate', 'state_rate', 'in_step', 'tracking', 'twin_steps', 'twin_misses',
                                'twin_stale_answers')}
    assert run['twin_steps'] > 0 and not any(run['twin_misses'].values()) and run['in_step'] \
        and run['tracking'] is not None, info
    print(f"received during the push: {run['pose_rate']:.0f} pose commands and {run['state_rate']:.0f} joint states a "
          f"second of simulated time (250 sent); the twin: {run['twin_steps']} steps, misses {run['twin_misses']}, "
          f"commands for an earlier step {run['twin_stale_answers']}")
    moved, commanded = run['moved'], run['commanded']
    elapsed = run['t_state'] - run['onset']   # from the push's first measured sample in the lab
    print(f"the push met the mock-up {run['onset'] - (run['t_state'] - run['elapsed']):.3f} s after this test sent it")
    assert 0.5 * PUSH_S < elapsed <= run['elapsed'] + 0.01, (run['onset'], run['elapsed'])
    free_body = PUSH_N * elapsed ** 2 / (2 * MASS_KG)
    print(f'moved {moved} m (commanded {commanded} m) in {elapsed:.3f} s; a free {MASS_KG:.0f} kg body: '
          f'{free_body:.4f} m')
    # The table follows the simulated client: the flange repeats the commanded displacement
    # after the loop's delay: the table's single-point trajectory reaches each command one lead
    # (4 ms) after the twin takes it, so a ramp of commands is followed one lead late, plus the twin
    # servo's response delay (its 4 ms transport delay plus 1 / (2 pi 10 Hz),
    # hil_lab_twin.lockstep.response_delay: 20 ms): 24 ms. The twin takes for its step from t only the
    # command stamped t (command_stamps), so this delay is the same in every run, and a loop one step
    # (4 ms) late fails: the fit (on a 2 ms grid) must be within half a step. (Stepping on any command,
    # one in flight from the step before released a step in some runs: a fresh-clone suite run
    # measured 26 ms against the 19.9 ms then expected; 12 runs since, 8 idle and 4 beside two busy
    # loops: 24 ms.) The flange must then match the command within 1 mm at every sample.
    from hil_lab_twin.lockstep import response_delay
    from hil_lab_twin.scene import ServoConfig
    expected_lag_s = PERIOD_S + response_delay(ServoConfig())
    lag_s, residual_m = fit_lag(run['commanded_y'], run['moved_y'])
    misses = int(np.sum(np.abs(residual_m) > 1e-3))
    print(f'flange = command delayed by {lag_s * 1e3:.0f} ms: residual median {np.median(np.abs(residual_m)) * 1e3:.2f} mm, '
          f'max {np.abs(residual_m).max() * 1e3:.2f} mm, {misses} of {residual_m.size} samples over 1 mm; '
          f"motion table's median tracking error over the run {run['tracking']['tracking_median_position_m'] * 1e3:.2f} mm")
    assert abs(lag_s - expected_lag_s) <= PERIOD_S / 2 + 1e-9, (lag_s, expected_lag_s)
    assert residual_m.size > 0.5 * 250 * PUSH_S and misses == 0     # enough received samples for the fit
    assert run['tracking']['tracking_median_position_m'] < 1e-3
    assert np.linalg.norm(moved - commanded) < 1e-2
    # along the push, by about F t^2 / 2m
    # on failure: the push the sensor measured (its impulse) against the command's onset, and the admittance's log
    measured = run['measured_force']
    push = (measured[:, 0] >= run['onset']) & (measured[:, 0] <= run['t_state'])
    impulse = float(np.trapezoid(np.linalg.norm(measured[push, 1:], axis=1), measured[push, 0]))
    moving = run['commanded_y'][np.abs(run['commanded_y'][:, 1]) > 1e-4]
    assert moved[1] == pytest.approx(free_body, rel=0.1), (
        f"measured impulse {impulse:.1f} N s (push {PUSH_N * elapsed:.1f}); the command moved from "
        f"{(moving[0, 0] - run['onset']) if len(moving) else math.nan:.3f} s after the onset",
        run['outputs'][2][-2000:])   # measured 47 of 50 mm
    assert math.hypot(moved[0], moved[2]) < 0.1 * moved[1]
