"""The seed 003 docking mission in lockstep: CW approach, compensated impact, post-impact leg."""

import numpy as np
import pytest

from hil_common.fields import ScenarioError
from hil_docking.contact import equivalent_mass
from hil_docking.mission import APPROACH, CONTACT, POST_IMPACT, run_mission
from hil_docking.scenario import load_docking_scenario, scenario_path


@pytest.fixture(scope='module')
def scenario():
    return load_docking_scenario()


@pytest.fixture(scope='module')
def mission(scenario):
    return run_mission(scenario)


def test_mission_reaches_the_port_and_the_compensated_impact_has_the_orbital_restitution(scenario, mission):
    run = mission
    s = run.summary
    k_port = int(round(scenario.approach_duration_s / scenario.control_period_s))
    assert run.phase[k_port - 1] == APPROACH and CONTACT in run.phase and run.phase[-1] == POST_IMPACT
    # The approach leg ends at the docking point (CW two-impulse transfer, no force before contact).
    assert np.allclose(run.state_lvlh[k_port, 0:3], 0.0, atol=1e-12)
    assert s['closing_speed_in_m_s'] == pytest.approx(scenario.closing_speed_m_s, rel=1e-9)
    # The facility with the virtual force reproduces the orbital impact: restitution and duration
    # (the 1 ms sampling of the loop costs ~0.2 %).
    assert s['restitution'] == pytest.approx(s['restitution_orbital'], rel=5e-3)
    assert s['contact_duration_s'] == pytest.approx(s['contact_duration_orbital_s'], abs=3 * scenario.control_period_s)
    # Eq. (30): the impulse is m (1 + gamma) v_in for the relative motion, and splits as -J/m_C, +J/m_T.
    m = equivalent_mass(scenario.chaser_mass_kg, scenario.target_mass_kg)
    assert s['impulse_n_s'] == pytest.approx(m * (1 + s['restitution']) * s['closing_speed_in_m_s'], rel=1e-3)
    assert s['dv_chaser_m_s'] - s['dv_target_m_s'] == pytest.approx(-s['impulse_n_s'] / m, rel=1e-12)
    # The robot lags the simulation by the loop delay.
    n_d = scenario.delay_steps
    assert np.allclose(run.robot_position_lvlh[n_d + 100], run.state_lvlh[100, 0:3], atol=1e-15)
    # Post-impact leg: the chaser moves back out along the docking axis.
    assert run.state_lvlh[-1, 0:3] @ scenario.docking_axis_lvlh < -0.1


def test_uncompensated_facility_gives_the_wrong_restitution(scenario):
    s = run_mission(scenario, compensation='none').summary
    assert s['restitution'] > 1.1 * s['restitution_orbital']


def test_scenario_errors_name_the_field(tmp_path):
    text = scenario_path().read_text()
    bad = tmp_path / 'bad.yaml'
    bad.write_text(text.replace('compensation: pole', 'compensation: magic'))
    with pytest.raises(ScenarioError, match='facility.compensation'):
        load_docking_scenario(bad)
    bad.write_text(text.replace('loop_delay_s: 0.010', 'loop_delay_s: 0.0105'))
    with pytest.raises(ScenarioError, match='facility.loop_delay_s'):
        load_docking_scenario(bad)
    bad.write_text(text.replace('chaser_mass_kg: 100.0', 'chaser_mass_kg: -1.0'))
    with pytest.raises(ScenarioError, match='spacecraft.chaser_mass_kg'):
        load_docking_scenario(bad)


