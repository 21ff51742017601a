"""Snare scenario YAMLs: the shipped ones load; bad input stops the load naming the field (no run starts)."""

import re

import pytest
import yaml

from hil_common.fields import ScenarioError
from hil_snare.scenario import load_snare_scenario, scenario_path


@pytest.mark.parametrize('name', ['htv_capture', 'htv_case_study', 'jemrms_capture', 'contact_experiment'])
def test_shipped_scenarios_load_and_build(name):
    sc = load_snare_scenario(name)
    system, _, poses, x = sc.build()
    assert x.shape == (system.nx,)


def _broken(tmp_path, name, edit):
    data = yaml.safe_load(scenario_path(name).read_text())
    edit(data)
    path = tmp_path / f'{name}.yaml'
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize('name, edit, field', [
    ('htv_capture', lambda d: d['arm']['gearbox'].update(k_g_nm_per_rad=-1.33e6), 'arm.gearbox.k_g_nm_per_rad'),
    ('htv_capture', lambda d: d['wires'].update(gamma_n_per_m=-648.6), 'wires.gamma_n_per_m'),
    ('htv_capture', lambda d: d['wires'].update(mu=-0.08), 'wires.mu'),
    ('jemrms_capture', lambda d: d['wires'].update(mu=-0.08), 'wires.mu'),
    ('htv_capture', lambda d: d['wires'].update(tightening_time_s=0), 'wires.tightening_time_s'),
    ('htv_capture', lambda d: d['initial_state'].update(rel_position_m=[-0.476, 0.15, 0.0]), 'initial_state.rel_position_m'),
    ('jemrms_capture', lambda d: d['arm']['joint_bands'].update(edges_deg=[0.06, 0.04]), 'arm.joint_bands.edges_deg'),
    ('jemrms_capture', lambda d: d['arm']['joint_bands'].update(stiffness_nm_per_deg=[12.5, -475, 475]),
     'arm.joint_bands.stiffness_nm_per_deg'),
])
def test_bad_scenario_is_refused_naming_the_field(tmp_path, name, edit, field):
    with pytest.raises(ScenarioError, match=re.escape(field)):
        load_snare_scenario(_broken(tmp_path, name, edit))
