"""Issue 15 item 2: the fused client hot path at parity with the separate nodes, through the real node on DDS.

* wrenches at ~250 Hz with ``rate_hz`` 50: Eq. (11) runs at real time (its simulated time,
  from the status, advances like the wall clock) and the flange, pushed beyond 0.5 m/s and then
  brought back to rest (pushed back, then damped from the client's state), stays within 0.5 m/s (one
  ``1 / rate_hz`` step per sample would run the client 5x faster than real time);
* ``joint_states`` stop: the node holds (the same command), its status says why, and it
  recovers on its own once they are fresh again;
* a 1e9 N wrench: a latched fault, finite commands, the status says so, a reset is refused
  while the wrench persists and clears the fault once it is gone; a wrench in another frame
  is refused and counted.
"""

import time

import numpy as np
import yaml
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header
from std_srvs.srv import Trigger

from hil_bringup.scenario import client_admittance_parameters, load_scenario
from hil_common.conversions import xyz_rpy_to_pose
from hil_common.ros_testing import spin_until, start_node, stop_process, test_node
from hil_dynamics.se3 import transform_wrench
from hil_motion_table.kinematics_helpers import make_kinematics

V_MAX = 0.5
# the probe's damping while it brings the client to rest: 7828 kg / 0.3 s, at most 8000 N (stable with the 50 Hz
# node's and the probe's delays, tens of ms, far below 0.3 s)
DAMPING_N_S_PER_M, DAMPING_MAX_N = 7828.0 / 0.3, 8000.0


def start_hot_path(tmp_path, **overrides):
    """The real ``client_hot_path_node`` under ``/hps``: the scenario's client at 50 Hz on a UR10e (home frame)."""
    params = {**client_admittance_parameters(load_scenario('envisat_capture')), 'rate_hz': 50.0, 'robot': 'ur10e',
              'command_frame': 'home', **overrides}
    path = tmp_path / 'hot_path.yaml'
    path.write_text(yaml.safe_dump({'/**': {'ros__parameters': params}}))
    return start_node('hil_bringup', 'client_hot_path_node', ros_args=('--params-file', str(path), '-r', '__ns:=/hps'))