def test_demo_records_the_mission_to_a_readable_bag(scenario, mission, tmp_path):
    """The demo's recording (hil_bringup.recorder, MCAP) read back with rosbags: topics, counts and values."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    from hil_docking.arm import cisas_arm_spec, cisas_pin_model
    from hil_docking.cw import CWModel, two_impulse_transfer
    from hil_docking.demo import record_mcap
    from hil_docking.feedforward import cw_joint_reference, damped_kd, simulate_tracking
    from hil_motion_table.kinematics import SerialKinematics

    run = mission
    kin = SerialKinematics(cisas_arm_spec())
    cw = CWModel.at_altitude(scenario.altitude_m)
    transfer = two_impulse_transfer(cw, scenario.start_lvlh_m, np.zeros(3), scenario.approach_duration_s)
    ref = cw_joint_reference(kin, cw, transfer, scenario.dock_position_in_base_m,
                             kin.forward(kin.spec.q_home).rotation, 0.1)
    model = cisas_pin_model()
    tracking = simulate_tracking(model, ref, 'newton_euler', 0.005, kd=damped_kd(model, kin.spec.q_home),
                                 max_substep_s=0.005)
    assert np.all(np.isfinite(tracking.q_error))
    bag = record_mcap(run, tracking, ref, tmp_path / 'mission', rate_hz=20.0)
    store = get_typestore(Stores.ROS2_JAZZY)
    poses = []
    with Reader(bag) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        for conn, t_ns, raw in reader.messages():
            if conn.topic == '/chaser/pose_lvlh':
                p = store.deserialize_cdr(raw, conn.msgtype).pose.position
                poses.append((t_ns * 1e-9, [p.x, p.y, p.z]))
    n = len(range(0, run.t.size, int(round(1.0 / (20.0 * scenario.control_period_s)))))
    assert counts['/chaser/pose_lvlh'] == counts['/facility/ft/wrench'] == n
    assert counts['/cisas/joint_states'] == len(range(0, tracking.t.size, 10))      # 200 Hz control, 20 Hz record
    t0, p0 = poses[3]
    k = int(round(t0 / scenario.control_period_s))
    assert p0 == pytest.approx(run.state_lvlh[k, 0:3].tolist(), abs=1e-12)


def test_facility_rule_differences_the_robot_pose_by_its_stamps(scenario):
    """A pose sample repeated over ticks (late sensor) keeps its rate; it does not read as a stop."""
    from hil_docking.facility_rule import DockingFacility

    rule = DockingFacility(scenario)
    n = scenario.docking_axis_lvlh
    k_v, b_v = rule.gains.stiffness_n_m, rule.gains.damping_ns_m
    rule.step(0.0, 0.001 * n, sample_time_s=10.0)
    rule.step(0.0, 0.00102 * n, sample_time_s=10.002)                 # 0.01 m/s into the target
    assert rule.last_force_virtual_n == pytest.approx(k_v * 0.00102 + b_v * 0.01, rel=1e-9)
    rule.step(0.0, 0.00102 * n, sample_time_s=10.002)                 # the same sample again
    assert rule.last_force_virtual_n == pytest.approx(k_v * 0.00102 + b_v * 0.01, rel=1e-9)
    rule.step(0.0, 0.00102 * n, sample_time_s=10.004)                 # a new sample: really stopped
    assert rule.last_force_virtual_n == pytest.approx(k_v * 0.00102, rel=1e-9)
    rule.step(0.0, -0.001 * n, sample_time_s=10.006)                  # out of contact: no virtual force
    assert rule.last_force_virtual_n == 0.0


def test_the_arrival_at_the_port_is_not_contact(scenario):
    """The transfer reaches the port to rounding (x ~ 5e-14 m). The rate differenced there is the
    approach speed, before the braking burn: counted as contact it added a spurious damping
    impulse (0.2 % on the restitution of the live loop)."""
    from hil_docking.facility_rule import DockingFacility

    rule = DockingFacility(scenario)
    n = scenario.docking_axis_lvlh
    rule.step(0.0, -1.5e-4 * n, sample_time_s=0.0)
    rule.step(0.0, 5e-14 * n, sample_time_s=1e-3)           # at the port, at 0.15 m/s
    assert rule.last_force_virtual_n == 0.0 and rule.contact_start_s is None
    rule.step(0.0, 5e-5 * n, sample_time_s=2e-3)            # 50 um in: contact
    assert rule.last_force_virtual_n > 0.0 and rule.contact_start_s is not None
