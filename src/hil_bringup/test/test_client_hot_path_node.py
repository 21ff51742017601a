"""The fused client hot path over DDS: one robot command per F/T sample, pushed the right way, silent without
samples, its joints (taken at each sample, hil_common.polled) still fresh then, a malformed one refused by name;
with its joints and commands through rcl from compiled code (``compiled_io``, the default) and through rclpy."""

import os

import numpy as np
import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped, WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from hil_bringup.client_hot_path_node import sample_counts
from hil_bringup.facility import xyz_rpy
from hil_bringup.scenario import client_admittance_parameters, load_scenario
from hil_common.conversions import pose_from_msg
from hil_common.kernel_loads import late_kernels
from hil_common.ros_testing import spin_until, start_node, stop_process, test_node
from hil_motion_table.robot_models import ur10e_spec


@pytest.mark.parametrize('compiled_io', [True, False])
def test_hot_path_commands_once_per_sample_and_holds_without_samples(tmp_path, compiled_io):
    scenario = load_scenario('envisat_capture')
    params = {**client_admittance_parameters(scenario), 'robot': 'ur10e', 'command_frame': 'home',
              'pose_body_in_flange_xyz_rpy': xyz_rpy(scenario.client.pose_sensor_in_client.inverse()), 'state_decimation': 1,
              'realtime_priority': 50, 'compiled_io': compiled_io}
    path = tmp_path / 'hot_path.yaml'
    path.write_text(yaml.safe_dump({'/**': {'ros__parameters': params}}))
    proc = start_node('hil_bringup', 'client_hot_path_node', ros_args=('--params-file', str(path)))
    spec = ur10e_spec()
    try:
        with test_node('hot_path_probe') as (node, executor):
            commands, poses, statuses = [], [], []
            node.create_subscription(DiagnosticStatus, 'client/hot_path/status', statuses.append, 100)
            node.create_subscription(Float64MultiArray, 'client/forward_position_controller/commands',
                                     lambda m: commands.append(np.array(m.data)), 100)
            node.create_subscription(PoseStamped, 'client/table/pose_cmd', lambda m: poses.append(pose_from_msg(m.pose)), 100)
            pub_js = node.create_publisher(JointState, 'client/joint_states', 10)
            pub_ft = node.create_publisher(WrenchStamped, 'client/ft/wrench', 10)
            js = JointState(name=list(spec.joint_names), position=list(spec.q_home), velocity=[0.0] * 6)
            push = WrenchStamped()
            push.wrench.force.x = 2000.0                  # along the client x axis, through the CoM
            sent = {'n': 0, 'on': True}

            def tick():
                pub_js.publish(js)
                if sent['on']:
                    pub_ft.publish(push)
                    sent['n'] += 1
            node.create_timer(0.005, tick)
            assert spin_until(executor, lambda: len(commands) >= 100, 20.0), 'no robot commands'
            # a malformed joint state, as raw CDR, taken with the samples that follow (once they stop, the joints are
            # taken every joint_states_timeout_s / 2 only, and ten valid ones at 200 Hz could push it out of the
            # subscription's history of ten first)
            pub_js.publish(b'\x00\x01\x00\x00\x07')
            taken_by = len(commands) + 10
            assert spin_until(executor, lambda: len(commands) >= taken_by, 20.0), 'no robot commands after it'
            assert len(commands) <= sent['n']              # at most one command per sample
            sent['on'] = False
            first = len(statuses)
            spin_until(executor, lambda: False, 0.5)
            n = len(commands)
            spin_until(executor, lambda: False, 1.0)
            assert len(commands) == n                      # no samples, no commands: the robot holds
            # the joints keep coming and are taken without samples too: not judged stale (two 0.5 s statuses)
            said = [m.message for m in statuses[first:]]
            assert len(said) >= 2 and not any('stale' in m for m in said), said
            # Pushed along +x: the client CoM moved along +x of the nominal frame, not sideways.
            p = poses[-1].translation
            assert p[0] > 0.0 and abs(p[1]) < 1e-3 * p[0] + 1e-12
            assert np.all(np.isfinite(commands[-1])) and commands[-1].shape == (6,)
            assert np.linalg.norm(commands[-1] - np.array(spec.q_home)) > 0.0
        alive = proc.poll() is None
        policies = {os.sched_getscheduler(int(tid)) for tid in os.listdir(f'/proc/{proc.pid}/task')}
    finally:
        out = stop_process(proc)
    assert alive, out
    assert not late_kernels(out), late_kernels(out)        # none loaded in a callback (hil_common.kernel_loads)
    assert 'malformed joint state dropped (' in out, out[-2000:]
    # most samples ran in the compiled call on the loop's state (compiled_samples, the default), and with compiled_io
    # in the compiled loop's thread (sample_thread, the default; hil_bringup.client_sample_loop)
    counts = sample_counts(out)
    assert counts is not None, out[-2000:]
    samples, compiled, threaded, _, _ = counts
    assert compiled > 0.5 * samples > 0 and (threaded > 0.5 * samples) == compiled_io, counts
    # realtime_priority: every thread at SCHED_FIFO, or (without the permission) a warning.
    if 'refused' in out:
        assert 'SCHED_FIFO priority 50 refused' in out and policies == {os.SCHED_OTHER}
    else:
        assert 'real-time: SCHED_FIFO priority 50' in out and policies == {os.SCHED_FIFO}, (policies, out[-500:])
