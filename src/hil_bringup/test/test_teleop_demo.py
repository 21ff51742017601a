"""Seed 001 scenario, launch parameters, plots and the MCAP recording of the teleoperation demo."""

import dataclasses

import numpy as np
import pytest

from hil_bringup.scenario import scenario_path
from hil_bringup.teleop_demo import plot_hils2, plot_step, record_mcap
from hil_common.fields import ScenarioError
from hil_common.params import validate
from hil_teleop.experiments import step_pull
from hil_teleop.scenario import load_teleop_scenario

SCENARIO = scenario_path('massive_payload_teleop')


def test_scenario_loads_and_matches_the_seed_setup():
    s = load_teleop_scenario(SCENARIO)
    assert s.config.payload_mass_kg == 4500.0 and s.config.delay_s == 5.0      # seed 001 HILS 2
    op = s.operator()
    gains = s.config.gains
    # Eq. (1): the scripted pulls are the reference velocities the YAML states
    for start, end, v in s.pulls:
        assert (gains.k_s * gains.g * op(0.5 * (start + end)))[0] == pytest.approx(v)


def test_launch_parameters_are_valid_for_the_nodes_they_configure():
    from hil_admittance.client_admittance_node import PARAMS as ADMITTANCE
    from hil_teleop.delay_line_node import PARAMS as DELAY
    from hil_teleop.slave_law_node import PARAMS as SLAVE
    from hil_teleop.teleop_master_node import PARAMS as MASTER

    params = load_teleop_scenario(SCENARIO).node_parameters()
    specs = {'teleop_master': MASTER, 'delay_line': DELAY, 'slave_law': SLAVE, 'payload_admittance': ADMITTANCE}
    assert set(params) == set(specs)
    for node, spec in specs.items():
        names = {p.name for p in spec}
        assert set(params[node]) <= names, f'{node}: unknown {set(params[node]) - names}'
        validate(spec, params[node])
    assert params['payload_admittance']['twist_client_body_0'] == [0.0] * 6   # zero nominal velocity


@pytest.mark.parametrize('edit, field', [
    (('gains:', 'gains:\n  bogus: 1'), None),
    (('  d: [0.2, 0.2, 0.2, 0.2, 0.2, 0.2]', '  d: [0.7, 0.2, 0.2, 0.2, 0.2, 0.2]'), "'gains.d'"),
    (('  mass_kg: 4500.0', '  mass_kg: -1.0'), "'payload.mass_kg'"),
    (('    - [27.0, 37.0, 0.02]', '    - [37.0, 27.0, 0.02]'), "'operator.pulls'"),
])
def test_bad_scenario_fields_are_named(tmp_path, edit, field):
    path = tmp_path / 'bad.yaml'
    path.write_text(SCENARIO.read_text().replace(*edit))
    if field is None:                       # unknown extra keys are ignored, the rest still loads
        load_teleop_scenario(path)
        return
    with pytest.raises(ScenarioError, match=field):
        load_teleop_scenario(path)


@pytest.fixture(scope='module')
def short_run():
    s = load_teleop_scenario(SCENARIO)
    return step_pull(dataclasses.replace(s.config, payload_mass_kg=3000.0, delay_s=0.5), 0.01, duration_s=4.0)


def test_plots_are_written_as_png(tmp_path, short_run):
    files = plot_step(short_run, tmp_path, 3000.0) + plot_hils2(short_run, tmp_path, 'short')
    assert len(files) == 6
    for f in files:
        assert f.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and f.stat().st_size > 10_000


def test_mcap_recording_reads_back_the_run(tmp_path, short_run):
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    path = record_mcap(short_run, tmp_path / 'run', rate_hz=50.0)
    assert list(path.glob('*.mcap'))
    ts = get_typestore(Stores.ROS2_JAZZY)
    every = int(round(1.0 / (50.0 * short_run.dt)))
    expected_idx = np.arange(0, len(short_run.t), every)
    with Reader(path) as reader:
        topics = {c.topic for c in reader.connections}
        assert topics == {'/teleop/f_m', '/teleop/f_vir', '/slave/ft/wrench', '/teleop/x_vir', '/slave/x_s',
                          '/payload/pose'}
        wrench = [c for c in reader.connections if c.topic == '/slave/ft/wrench']
        got = [(t, ts.deserialize_cdr(raw, c.msgtype)) for c, t, raw in reader.messages(connections=wrench)]
        poses = [c for c in reader.connections if c.topic == '/slave/x_s']
        xs = [ts.deserialize_cdr(raw, c.msgtype) for c, _, raw in reader.messages(connections=poses)]
    assert len(got) == len(expected_idx) == len(xs)
    fx = np.array([m.wrench.force.x for _, m in got])
    np.testing.assert_allclose(fx, short_run.f_s[expected_idx, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose([t * 1e-9 for t, _ in got], short_run.t[expected_idx], atol=1e-9)
    np.testing.assert_allclose([m.pose.position.x for m in xs], short_run.x_s[expected_idx, 0], atol=1e-12)
