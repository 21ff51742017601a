"""Pose streams tracked in the MuJoCo twin over real rclpy/DDS (loopback-only profile, own domain).

The twin node and two motion-table nodes run as their installed executables (where
launch_ros finds them), once for a pair of UR10e tables commanded through the forward
position controller and once for a pair of hexapods commanded through streamed
single-point joint trajectories. One table of each pair compensates the response delay
(predictor on the commanded trajectory, twist from finite differences); both run at once
in one twin, so both see the same machine load. The test publishes a 6-D sinusoidal pose
stream at 125 Hz and reads the tracking statistics the motion tables report (measured
versus commanded flange pose at the same time stamp).
"""

import math
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from hil_common.conversions import pose_to_msg, seconds_to_stamp
from hil_motion_table.kinematics_helpers import home_pose, make_kinematics, sinusoid_pose
from hil_motion_table.table import FAULTS
from hil_common.ros_testing import spin_until, start_node, stop_process


# 125 Hz streams: half the message load of RSI's 250 Hz keeps five Python processes real-time on a
# shared 2-core machine; the transport delay is still the 4 ms of RSI.
DELAY_S, BANDWIDTH_HZ, PERIOD_S = 0.004, 10.0, 0.008
# 6-D stream: u = a (1 - cos(2 pi f t)) about the home pose (starts at rest), linear first
AMPLITUDE = np.array([0.02, 0.015, 0.01, 0.03, 0.03, 0.04])
FREQUENCY = np.array([0.5, 0.4, 0.6, 0.5, 0.35, 0.45])
DURATION_S, SETTLE_S = 6.0, 1.0


def horizon():
    """Response delay of the twin's robots: transport delay + first-order lag 1/(2 pi f_c).

    (The joint PID tracks the filtered reference with its velocity fed forward, so it adds
    no lag of its own to first order.)"""
    return DELAY_S + 1.0 / (2 * math.pi * BANDWIDTH_HZ)


def run_stream(ros, tables):
    node, executor = ros
    entries = '[' + ','.join(f'"{ns}:{robot}"' for ns, (robot, _, _) in tables.items()) + ']'
    procs = [start_node('hil_lab_twin', 'lab_twin_node', f'tables:={entries}', f'delay_s:={DELAY_S}',
                        'publish_wrench:=false', f'servo_bandwidth_hz:={BANDWIDTH_HZ}', f'publish_rate_hz:={1 / PERIOD_S}')]
    for ns, (robot, output, h) in tables.items():
        procs.append(start_node('hil_motion_table', 'motion_table_node', f'robot:={robot}', f'output:={output}',
                                f'prediction_horizon_s:={h}', f'period_s:={PERIOD_S}', f'trajectory_lead_s:={PERIOD_S}',
                                'tracking_error_decimation:=25', 'joint_states_timeout_s:=1.0',
                                ros_args=('-r', f'__ns:=/{ns}')))
    seen = {ns: False for ns in tables}
    status = {ns: None for ns in tables}
    subs = []
    for ns in tables:
        subs.append(node.create_subscription(JointState, f'/{ns}/joint_states',
                                             lambda m, ns=ns: seen.__setitem__(ns, True), 10))
        subs.append(node.create_subscription(DiagnosticStatus, f'/{ns}/table/status',
                                             lambda m, ns=ns: status.__setitem__(ns, m), 10))
    resets = {ns: node.create_client(Trigger, f'/{ns}/table/reset_statistics') for ns in tables}
    pubs = {ns: node.create_publisher(PoseStamped, f'/{ns}/table/pose_cmd', 10) for ns in tables}
    centers = {ns: home_pose(make_kinematics(robot)) for ns, (robot, _, _) in tables.items()}
    up = False
    try:
        up = spin_until(executor, lambda: all(seen.values()) and all(
            node.count_subscribers(f'/{ns}/table/pose_cmd') for ns in tables), 30.0)
        if not up:
            return None
        spin_until(executor, lambda: False, 0.5)  # let the motion tables receive joint states
        t0 = time.time()

        def publish():
            now = time.time()
            t = now - t0
            for ns, pub_pose in pubs.items():
                pose, _ = sinusoid_pose(t, centers[ns], -AMPLITUDE, FREQUENCY, phase=np.full(6, math.pi / 2),
                                        offset=AMPLITUDE)
                msg = PoseStamped()
                seconds_to_stamp(now, msg.header.stamp)
                pose_to_msg(pose, msg.pose)
                pub_pose.publish(msg)

        timer = node.create_timer(PERIOD_S, publish)
        spin_until(executor, lambda: time.time() - t0 > SETTLE_S, SETTLE_S + 5)
        futures = [client.call_async(Trigger.Request()) for client in resets.values()]  # statistics after the settling
        assert spin_until(executor, lambda: all(f.done() for f in futures), 5.0)
        spin_until(executor, lambda: time.time() - t0 > DURATION_S, DURATION_S + 5)
        node.destroy_timer(timer)
        t_end = time.time()
        for ns in tables:
            status[ns] = None
        spin_until(executor, lambda: all(m is not None for m in status.values()), 3.0)  # published after the stream
    finally:
        outputs = [stop_process(p) for p in procs]
        assert up, ('nodes did not come up', seen, outputs)
        for s in subs:
            node.destroy_subscription(s)
        for client in resets.values():
            node.destroy_client(client)
        for pub_pose in pubs.values():
            node.destroy_publisher(pub_pose)
    result = {}
    for ns, msg in status.items():
        assert msg is not None, (ns, outputs)
        values = {kv.key: float(kv.value) for kv in msg.values}
        values['expected_samples'] = (t_end - t0 - SETTLE_S) / PERIOD_S
        result[ns] = {'rms_mm': 1e3 * values['tracking_rms_position_m'], 'max_mm': 1e3 * values['tracking_max_position_m'],
                      'rms_mrad': 1e3 * values['tracking_rms_angle_rad'], 'max_mrad': 1e3 * values['tracking_max_angle_rad'],
                      'median_mm': 1e3 * values['tracking_median_position_m'],
                      'median_mrad': 1e3 * values['tracking_median_angle_rad'],
                      'n': int(values['tracking_samples']), 'status': msg, 'values': values}
    return result


