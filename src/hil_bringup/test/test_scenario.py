"""Scenario loading: the shipped Envisat file and clear errors for bad files."""

import pytest
import yaml

from hil_bringup.scenario import ScenarioError, client_admittance_parameters, load_scenario, scenario_path
from hil_common.params import validate
from hil_admittance.client_admittance_node import PARAMS as CLIENT_PARAMS


def test_shipped_scenario_loads_and_feeds_the_node_parameters():
    scenario = load_scenario('envisat_capture')
    params = client_admittance_parameters(scenario)
    checked = validate(CLIENT_PARAMS, params)  # the node would accept them as they are
    assert checked['mass_kg'] == scenario.client.body.mass_kg


def mutate(tmp_path, edit):
    data = yaml.safe_load(scenario_path('envisat_capture').read_text())
    edit(data)
    path = tmp_path / 'bad.yaml'
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize('edit, field', [
    (lambda d: d['client'].pop('mass_kg'), "'client.mass_kg': is missing"),
    (lambda d: d['client'].__setitem__('mass_kg', 'heavy'), "'client.mass_kg': expected a number"),
    (lambda d: d['client'].__setitem__('inertia_com_kgm2', [1.0, 1.0, 5.0]), "'client.inertia_com_kgm2': "),
    (lambda d: d['client'].__setitem__('twist_client_body_0', [0, 0, 0]), "'client.twist_client_body_0': expected 6"),
    (lambda d: d['client']['pose_grasp_in_client'].pop('translation_m'), "'client.pose_grasp_in_client.translation_m'"),
    (lambda d: d['nominal'].__setitem__('kind', 'circular'), "'nominal.kind'"),
    (lambda d: d['lab'].__setitem__('workspace_box_m', [1.0, 0.0, 1.0]), "'lab.workspace_box_m'"),
    (lambda d: d['rates'].__setitem__('admittance_hz', 0.0), "'rates.admittance_hz'"),
    # Mission sections (servicer, contact, OBSW gains, rates, lab, mission).
    (lambda d: d['servicer'].__setitem__('arm', 'canadarm3'), "'servicer.arm'"),
    (lambda d: d['servicer'].__setitem__('q_arm_0_rad', [0.0] * 6), "'servicer.q_arm_0_rad': expected 7"),
    (lambda d: d['servicer']['pose_base_in_client_desired'].pop('translation_m'),
     "'servicer.pose_base_in_client_desired.translation_m'"),
    (lambda d: d['servicer']['gripper'].__setitem__('mass_kg', -1.0), "'servicer.gripper.mass_kg'"),
    (lambda d: d['contact'].__setitem__('stiffness_linear_n_m', -5.0), "'contact.stiffness_linear_n_m'"),
    (lambda d: d['contact'].pop('closing_time_s'), "'contact.closing_time_s': is missing"),
    (lambda d: d['contact'].__setitem__('stifness_linear_n_m', 1.0), "'contact.stifness_linear_n_m': is not a known field"),
    (lambda d: d['obsw'].__setitem__('base_stiffness', [1.0, 2.0]), "'obsw.base_stiffness': expected 6"),
    (lambda d: d['obsw'].__setitem__('approach_duration_s', 'long'), "'obsw.approach_duration_s': expected a number"),
    (lambda d: d['rates'].__setitem__('obsw_hz', 300.0), "'rates.obsw_hz'"),
    (lambda d: d['lab'].__setitem__('servicer_workspace_box_m', [1.0, 1.0]), "'lab.servicer_workspace_box_m'"),
    (lambda d: d['mission'].__setitem__('duration_s', 0.0), "'mission.duration_s'"),
    # Unknown top-level keys (a misspelt section would otherwise be ignored).
    (lambda d: d.__setitem__('mision', {'duration_s': 1.0}), "'mision': is not a known top-level key"),
    (lambda d: d.__setitem__('obsw_gains', {}), "'obsw_gains': is not a known top-level key"),
])
def test_bad_scenario_names_the_field(tmp_path, edit, field):
    with pytest.raises(ScenarioError) as err:
        load_scenario(mutate(tmp_path, edit))
    assert field in str(err.value)
    assert 'bad.yaml' in str(err.value)


def test_unknown_top_level_key_of_the_teleop_scenario_is_refused(tmp_path):
    from hil_teleop.scenario import load_teleop_scenario

    source = scenario_path('massive_payload_teleop')
    load_teleop_scenario(source)  # the shipped file has only known keys
    data = yaml.safe_load(source.read_text())
    data['opertor'] = data['operator']
    path = tmp_path / 'bad.yaml'
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError, match="'opertor': is not a known top-level key.*did you mean 'operator'"):
        load_teleop_scenario(path)
