"""Seed 001 with the MuJoCo lab twin in the loop (issue 7): the slave is the twin's KR 120, its
wrist F/T read over the sensor model and tared, gripping the mock-up on the UR10e payload table.

Prints our figures next to the seed's and the ideal lockstep's (``pytest -s``). Asserts use the
issue's tolerances and independent physics (momentum = integral of the measured force, the
twin's ground-truth grip wrench, Newton's third law), never our own outputs.
"""

import mujoco
import numpy as np
import pytest

from hil_bringup.runners.teleop_experiments import HILS2_PULLS, STEP_START_S, X, hils2_agreement, hils2_operator
from hil_bringup.runners.teleop_twin import run_teleop_twin, twin_config_for
from hil_lab_twin.twin import LabTwin
from hil_motion_table.kinematics_helpers import make_kinematics
from hil_teleop.config import TeleopConfig
from hil_teleop.master import ScriptedOperator
from hil_teleop.slave_measurement import MeasuredSlave

V_REF = 0.01


def report(title, rows):
    print(f'\n[seed 001, lab twin] {title}')
    for name, ours, seed in rows:
        print(f'    {name:<50s} twin {ours:>12s}   {seed}')


def step_operator(config, end_s):
    return ScriptedOperator.velocity_steps([(STEP_START_S, end_s, V_REF * X)], config.gains.k_s, config.gains.g)


def test_measured_slave_is_the_twins_grip_frame_and_velocity():
    """FK of the measured joints (Pinocchio, the motion table's URDF) against MuJoCo's own site pose and velocity."""
    twin = LabTwin(twin_config_for(TeleopConfig()))
    kin = make_kinematics('kr120r2500pro')
    q0 = twin.joint_state('slave').positions
    slave = MeasuredSlave.aligned_at(kin, q0, (0.0, 0.0, 0.04))
    start = slave.measure(q0, np.zeros(6))
    np.testing.assert_allclose(start.x_s[3:], 0.0, atol=1e-12)            # axes parallel to the base at the start
    # move the robot: a joint command away from the start, sample while it moves
    twin.command_positions('slave', q0 + np.array([0.05, -0.04, 0.03, 0.1, -0.05, 0.08]))
    twin.step(60)
    state = twin.joint_state('slave')
    m = slave.measure(state.positions, state.velocities)
    site = mujoco.mj_name2id(twin.model, mujoco.mjtObj.mjOBJ_SITE, 'slave_ft_site')
    mujoco.mj_forward(twin.model, twin.data)                                # site pose/velocity of this qpos, qvel
    truth = twin.site_pose_in_world('slave_ft_site')                        # slave base = world
    np.testing.assert_allclose(m.pose_ee_in_base.translation, truth.translation, atol=1e-9)
    np.testing.assert_allclose(m.pose_ee_in_base.rotation, truth.rotation @ slave.pose_ee_in_flange.rotation, atol=1e-9)
    vel = np.zeros(6)
    mujoco.mj_objectVelocity(twin.model, twin.data, mujoco.mjtObj.mjOBJ_SITE, site, vel, 0)   # [omega; v], world
    assert np.linalg.norm(vel[3:]) > 1e-2                                   # it really moves
    np.testing.assert_allclose(m.v_s, np.concatenate((vel[3:], vel[:3])), atol=1e-9)


@pytest.fixture(scope='module')
def item1():
    config = TeleopConfig(payload_mass_kg=3000.0)
    return config, run_teleop_twin(config, step_operator(config, 30.0), 25.0)


def test_item1_twin_3000kg_step_converges_and_the_acceleration_impulse_is_m_v(item1):
    config, run = item1
    i0 = int(round(STEP_START_S / config.dt))
    v_s = run.v_s[:, 0]
    bad = np.nonzero(np.abs(v_s - V_REF) > 0.01 * V_REF)[0]
    bad = bad[bad >= i0]
    i_conv = (bad[-1] + 1) if bad.size else i0
    assert i_conv < len(v_s) - int(2.0 / config.dt), 'v_s (measured) did not converge to v_s,r'
    impulse = float(np.sum(run.f_s[i0:i_conv, 0]) * config.dt)
    # the payload in the loop: its momentum is the integral of what its own F/T sensor measured
    # (body z axis of the mock-up = world -x; the payload barely rotates)
    p_end = run.payload_momentum_end
    assert p_end[2] == pytest.approx(np.sum(run.f_payload[:, 2]) * config.dt, rel=1e-6)
    report('item 1: 3000 kg, step v_s,r = 0.01 m/s, no delay', [
        ('integral of f_s over the acceleration phase [Ns]', f'{impulse:.2f}', 'ideal 29.7, seed 28.43 (theory 30)'),
        ('acceleration phase (to 1 %) [s]', f'{(i_conv - i0) * config.dt:.1f}', 'ideal 12.9, seed 9.5'),
        ('payload momentum at the end [Ns]', f'{-p_end[2]:.2f}', 'm v_s,r = 30'),
        ('final v_s (measured) [m/s]', f'{v_s[-1]:.5f}', '0.01'),
        ('max slave tracking error [mm]', f'{1e3 * run.tracking_error_m.max():.2f}', ''),
    ])
    assert impulse == pytest.approx(config.payload_mass_kg * V_REF, rel=0.05)
    assert -p_end[2] == pytest.approx(config.payload_mass_kg * V_REF, rel=0.02)