@pytest.mark.parametrize('robot, output', [('ur10e', 'forward_position'), ('hexapod', 'joint_trajectory')])
def test_sinusoidal_pose_stream_is_tracked_and_delay_compensation_reduces_the_error(ros, robot, output):
    # A run counts only if the nodes kept up with the 125 Hz streams (the twin's joint states
    # reached the motion tables): other processes on a busy machine can starve them, which
    # measures the machine, not the stack. Up to three attempts.
    for attempt in range(3):
        result = run_stream(ros, {'plain': (robot, output, 0.0), 'compensated': (robot, output, horizon())})
        kept_up = all(r['n'] >= 0.9 * r['values']['expected_samples'] for r in result.values())
        if kept_up:
            break
        print(f'attempt {attempt + 1}: starved run ({[r["n"] for r in result.values()]} samples), repeating')
    assert kept_up, 'the machine was too busy for a real-time run in three attempts'
    for ns, res in result.items():
        print(f"{robot:7s} {ns:11s} position RMS {res['rms_mm']:.3f} mm max {res['max_mm']:.3f} mm "
              f"median {res['median_mm']:.3f} mm, angle RMS {res['rms_mrad']:.3f} mrad max {res['max_mrad']:.3f} mrad "
              f"median {res['median_mrad']:.3f} mrad ({res['n']} samples), "
              f"status {res['status'].message!r}")
    # peak speed of the stream: |v| ~ 2 pi f a ~ 6 cm/s and 0.13 rad/s; a response delay of
    # ~25 ms alone gives errors of the order of 1.5 mm / 3 mrad
    for ns, res in result.items():
        assert res['status'].level != DiagnosticStatus.ERROR, res['status']  # never held
        assert all(res['values'][f] == 0 for f in FAULTS), res['values']
        # tracked: errors well below the motion (tens of mm and mrad), also on a loaded machine
        assert res['rms_mm'] < 20.0 and res['rms_mrad'] < 40.0
        assert res['median_mm'] < 5.0 and res['median_mrad'] < 10.0
    # the predictor removes most of the lag error; medians, because a loaded machine
    # (other processes starving these) adds bursts of error that hit either table at random
    assert result['compensated']['median_mm'] < 0.6 * result['plain']['median_mm']
    assert result['compensated']['median_mrad'] < 0.6 * result['plain']['median_mrad']
