"""The CISAS facility in the MuJoCo lab twin (:mod:`hil_docking.lab_twin`): the arm with its probe and
the target's plate. Checked against the scenario's lumped facility law (seed 003 Eqs. 16-18), which
the twin must realise physically: with the arm held at a penetration ``x = dr . n``, the F/T sensor
reads ``k_L x`` along the docking axis (after taring the probe's weight), and nothing before the port."""

import numpy as np
import pytest

from hil_docking.lab_twin import CHASER_NS, CHASER_SENSOR, cisas_twin_config, q_for_dr
from hil_docking.scenario import load_docking_scenario, scenario_path
from hil_lab_twin.scene import config_from_yaml, config_to_yaml
from hil_lab_twin.twin import LabTwin


def force_along_axis(twin, sc) -> float:
    """``f_L = -F . n`` of the sensor's noise-free reading, in the lab axes (the sensor's axes are the flange's)."""
    rotation = twin.flange_pose_in_world(CHASER_NS).rotation
    return -float((rotation @ twin.wrench_true(CHASER_SENSOR)[:3]) @ sc.docking_axis_lvlh)


def test_the_twin_s_probe_on_the_plate_measures_the_lumped_facility_stiffness():
    sc = load_docking_scenario(scenario_path('cisas_docking'))
    config = cisas_twin_config(sc)
    assert config_from_yaml(config_to_yaml(config)) == config         # what lab_twin_node is given
    twin = LabTwin(config)
    axis, k_l = sc.docking_axis_lvlh, sc.facility.lumped.stiffness_n_m
    start = twin.flange_pose_in_world(CHASER_NS).translation - sc.dock_position_in_base_m
    assert start == pytest.approx(sc.start_lvlh_m, abs=1e-6)          # the arm starts at the approach's start
    readings = {}
    for x in (-0.002, -0.0002, 0.002, 0.005, 0.010):
        twin.command_positions(CHASER_NS, q_for_dr(x * axis, sc))
        twin.advance_to(twin.time + 1.5, max_steps=10**6)
        dr = twin.flange_pose_in_world(CHASER_NS).translation - sc.dock_position_in_base_m
        readings[x] = (float(dr @ axis), force_along_axis(twin, sc))
    weight = readings[-0.002][1]                                      # out of contact: the probe's weight only
    assert readings[-0.0002][1] == pytest.approx(weight, abs=1e-9)    # 0.2 mm short of the port: no contact
    for x in (0.002, 0.005, 0.010):
        penetration, force = readings[x]
        assert penetration == pytest.approx(x, abs=2e-5)              # the arm's servo holds it there
        # the spring k_L in series with the ball's stiff contact: measured within 2e-6 of k_L x
        assert force - weight == pytest.approx(k_l * penetration, rel=1e-3)
    twin.close()


def test_the_twin_s_sensor_reads_nothing_but_the_probe_s_weight_while_the_arm_moves_at_constant_speed():
    """The approach at its top speed (0.15 m/s along the docking axis, straight, the flange's orientation
    held): the probe does not accelerate, so the sampled readings (1 kHz, noise off) stay its weight.
    Before the twin's F/T sampling averaged over its sample period, they read up to 0.08 N more here
    (MuJoCo's step-to-step alternation of the servoed joints' accelerations, read every fourth 0.25 ms
    step; hil_lab_twin.ft)."""
    from hil_lab_twin.scene import FtConfig

    sc = load_docking_scenario(scenario_path('cisas_docking'))
    twin = LabTwin(cisas_twin_config(sc, ft=FtConfig(noise_force_std=0.0, noise_torque_std=0.0)))
    source = twin.wrench_source(CHASER_SENSOR)
    twin.advance_to(1.0, max_steps=10**6)
    rotation = twin.flange_pose_in_world(CHASER_NS).rotation
    at_rest = rotation @ source()[0][:3]
    start, q, worst = np.asarray(sc.start_lvlh_m, dtype=float), None, 0.0
    for k in range(1200):
        q = q_for_dr(start * (1.0 - k * 0.001 / 6.0), sc, seed=q)        # 0.9 m in 6 s: 0.15 m/s
        twin.command_positions(CHASER_NS, q)
        twin.advance_to(1.0 + (k + 1) * 0.001, max_steps=100)
        if k >= 200:                                                     # past the start's acceleration
            worst = max(worst, float(np.linalg.norm(rotation @ source()[0][:3] - at_rest)))
    speed = np.linalg.norm(start) / 6.0
    assert speed == pytest.approx(0.151, abs=1e-3)
    assert worst < 0.01, worst
    twin.close()