def test_item1_twin_both_sensors_measure_the_grip(item1):
    """Newton's third law through the twin: the wrist sensor (f_s, on the payload) and the payload sensor
    both read the twin's ground-truth grip wrench, up to sensor noise and the tools' inertia."""
    config, run = item1
    grip_x = run.f_grip[:, 0]
    assert grip_x.max() > 5.0
    assert np.sqrt(np.mean((run.f_s[:, 0] - grip_x) ** 2)) < 0.15             # noise 0.05 N + 0.1 kg tool
    assert np.sqrt(np.mean((-run.f_payload[:, 2] - grip_x) ** 2)) < 0.3        # 5.7 kg mock-up, 0.27 m lever


def test_item3_twin_4500kg_delayed_virtual_arm_predicts_the_slave():
    config = TeleopConfig(payload_mass_kg=4500.0, delay_s=5.0)
    run = run_teleop_twin(config, hils2_operator(config.gains), HILS2_PULLS[-1][1] + config.delay_s + 13.0)
    a = hils2_agreement(run)
    windows, mean_s, mean_vir = a.pull_mean_forces_n, a.mean_abs_force_slave_n, a.mean_abs_force_virtual_n
    report('item 3: 4500 kg, 5 s one-way delay, scripted operator', [
        ('max |x_vir(t-5 s) - x_s(t)| along x [mm]', f'{1e3 * a.max_position_error_m:.2f}', 'ideal 1.16, seed 2'),
        ('mean |f_s,x| / mean |f_vir,x| [N]', f'{mean_s:.2f}/{mean_vir:.2f}', 'means agree'),
        ('peak |f_s,x| [N]', f'{np.abs(run.f_s[:, 0]).max():.2f}', 'seed ~28'),
        ('payload displacement at the end [m]', f'{run.x_payload[-1, 0] - run.x_payload[0, 0]:.4f}',
         'pulls: 0.40 (0.3 + 0.2 - 0.1)'),
    ] + [(f'mean f_x over pull at {s:.0f} s: slave / virtual [N]', f'{a:.2f}/{b:.2f}', '') for s, a, b in windows])
    assert a.max_position_error_m <= 0.002
    assert mean_vir == pytest.approx(mean_s, rel=0.10)
    for _, a, b in windows:
        assert b == pytest.approx(a, rel=0.10)
    # the payload (ground truth in the twin) ends where the virtual payload predicted, 5 s earlier
    assert run.x_payload[-1, 0] - run.x_payload[0, 0] == pytest.approx(run.x_t_virtual[-1, 0] - run.x_t_virtual[0, 0], abs=2e-3)


def test_a_blocked_slave_robot_shows_up_in_x_s():
    """From 3 s the slave robot's joint commands are withheld (a robot that does not move): x_s, measured
    by forward kinematics, stops, while the command integrated from v_s,c would have gone on."""
    config = TeleopConfig(payload_mass_kg=500.0)
    block_s = 3.0
    run = run_teleop_twin(config, step_operator(config, 30.0), 5.0, slave_blocked=lambda t: t >= block_s)
    after = run.t >= block_s + 0.1                    # the commands already sent (servo delay, lag) have arrived
    x_s = run.x_s[after, 0]
    commanded = np.sum(run.v_s_c[after, 0]) * config.dt
    report('x_s from joint states: slave robot blocked at 3 s', [
        ('x_s motion after blocking [mm]', f'{1e3 * (x_s[-1] - x_s[0]):.3f}', ''),
        ('integral of v_s,c after blocking [mm]', f'{1e3 * commanded:.2f}', ''),
    ])
    assert run.x_s[run.t < block_s, 0][-1] - run.x_s[0, 0] > 5e-3    # it was moving before
    assert abs(x_s[-1] - x_s[0]) < 5e-5
    assert commanded > 5e-3                                           # Eq. (3) keeps asking for motion
    assert np.abs(run.v_s[after, 0]).max() < 1e-3
