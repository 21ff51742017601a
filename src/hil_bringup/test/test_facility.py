"""The lab calibration (issue 11, item 1): one facility file, validated, the single source of truth.

* With ideal tracking (the tables' joints set to the IK of their nominal-frame commands), the
  twin's measured ring-to-gripper pose equals the simulated one (the on-board servicer model
  and the two admittance states, seed 004 Eq. 23) to 1e-6 m / 1e-6 rad: the calibration, the
  motion tables' ``command_frame: nominal`` and the twin's geometry agree.
* The node parameters derived from the calibration put the tables where the twin starts.
* A calibration that places the mock-ups in contact at start, or a start pose out of a
  robot's reach, is refused naming the field.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pinocchio as pin
import pytest
import yaml

from hil_bringup.facility import (calibrate, client_admittance_lab_parameters, client_table_parameters, facility_path,
                                  ft_driver_parameters, load_facility, servicer_admittance_lab_parameters,
                                  servicer_table_parameters, twin_config)
from hil_bringup.runners.mission import build_controller
from hil_bringup.scenario import ScenarioError, load_scenario
from hil_common.conversions import xyz_rpy_to_pose
from hil_lab_twin.twin import LabTwin
from hil_motion_table.kinematics_helpers import flange_target_from_body_motion, make_kinematics
from hil_motion_table.table import home_for_nominal_frame


@pytest.fixture(scope='module')
def scenario():
    return load_scenario('envisat_capture')


@pytest.fixture(scope='module')
def facility():
    return load_facility('envisat_lab')


@pytest.fixture(scope='module')
def cal(facility, scenario):
    return calibrate(facility, scenario)


def _set_joints(twin: LabTwin, ns: str, q) -> None:
    robot = twin._robots[ns]
    twin.data.qpos[robot.qpos_adr] = np.asarray(q) - robot.build.q_offset


def test_ideal_tracking_puts_the_gripper_where_the_simulation_has_it(cal, scenario):
    twin = LabTwin(twin_config(cal))
    controller = build_controller(scenario)           # the on-board servicer model's tool kinematics
    rng = np.random.default_rng(3)
    kin = {ns: make_kinematics(cal.facility.robot_models[ns]) for ns in ('client', 'servicer')}
    q_seed = dict(cal.q_table_0)
    worst = [0.0, 0.0]
    for _ in range(5):
        # Admittance states near the start: client CoM and servicer base in the nominal frame, arm joints.
        g_c = pin.exp6(pin.Motion(np.concatenate((rng.uniform(-0.05, 0.05, 3), rng.uniform(-0.03, 0.03, 3)))))
        g_s = cal.pose_body_in_nominal_0['servicer'] * pin.exp6(pin.Motion(
            np.concatenate((rng.uniform(-0.05, 0.05, 3), rng.uniform(-0.03, 0.03, 3)))))
        q_arm = scenario.servicer.q_arm_0 + rng.uniform(-0.2, 0.2, 7)
        for ns, g in (('client', g_c), ('servicer', g_s)):
            result = kin[ns].inverse(cal.flange_target(ns, g), q_seed[ns])
            assert result.converged
            q_seed[ns] = result.q
            _set_joints(twin, ns, result.q)
        twin.data.qpos[twin._arms['servicer_arm'].qpos_adr] = q_arm
        mujoco.mj_forward(twin.model, twin.data)
        measured = twin.site_pose_in_world('client_grapple').actInv(twin.site_pose_in_world('servicer_arm_tool'))
        pose_tool_in_nominal, _ = controller.tool_kinematics(g_s, q_arm)
        simulated = (g_c * scenario.client.pose_grasp_in_client).actInv(pose_tool_in_nominal)
        err = simulated.actInv(measured)
        worst = [max(worst[0], float(np.linalg.norm(err.translation))),
                 max(worst[1], float(np.linalg.norm(pin.log3(err.rotation))))]
    print(f'\nideal tracking: ring-to-gripper pose error {worst[0]:.2e} m, {worst[1]:.2e} rad')
    assert worst[0] < 1e-6 and worst[1] < 1e-6


def test_node_parameters_reproduce_the_start_pose_of_both_tables(facility, scenario, cal):
    twin = LabTwin(twin_config(cal))
    for ns, params in (('client', client_table_parameters(facility, scenario)),
                       ('servicer', servicer_table_parameters(facility, scenario))):
        assert params['command_frame'] == 'nominal'
        y = xyz_rpy_to_pose(params['pose_body_in_flange_xyz_rpy'])
        home = home_for_nominal_frame(xyz_rpy_to_pose(params['pose_nominal_in_base_xyz_rpy']), y)
        # what motion_table_node does with the body's start pose in the nominal frame
        target = flange_target_from_body_motion(home, y, cal.pose_body_in_nominal_0[ns])
        err = pin.log6(target.actInv(twin.flange_pose(ns))).vector
        assert np.linalg.norm(err) < 1e-9, ns
    # the client sensor relative to the client CoM: the grasp frame seen from the sensor, composed
    sensor = xyz_rpy_to_pose(client_admittance_lab_parameters(facility, scenario)['pose_sensor_in_client_xyz_rpy'])
    in_twin = twin.site_pose_in_world('client_ft_site').actInv(twin.site_pose_in_world('client_grapple'))
    expected = sensor.inverse() * scenario.client.pose_grasp_in_client
    assert np.linalg.norm(pin.log6(expected.actInv(in_twin)).vector) < 1e-9
    # the wrist sensor relative to the arm's flange, measured in the twin at its start pose (a wrench
    # taken at the flange instead is off by F x 0.03 m: the live grasp twisted the gripper on the lip)
    from hil_bringup.runners.twin_validation import pose_wrist_sensor_in_flange
    from hil_dynamics.servicer import ServicerModel

    urdf = scenario.servicer.urdf
    measured = pose_wrist_sensor_in_flange(ServicerModel(urdf, scenario.servicer.ee_frame), twin, urdf)
    given = xyz_rpy_to_pose(servicer_admittance_lab_parameters(facility)['pose_sensor_in_ee_xyz_rpy'])
    assert np.linalg.norm(pin.log6(given.actInv(measured)).vector) < 1e-9
    assert np.linalg.norm(measured.translation) > 0.01
    assert ft_driver_parameters(facility)['deadband.widths'] == [0.25, 0.25, 0.25, 0.015, 0.015, 0.015]


def _variant(tmp_path, edit) -> str:
    data = yaml.safe_load(facility_path('envisat_lab').read_text())
    edit(data)
    path = tmp_path / 'lab.yaml'
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_mockups_in_contact_at_start_are_refused_naming_the_field(tmp_path, scenario):
    def tall_box(d):   # a mock-up box 1 m deep: it reaches through the ring into the open gripper
        d['client_mockup']['box_half_m'] = [0.15, 0.15, 0.5]

    with pytest.raises(ScenarioError, match=r"field 'client_mockup'.*in contact"):
        calibrate(load_facility(_variant(tmp_path, tall_box)), scenario)


def test_a_start_pose_out_of_reach_is_refused_naming_the_field(tmp_path, scenario):
    def far(d):
        d['robots']['client']['pose_base_in_lab']['translation_m'] = [5.0, 0.0, 0.7]

    with pytest.raises(ScenarioError, match=r"field 'robots\.client\.pose_base_in_lab'.*cannot reach"):
        calibrate(load_facility(_variant(tmp_path, far)), scenario)


@pytest.mark.parametrize('edit, field', [
    (lambda d: d['robots']['servicer'].update(model='abb'), 'robots.servicer.model'),
    (lambda d: d['gripper'].update(closing_time_s=0.0), 'gripper.closing_time_s'),
    (lambda d: d['client_mockup'].update(lip_thickness_m=0.5), 'client_mockup.lip_thickness_m'),
    (lambda d: d['client_mockup']['pose_grasp_in_sensor'].update(rotation_rpy=[0, 0, 0]),
     'client_mockup.pose_grasp_in_sensor.rotation_rpy'),
    (lambda d: d.pop('pose_nominal_in_lab'), 'pose_nominal_in_lab'),
])
def test_bad_fields_are_named(tmp_path, edit, field):
    with pytest.raises(ScenarioError, match=rf"field '{field}'"):
        load_facility(_variant(tmp_path, edit))


def test_the_twin_node_builds_the_calibrated_twin_from_its_parameters(facility, scenario, cal):
    from hil_bringup.facility import twin_node_parameters
    from hil_lab_twin.lab_twin_node import config_from

    class Values(dict):
        __getattr__ = dict.__getitem__

    params = twin_node_parameters(facility, scenario, {'client_ft': 49152})
    assert params['layout'] == 'config' and params['rdt_ports'] == ['client_ft:49152']
    assert config_from(Values(params)) == twin_config(cal)