def test_hot_path_real_time_stale_joints_and_wrench_limit(tmp_path):
    proc = start_hot_path(tmp_path, max_linear_speed=V_MAX, joint_states_timeout_s=0.2, joint_states_recover_s=0.3,
                          max_force_n=5.0e4, state_decimation=1, trace_sample_stamps=True)
    kin = make_kinematics('ur10e')
    try:
        with test_node('hot_path_safety_probe') as (node, executor):
            commands, statuses, status_at = [], [], []

            def on_status(m):
                statuses.append(m)
                status_at.append(time.monotonic())
            node.create_subscription(Float64MultiArray, '/hps/client/forward_position_controller/commands',
                                     lambda m: commands.append((time.monotonic(), np.array(m.data))), 1000)
            node.create_subscription(DiagnosticStatus, '/hps/client/hot_path/status', on_status, 100)
            traces = []         # (received, the sample's send time), on this machine's monotonic clock
            node.create_subscription(Header, '/hps/client/hot_path/trace',
                                     lambda m: traces.append((time.monotonic(), m.stamp.sec + m.stamp.nanosec * 1e-9)),
                                     1000)
            pub_js = node.create_publisher(JointState, '/hps/client/joint_states', 10)
            pub_ft = node.create_publisher(WrenchStamped, '/hps/client/ft/wrench', 10)
            reset = node.create_client(Trigger, '/hps/client/hot_path/reset')
            io = {'joints': True, 'force': 8000.0, 'frame': 'ft_sensor', 'damp': False}
            # the client's linear velocity of its centre of mass, in its body frame (client/state's twist)
            velocity_com_in_client = []
            node.create_subscription(Odometry, '/hps/client/state', lambda m: velocity_com_in_client.append(
                np.array([m.twist.twist.linear.x, m.twist.twist.linear.y, m.twist.twist.linear.z])), 1000)
            # the client's centre-of-mass frame in the sensor's (seed 004 §III-A's pose_sensor_in_client, inverted):
            # a wrench about the centre of mass as the sensor measures it
            pose_client_in_sensor = xyz_rpy_to_pose(
                client_admittance_parameters(load_scenario('envisat_capture'))['pose_sensor_in_client_xyz_rpy']).inverse()

            def robot():       # the robot: measured = last command
                if io['joints']:
                    q = commands[-1][1] if commands else kin.q_home
                    pub_js.publish(JointState(name=list(kin.joint_names), position=[float(v) for v in q]))

            def sensor():      # ~250 Hz, 5x rate_hz
                msg = WrenchStamped()
                msg.header.frame_id = io['frame']
                msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.monotonic_ns(), 1_000_000_000)
                if io['damp'] and velocity_com_in_client:      # a force through the centre of mass against its
                    force = -DAMPING_N_S_PER_M * velocity_com_in_client[-1]      # velocity: no moment about it
                    force *= min(1.0, DAMPING_MAX_N / max(np.linalg.norm(force), 1e-300))
                    wrench = transform_wrench(pose_client_in_sensor, np.r_[force, 0.0, 0.0, 0.0])
                else:                                           # the pushes: along the sensor's x axis
                    wrench = np.array([io['force'], 0.0, 0.0, 0.0, 0.0, 0.0])
                (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z,
                 msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z) = (float(v) for v in wrench)
                pub_ft.publish(msg)

            def call_reset():
                future = reset.call_async(Trigger.Request())
                assert spin_until(executor, future.done, 10.0)
                return future.result()

            def since(t0):
                return [(t, q) for t, q in commands if t >= t0]

            def wait(seconds):
                spin_until(executor, lambda: False, seconds)

            node.create_timer(0.01, robot)
            node.create_timer(0.004, sensor)
            assert spin_until(executor, lambda: reset.service_is_ready() and len(commands) > 5, 30.0), proc.poll()

            def sim_time(k):
                return float({kv.key: kv.value for kv in statuses[k].values}['sim_time_s'])

            # 1. real time: 8000 N on 7828 kg for 0.85 s (0.87 m/s, beyond V_MAX), then -8000 N for 0.85 s, then
            #    the probe damps what is left until the client is at rest, 0.74 m on (a client left drifting reached
            #    the UR10e's singular poses after step 2 resumed. -8000 N for as long as +8000 N does not stop it:
            #    the push is along the tumbling body's x axis, which turns by 4 degrees, leaving about 3 cm/s, and a
            #    busy machine's late samples make the two pushes unequal. Failed in CI with the table's fault
            #    'singular' instead of the recovery); the flange stays within V_MAX against real time
            t0 = time.monotonic()
            k0 = len(statuses)
            wait(0.85)
            io['force'] = -io['force']
            wait(0.85)
            k1 = len(statuses) - 1
            io['force'], io['damp'] = 0.0, True
            n0 = len(velocity_com_in_client)
            assert spin_until(executor, lambda: len(velocity_com_in_client) > n0 + 10 and max(
                np.linalg.norm(v) for v in velocity_com_in_client[-10:]) < 0.002, 10.0), velocity_com_in_client[-1]
            io['damp'] = False
            ratio = (sim_time(k1) - sim_time(k0)) / (status_at[k1] - status_at[k0])
            assert 0.8 < ratio < 1.2, ratio                          # simulated time runs with the wall clock
            run = since(t0)
            t = np.array([c[0] for c in run])
            flange = np.array([kin.forward(c[1]).translation for c in run])
            assert np.linalg.norm(flange[-1] - flange[0]) > 0.05           # it is being pushed
            # over every 0.3 s of commands (unclamped, the client covers about 0.24 m in its fastest 0.3 s; the
            # bound is 0.15 m). The node limits the speed on its own clock, between the sample's arrival and the
            # command's: a command received late (a busy machine: one came 20 ms late in a suite run) shortens the
            # window seen here by as much. So each window is widened by the latency of the samples whose commands
            # came within 50 ms of its first (sample sent -> its trace received, the trace sent right after the
            # command), and 2 mm for the command's and the trace's own delivery: a late sample loosens only the
            # windows it could shorten.
            received, latency = np.array([(r, r - sent) for r, sent in traces if r >= t0 - 0.1]).T
            assert latency.min() > 0.0, latency.min()
            seen_fast = False
            for i in range(len(run)):
                j = int(np.searchsorted(t, t[i] + 0.3))
                if j >= len(run):
                    break
                moved = np.linalg.norm(flange[j] - flange[i])
                near = np.abs(received - t[i]) <= 0.05
                late = latency[near].max() if near.any() else latency.max()
                assert moved <= V_MAX * (t[j] - t[i] + late) + 0.002, (i, moved, t[j] - t[i], late)
                seen_fast = seen_fast or moved > 0.8 * V_MAX * (t[j] - t[i])
            assert seen_fast                                                # the limit was reached, not just obeyed

            # 2. joint_states stop: hold (one command repeated), status ERROR naming them
            io['joints'] = False
            wait(0.5)
            t1 = time.monotonic()
            wait(1.0)
            held = since(t1)
            assert len(held) > 10 and all(np.array_equal(q, held[0][1]) for _, q in held)
            assert statuses[-1].level == DiagnosticStatus.ERROR and 'joint_states' in statuses[-1].message
            io['joints'] = True                                            # fresh again: recovers on its own
            assert spin_until(executor, lambda: statuses[-1].level == DiagnosticStatus.OK, 5.0), statuses[-1].message

            # 3. a wrench in another frame is refused and counted
            io['frame'] = 'servicer_ft_sensor'
            wait(0.5)
            io['frame'] = 'ft_sensor'
            # 4. 1e9 N: latched fault, finite held commands, status says so; reset refused while it persists
            io['force'] = 1.0e9
            assert spin_until(executor, lambda: 'wrench_limit' in statuses[-1].message, 5.0), statuses[-1].message
            assert statuses[-1].level == DiagnosticStatus.ERROR
            t2 = time.monotonic()
            wait(1.0)
            latched = since(t2)
            assert len(latched) > 10 and all(np.all(np.isfinite(q)) and np.array_equal(q, latched[0][1])
                                             for _, q in latched)
            values = {kv.key: kv.value for kv in statuses[-1].values}
            assert int(values['refused_frame']) > 10, values
            response = call_reset()
            assert not response.success and 'still refused' in response.message
            io['force'] = 0.0
            wait(0.2)
            response = call_reset()
            assert response.success, response.message
            assert spin_until(executor, lambda: statuses[-1].level == DiagnosticStatus.OK, 5.0), statuses[-1].message
        alive = proc.poll() is None
    finally:
        out = stop_process(proc)
    assert alive, out


