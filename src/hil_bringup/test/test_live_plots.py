"""hil_bringup.live_plots against a small recorded live run made here with known motions (no live graph).

The bag holds what the live graph records, written with :class:`hil_bringup.bag.BagWriter` from
messages serialised by the rosbags typestore: the client tumbling with a constant body twist,
the servicer base moving relative to it with a constant relative body twist ``V_rel`` from the
OBSW's synchronisation set point ``g_bt*``, the arm's joints placing the tool on the grasp
target at t = 0. Closed forms: the relative twist is ``V_rel``, the OBSW's base error
``log6(g_bt*^-1 g_tb) = t V_rel``, its manipulator error ``Ad_{T^-1} (t V_rel)`` with ``T`` the
target in the base frame. The servicer's states are stamped between the client's (the reader
interpolates them), and the stamps are the twin's time from ``start_s``; the OBSW's torques carry
no stamp and are logged on a wall clock running at a fifth of the twin's.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pinocchio as pin
import pytest
from rosbags.typesys import Stores, get_typestore

from hil_bringup.bag import BagWriter
from hil_bringup.graphs import NodeSpec
from hil_bringup.live_plots import load_obsw, plot_live_capture, read_live_run
from hil_bringup.scenario import load_scenario, obsw_parameters

START_S = 100.0                      # the twin's time at the run's t = 0
WALL0_NS = 1_795_000_000_000_000_000
RTF = 0.2                            # wall clock: 5 s per simulated second
TWIST_CLIENT_BODY = np.array([0.02, 0.0, 0.01, 0.0, np.radians(-2.5), 0.0])
TWIST_BASE_REL_CLIENT = np.array([2e-3, -1e-3, 5e-4, 0.01, -0.02, 0.005])
PHASES = {'sync': 0.002, 'approach': 0.5, 'grasp': 1.2, 'post_grasp': 1.6}
DURATION_S = 2.0

TS = get_typestore(Stores.ROS2_JAZZY)
T = TS.types


def _log_ns(t_run: float, order: int) -> int:
    return WALL0_NS + int(round(t_run / RTF * 1e9)) + 1000 * order


def _header(t_run: float, frame: str = ''):
    stamp = START_S + t_run
    sec = int(np.floor(stamp))
    return T['std_msgs/msg/Header'](stamp=T['builtin_interfaces/msg/Time'](sec=sec, nanosec=int(round((stamp - sec) * 1e9))),
                                    frame_id=frame)


def _vec(v):
    return T['geometry_msgs/msg/Vector3'](x=float(v[0]), y=float(v[1]), z=float(v[2]))


def _odometry(t_run, pose: pin.SE3, twist):
    xyzq = pin.SE3ToXYZQUAT(pose)
    p = T['geometry_msgs/msg/Pose'](position=T['geometry_msgs/msg/Point'](x=xyzq[0], y=xyzq[1], z=xyzq[2]),
                                    orientation=T['geometry_msgs/msg/Quaternion'](x=xyzq[3], y=xyzq[4], z=xyzq[5], w=xyzq[6]))
    tw = T['geometry_msgs/msg/Twist'](linear=_vec(twist[:3]), angular=_vec(twist[3:]))
    return T['nav_msgs/msg/Odometry'](
        header=_header(t_run, 'orbit'), child_frame_id='body',
        pose=T['geometry_msgs/msg/PoseWithCovariance'](pose=p, covariance=np.zeros(36)),
        twist=T['geometry_msgs/msg/TwistWithCovariance'](twist=tw, covariance=np.zeros(36)))


def _wrench(t_run, w, frame='sensor'):
    return T['geometry_msgs/msg/WrenchStamped'](header=_header(t_run, frame), wrench=T['geometry_msgs/msg/Wrench'](
        force=_vec(w[:3]), torque=_vec(w[3:])))


def _array(values):
    return T['std_msgs/msg/Float64MultiArray'](layout=T['std_msgs/msg/MultiArrayLayout'](dim=[], data_offset=0),
                                              data=np.asarray(values, dtype=float))


@pytest.fixture(scope='module')
def live_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp('live_run')
    scenario = load_scenario('envisat_capture')
    params = folder / 'live_nodes' / 'params'
    params.mkdir(parents=True)
    spec = NodeSpec('hil_admittance', 'obsw_controller_node', 'obsw_controller', parameters=obsw_parameters(scenario))
    (params / 'obsw_controller.yaml').write_text(spec.params_yaml())
    (folder / 'live_nodes' / 'live_summary.json').write_text(json.dumps({
        'phases': [{'t_s': t, 'phase': name} for name, t in PHASES.items()], 'lab_clock': {'simulated': True, 'start_s': START_S}}))

    controller, joint_names = load_obsw(folder)
    g_bt = controller.pose_base_in_client_desired
    pose_target_in_base = g_bt.actInv(controller.pose_target_in_client)
    q_star = controller.joint_angles_for_tool(pose_target_in_base, controller.q_hold)
    residual = pin.log6(controller.tool_kinematics(pin.SE3.Identity(), q_star)[0].actInv(pose_target_in_base)).vector
    assert np.linalg.norm(residual) < 1e-9           # the arm holds the tool on the target

    g_t0 = pin.SE3(pin.rpy.rpyToMatrix(0.1, -0.2, 0.3), np.array([1.0, -2.0, 0.5]))

    def client(t):
        return g_t0 * pin.exp6(pin.Motion(t * TWIST_CLIENT_BODY))

    def base(t):                                      # g_b = g_t g_bt* exp(t V_rel)
        rel = g_bt * pin.exp6(pin.Motion(t * TWIST_BASE_REL_CLIENT))
        return client(t) * rel, rel.actInv(pin.Motion(TWIST_CLIENT_BODY)).vector + TWIST_BASE_REL_CLIENT

    bag = BagWriter(folder / 'live', fsync=False)
    topics = {}
    for name, msgtype in (('/client/state', 'nav_msgs/msg/Odometry'), ('/servicer/state', 'nav_msgs/msg/Odometry'),
                          ('/servicer/base_wrench_cmd', 'geometry_msgs/msg/WrenchStamped'),
                          ('/servicer_arm/torque_cmd', 'std_msgs/msg/Float64MultiArray'),
                          ('/client/ft/wrench', 'geometry_msgs/msg/WrenchStamped'),
                          ('/servicer/ft/wrench', 'geometry_msgs/msg/WrenchStamped'),
                          ('/servicer_arm/joint_states', 'sensor_msgs/msg/JointState'),
                          ('/obsw/phase', 'std_msgs/msg/String'),
                          ('/servicer/passivity', 'std_msgs/msg/Float64MultiArray'),
                          ('/client/passivity', 'std_msgs/msg/Float64MultiArray')):
        topics[name] = (bag.add_topic(name, msgtype, TS.generate_msgdef(msgtype, ros_version=2)[0]), msgtype)

    def write(name, t_run, order, msg):
        topic, msgtype = topics[name]
        bag.write(topic, _log_ns(t_run, order), bytes(TS.serialize_cdr(msg, msgtype)))

    for k in range(int(DURATION_S / 0.02) + 1):      # client admittance: 50 Hz
        t = 0.02 * k
        write('/client/state', t, 0, _odometry(t, client(t), TWIST_CLIENT_BODY))
    for k in range(int(DURATION_S / 0.004)):          # servicer, arm, OBSW, sensors: 250 Hz, 1 ms after the client
        t = 0.001 + 0.004 * k
        g_b, v_b = base(t)
        write('/servicer/state', t, 1, _odometry(t, g_b, v_b))
        write('/servicer/passivity', t, 2, _array([-1e-3 * t, 0.0, 0.0, 2e-4 * t, 0.0]))
        write('/servicer_arm/joint_states', t, 3, T['sensor_msgs/msg/JointState'](
            header=_header(t), name=joint_names, position=q_star, velocity=np.zeros(len(q_star)), effort=np.zeros(len(q_star))))
        for name, t_phase in PHASES.items():     # the OBSW's phase at the step its time falls in (sync: the first)
            if k == 0 and name == 'sync' or t - 0.004 < t_phase <= t and name != 'sync':
                write('/obsw/phase', t, 4, T['std_msgs/msg/String'](data=name))
        write('/servicer/base_wrench_cmd', t, 5, _wrench(t, [np.sin(t), 0.0, -1.0, 0.0, 0.0, 0.0], 'servicer_base_com'))
        write('/servicer_arm/torque_cmd', t, 6, _array(t * np.arange(1.0, 8.0)))   # no stamp: tau_j = (j+1) t
        force = 10.0 * max(0.0, t - PHASES['grasp'])
        write('/client/ft/wrench', t, 7, _wrench(t, [force, 0.0, 0.0, 0.0, 0.0, 0.5 * force]))
        write('/servicer/ft/wrench', t, 8, _wrench(t, [0.0, -force, 0.0, 0.0, 0.0, 0.0]))
    bag.close()
    return folder, pose_target_in_base


@pytest.fixture(scope='module')
def live_data(live_run):
    return read_live_run(live_run[0])


def test_the_reader_returns_the_recorded_motion_on_the_run_clock(live_run, live_data):
    folder, pose_target_in_base = live_run
    d = live_data
    assert d['start_s'] == START_S and d['phase_times_s'] == PHASES
    # each phase by the OBSW's stamp: that of its base wrench command of the step it was published in (sync: the
    # first; the others the first 250 Hz step at or after their time), not when the observer got it
    steps = {name: 0.001 + (0.0 if name == 'sync' else 0.004 * math.ceil((t - 0.001) / 0.004 - 1e-9))
             for name, t in PHASES.items()}
    assert d['phase_stamps_s'].keys() == PHASES.keys()
    for name, t in steps.items():
        assert d['phase_stamps_s'][name] == pytest.approx(t, abs=1e-9), (name, d['phase_stamps_s'])
    t = d['t_state']                                  # the client's stamps inside the servicer's span
    assert t[0] == pytest.approx(0.02) and t[-1] == pytest.approx(DURATION_S - 0.02) and len(t) == 99
    np.testing.assert_allclose(d['twist_base_rel_client'], np.tile(TWIST_BASE_REL_CLIENT, (len(t), 1)), atol=1e-9)
    np.testing.assert_allclose(d['rate_client_body'], np.tile(TWIST_CLIENT_BODY[3:], (len(t), 1)), atol=1e-12)
    # the servicer's states interpolated 1 ms off their 4 ms samples (geodesic): 1e-8 here, bound 1e-7
    np.testing.assert_allclose(d['base_error'], np.outer(t, TWIST_BASE_REL_CLIENT), atol=1e-7)
    tool_error = np.array([pose_target_in_base.actInv(pin.Motion(tk * TWIST_BASE_REL_CLIENT)).vector for tk in t])
    np.testing.assert_allclose(d['tool_error'], tool_error, atol=1e-7)
    # Unstamped torques on the twin's clock through their companion (the OBSW's base wrench command).
    np.testing.assert_allclose(d['t_tau'], d['t_thrust'], atol=1e-9)
    np.testing.assert_allclose(d['tau_arm_cmd'], np.outer(d['t_tau'], np.arange(1.0, 8.0)), atol=1e-9)
    np.testing.assert_allclose(d['wrench_base_com_cmd'][:, 0], np.sin(d['t_thrust']), atol=1e-9)
    np.testing.assert_allclose(d['passivity_servicer'][:, 0], -1e-3 * d['t_passivity_servicer'], atol=1e-12)
    assert d['wrench_client_ft_in_sensor'][-1, 0] == pytest.approx(10.0 * (d['t_ft_client'][-1] - PHASES['grasp']))
    assert 'passivity_client' not in d and any(n.startswith('client/passivity') for n in d['notes'])


def test_without_start_s_the_first_phase_places_t0(live_run):
    folder, _ = live_run
    path = folder / 'live_nodes' / 'live_summary.json'
    summary = json.loads(path.read_text())
    try:
        path.write_text(json.dumps({'phases': summary['phases']}))
        d = read_live_run(folder)
    finally:
        path.write_text(json.dumps(summary))
    assert d['start_s'] == pytest.approx(START_S + 0.001 - PHASES['sync'])   # sync seen with the first command (t = 1 ms)
    assert any('first OBSW phase' in n for n in d['notes'])


def test_the_figures_are_written(live_run, live_data, tmp_path):
    folder, _ = live_run
    paths = plot_live_capture(folder, tmp_path / 'plots', live_data)
    assert [p.name for p in paths] == ['live_fig12_errors_and_actuation.png', 'live_fig13_relative_velocity.png',
                                       'live_contact_wrenches.png', 'live_passivity.png']
    for p in paths:
        assert p.is_file() and p.stat().st_size > 20_000 and p.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
