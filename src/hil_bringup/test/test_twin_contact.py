"""Contact happens in the twin (issue 11, item 2): the gripper closes on the ring, MuJoCo computes the grip.

The calibrated twin (``envisat_lab``) with the arm at the joints that put the tool on the
grasp frame (the OBSW's own IK): the fingers close in the stated closing time and squeeze the
ring's lip. The arm then loads the contact with joint torques ``J^T F`` for several tool
wrenches. Both F/T sensors -- the client sensor (table flange -> mock-up) and the wrist
sensor (arm flange -> gripper) -- read the contact wrench; after the drivers' processing
(tare, the carried mock-up's / gripper's weight, dead band: the same classes as
``hil_sensors``' driver) and moved to the grasp frame, they are equal and opposite within

    |F_client + F_wrist| <= 0.5 N + 3 % |F|,   |T_client + T_wrist| <= 0.2 N m + 3 % |T|

(what is left, 1 s after each load step: the grip still settling -- the fingers' and mock-up's
inertial forces, the soft contacts creeping -- and the two dead bands, 0.25 N and 0.015 N m per
axis). The same readings travel over real RDT/UDP to the F/T driver.
With the gripper left open, both read nothing: the check is not vacuous.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pinocchio as pin
import pytest

from hil_bringup.facility import calibrate, load_facility, twin_config
from hil_bringup.runners.mission import build_controller
from hil_bringup.scenario import load_scenario
from hil_bringup.runners.twin_validation import TwinFtSensor, tare_twin_sensors
from hil_lab_twin.twin import LabTwin

LOADS = ([0.0, 0.0, 20.0, 0.0, 0.0, 0.0],     # along the approach axis (push onto the ring)
         [0.0, 0.0, -15.0, 0.0, 0.0, 0.0],    # pull off the ring
         [10.0, 0.0, 0.0, 0.0, 0.0, 3.0],     # across, and a twist about the approach axis
         [0.0, 0.0, 0.0, 2.0, 2.0, 0.0])      # bending moments
SETTLE_S = 1.0


def _tolerance(w):
    return 0.5 + 0.03 * np.linalg.norm(w[:3]), 0.2 + 0.03 * np.linalg.norm(w[3:])


@pytest.fixture(scope='module')
def setup():
    scenario = load_scenario('envisat_capture')
    facility = load_facility('envisat_lab')
    cal = calibrate(facility, scenario)
    controller = build_controller(scenario)
    s = scenario.servicer
    tool_in_base = cal.pose_body_in_nominal_0['servicer'].actInv(
        scenario.client.pose_grasp_in_client * s.pose_tool_at_grasp_in_grasp)
    q_grasp = controller.joint_angles_for_tool(tool_in_base, s.q_arm_0)
    config = twin_config(cal)
    # MuJoCo's soft-friction grip (noslip_iterations 0): with the no-slip solver, the twin's default,
    # the two sensors differ by ~17 N under the 20 N static push here (open in issue 11); the
    # capture run with it is checked in test_twin_capture (>= 90 % of the grasped samples agree)
    config = dataclasses.replace(config, arm=dataclasses.replace(
        config.arm, q_initial=tuple(q_grasp), gripper=dataclasses.replace(config.arm.gripper, noslip_iterations=0)))
    return facility, controller, config


def _twin(setup):
    facility, _, config = setup
    twin = LabTwin(config)
    chains = {'client': TwinFtSensor(twin, 'client_ft', 'client_mockup', facility.ft_deadband),
              'wrist': TwinFtSensor(twin, 'servicer_wrist_ft', 'servicer_arm_gripper', facility.ft_deadband)}
    tare_twin_sensors(twin, chains.values(), 200 * twin.dt)
    return twin, chains


def _at_grasp(twin, chains):
    grasp = twin.site_pose_in_world('client_grapple')
    out = []
    for name, site in (('client', 'client_ft_site'), ('wrist', 'servicer_wrist_ft_site')):
        out.append(grasp.actInv(twin.site_pose_in_world(site)).act(pin.Force(chains[name].wrench())).vector)
    return out


def _load(twin, controller, wrench_tool):
    _, jac = controller.tool_kinematics(pin.SE3.Identity(), twin.joint_state('servicer_arm').positions)
    twin.command_efforts('servicer_arm', jac[:, 6:].T @ np.asarray(wrench_tool, dtype=float))
    twin.step(int(round(SETTLE_S / twin.dt)))


def test_the_gripper_closes_in_its_closing_time_and_both_sensors_read_the_grip_equal_and_opposite(setup):
    facility, controller, _ = setup
    twin, chains = _twin(setup)
    assert twin.data.ncon == 0
    lip_half = facility.ring['lip_thickness_m'] / 2
    open_half, closing = facility.gripper['open_half_m'], facility.gripper['closing_time_s']
    t0 = twin.time
    twin.close_gripper('servicer_arm')
    while np.any(twin.finger_positions('servicer_arm') > lip_half + 2e-4) and twin.time < t0 + 2 * closing:
        twin.step()
    t_contact = twin.time - t0
    expected = closing * (open_half - lip_half) / open_half          # the fingers' ramp from open to the lip
    print(f'\nfingers on the lip after {t_contact:.3f} s (ramp: {expected:.3f} s)')
    assert t_contact == pytest.approx(expected, abs=0.05)
    twin.step(200)
    assert twin.data.ncon > 0
    for wrench_tool in LOADS:
        _load(twin, controller, wrench_tool)
        client, wrist = _at_grasp(twin, chains)
        tol_f, tol_t = _tolerance(client)
        gap = client + wrist
        print(f'load {wrench_tool}: client {np.round(client, 3)}, wrist {np.round(wrist, 3)}, sum {np.round(gap, 3)}')
        assert np.linalg.norm(client[:3]) + np.linalg.norm(client[3:]) > 1.0       # the contact is loaded
        assert np.linalg.norm(gap[:3]) <= tol_f and np.linalg.norm(gap[3:]) <= tol_t
        # the grip holds: the fingers stay on the lip, the tool stays on the grasp frame
        assert np.all(twin.finger_positions('servicer_arm') > -1e-3)
        tool_in_grasp = twin.site_pose_in_world('client_grapple').actInv(twin.site_pose_in_world('servicer_arm_tool'))
        assert np.linalg.norm(tool_in_grasp.translation) < 0.02


def test_with_the_gripper_open_the_sensors_read_no_contact(setup):
    _, controller, _ = setup
    twin, chains = _twin(setup)
    _load(twin, controller, [0.0, 0.0, -5.0, 0.0, 0.0, 0.0])    # pull back: the open fingers leave the lip
    client, wrist = _at_grasp(twin, chains)
    assert twin.data.ncon == 0
    # no contact: the mock-up's sensor reads nothing (to the last bit, inside the dead band), the
    # wrist only the accelerating gripper's inertia (1.6 kg), far below the 5 N pull
    assert np.linalg.norm(client) == 0.0
    assert np.linalg.norm(wrist[:3]) < 1.0


def test_the_contact_readings_travel_over_rdt_udp_to_the_ft_driver(setup):
    from hil_lab_twin.rdt_bridge import rdt_server
    from hil_sensors.ft_driver import FtDriver, check_parameters

    _, controller, _ = setup
    twin, chains = _twin(setup)
    twin.close_gripper('servicer_arm')
    twin.step(800)
    _load(twin, controller, LOADS[0])
    for sensor in ('client_ft', 'servicer_wrist_ft'):
        expected = twin.wrench_source(sensor)()[0]
        server = rdt_server(twin, sensor, port=0)
        driver = FtDriver(check_parameters({'sensor_port': server.port, 'sensor_rate_hz': 1000.0,
                                            'low_pass.enabled': False, 'software_bias.enabled': False}))
        try:
            driver.open()
            driver.start_streaming()
            deadline = time.monotonic() + 5.0
            while driver.counters['accepted'] < 20 and time.monotonic() < deadline:
                driver.poll(0.05)
        finally:
            driver.close()
            server.stop()
        assert driver.counters['accepted'] >= 20
        assert np.linalg.norm(expected[:3]) > 10.0            # the loaded contact, plus the carried weight
        np.testing.assert_allclose(driver.newest.raw, expected, atol=1e-5)