def test_a_stalled_hot_path_node_holds_and_resumes_on_its_own(tmp_path):
    """The node's process stopped for 0.6 s (SIGSTOP, what a saturated machine does to it), beyond its
    ``overload_hold_late_s``: when it runs again it holds (``client/hot_path/status`` ERROR
    'overloaded, holding', one command repeated) and, after ``overload_recover_after_s`` of samples
    on time, commands again by itself."""
    from hil_common.ros_testing import STALL_THRESHOLDS, stall_node

    proc = start_hot_path(tmp_path, joint_states_timeout_s=2.0, overload_recover_after_s=1.0, **STALL_THRESHOLDS)
    kin = make_kinematics('ur10e')
    try:
        with test_node('hot_path_stall_probe') as (node, executor):
            commands, statuses = [], []
            node.create_subscription(Float64MultiArray, '/hps/client/forward_position_controller/commands',
                                     lambda m: commands.append(np.array(m.data)), 1000)
            node.create_subscription(DiagnosticStatus, '/hps/client/hot_path/status', lambda m: statuses.append(
                (int.from_bytes(m.level, 'little'), m.message, {kv.key: kv.value for kv in m.values})), 100)
            pub_js = node.create_publisher(JointState, '/hps/client/joint_states', 10)
            pub_ft = node.create_publisher(WrenchStamped, '/hps/client/ft/wrench', 10)

            def robot():
                q = commands[-1] if commands else kin.q_home
                pub_js.publish(JointState(name=list(kin.joint_names), position=[float(v) for v in q]))

            def sensor():
                msg = WrenchStamped()
                msg.header.frame_id = 'ft_sensor'
                msg.wrench.force.x = 500.0
                pub_ft.publish(msg)
            node.create_timer(0.01, robot)
            node.create_timer(0.004, sensor)
            assert spin_until(executor, lambda: len(commands) > 100 and statuses
                              and statuses[-1][2]['holding'] == 'false', 30.0), (proc.poll(), statuses[-1:])
            level, message, values = stall_node(proc, executor, statuses)
            assert 'overloaded, holding' in message, message
            assert level == 2 and values['holding'] == 'true' and int(values['holds']) >= 1, message
            n = len(commands)
            assert spin_until(executor, lambda: len(commands) > n + 10, 5.0)
            assert spin_until(executor, lambda: statuses[-1][2]['holding'] == 'false', 10.0), statuses[-1]
            n = len(commands)
            assert spin_until(executor, lambda: len(commands) > n + 20, 5.0)
            assert not np.array_equal(commands[-1], commands[n])      # pushed by 500 N: it moves again
        alive = proc.poll() is None
    finally:
        out = stop_process(proc)
    assert alive, out


def test_on_the_twins_clock_a_held_up_node_judges_its_joints_by_their_stamps(tmp_path):
    """On the twin's simulated clock the twin steps on its own before the client's first command. A hot path held up
    meanwhile (a busy start-up; here SIGSTOPped, twice, while a probe steps 0.3 s of simulated time on as the twin
    does: the joint state and the F/T sample of the step, stamped with its time, then ``/clock``) must judge the joint
    states queued for it by their stamps: no ``joint_states`` hold (by arrival each hold-up looked like 0.3 s without
    joints: 'recovering'; the live graph's start-up holds). Joint states that stop still hold."""
    from hil_common.ros_testing import FreeTwinClock, stall_while_the_twin_steps

    proc = start_hot_path(tmp_path, use_sim_time=True, joint_states_timeout_s=0.1)
    kin = make_kinematics('ur10e')
    try:
        with test_node('hot_path_sim_probe') as (node, executor):
            commands, statuses = [], []
            node.create_subscription(Float64MultiArray, '/hps/client/forward_position_controller/commands',
                                     lambda m: commands.append(np.array(m.data)), 1000)
            node.create_subscription(DiagnosticStatus, '/hps/client/hot_path/status', lambda m: statuses.append(
                m.message), 100)
            pub_js = node.create_publisher(JointState, '/hps/client/joint_states', 10)
            pub_ft = node.create_publisher(WrenchStamped, '/hps/client/ft/wrench', 10)
            twin, lab = FreeTwinClock(node, 0.004), {'joints': True}

            def step():
                stamp = twin.step()
                if lab['joints']:
                    q = commands[-1] if commands else kin.q_home
                    pub_js.publish(JointState(header=Header(stamp=stamp), name=list(kin.joint_names),
                                              position=[float(v) for v in q]))
                pub_ft.publish(WrenchStamped(header=Header(stamp=stamp, frame_id='ft_sensor')))
                twin.publish()

            def stale_since(n):
                return [m for m in statuses[n:] if 'joint_states' in m and ('stale' in m or 'recovering' in m)]

            node.create_timer(0.004, step)
            assert spin_until(executor, lambda: len(commands) > 50, 30.0), (proc.poll(), statuses[-1:])
            n_status = len(statuses)
            stall_while_the_twin_steps(proc, executor, twin, commands, 25)
            assert not stale_since(n_status), stale_since(n_status)
            lab['joints'] = False                       # lost feedback: held within the timeout
            assert spin_until(executor, lambda: stale_since(n_status), 5.0), statuses[-3:]
        alive = proc.poll() is None
    finally:
        out = stop_process(proc)
    assert alive, out
