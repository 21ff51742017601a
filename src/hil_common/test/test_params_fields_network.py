"""hil_common: parameter validation, scenario fields and the network profile switch."""

import math
import xml.etree.ElementTree as ET

import pytest

from hil_common import network
from hil_common.fields import Fields, ScenarioError
from hil_common.params import Param, ParameterError, validate

SPEC = [
    Param('rate_hz', 1000.0, 'rate', min=1.0, max=10000.0),
    Param('count', 5, 'count', min=1),
    Param('mode', 'serial', 'mode', choices=('serial', 'hexapod')),
    Param('enabled', True, 'flag'),
    Param('limits', [1.0, 2.0, 3.0], 'limits', length=3, min=0.0),
]


def test_defaults_validate_and_values_are_canonical():
    out = validate(SPEC, {'count': 7.0, 'limits': [1, 2, 3]})
    assert out == {'rate_hz': 1000.0, 'count': 7, 'mode': 'serial', 'enabled': True, 'limits': [1.0, 2.0, 3.0]}
    assert isinstance(out['count'], int) and all(isinstance(v, float) for v in out['limits'])


@pytest.mark.parametrize('values, message', [
    ({'rate_hz': 0.5}, "parameter 'rate_hz': 0.5 is below the minimum 1.0"),
    ({'rate_hz': math.nan}, "parameter 'rate_hz': nan is not finite"),
    ({'rate_hz': 'fast'}, "parameter 'rate_hz': expected a number"),
    ({'count': 2.5}, "parameter 'count': expected an integer"),
    ({'mode': 'delta'}, "parameter 'mode': 'delta' is not one of"),
    ({'enabled': 1}, "parameter 'enabled': expected true/false"),
    ({'limits': [1.0, 2.0]}, "parameter 'limits': expected 3 elements"),
    ({'limits': [1.0, -2.0, 3.0]}, "parameter 'limits'[1]: -2.0 is below the minimum"),
])
def test_bad_values_name_the_parameter(values, message):
    with pytest.raises(ParameterError) as err:
        validate(SPEC, values)
    assert message in str(err.value)


def test_extra_check_runs_after_type_checks():
    spec = [Param('cutoff_hz', 100.0, 'cut-off', min=0.0, check=lambda v: 'must be below Nyquist' if v >= 500 else None)]
    assert validate(spec, {})['cutoff_hz'] == 100.0
    with pytest.raises(ParameterError, match="parameter 'cutoff_hz': must be below Nyquist"):
        validate(spec, {'cutoff_hz': 600.0})


def test_fields_errors_name_file_and_dotted_field(tmp_path):
    path = tmp_path / 'mission.yaml'
    path.write_text('client:\n  mass_kg: -1\n  twist: [1, 2]\n  name: 3\n')
    client = Fields.load(path).section('client')
    with pytest.raises(ScenarioError, match=r"mission.yaml: field 'client.mass_kg': must be > 0"):
        client.number('mass_kg', positive=True)
    with pytest.raises(ScenarioError, match=r"field 'client.twist': expected 6 numbers, got 2"):
        client.vector('twist', 6)
    with pytest.raises(ScenarioError, match=r"field 'client.name': expected a string"):
        client.string('name')
    with pytest.raises(ScenarioError, match=r"field 'client.inertia': is missing"):
        client.number('inertia')
    path.write_text('client: [unclosed\n')
    with pytest.raises(ScenarioError, match='not valid YAML'):
        Fields.load(path)


def test_loopback_profile_whitelists_only_127_0_0_1_and_disables_builtin_transports():
    root = ET.parse(network.loopback_profile_path()).getroot()
    ns = {'d': 'http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles'}
    udp = [t for t in root.iterfind('.//d:transport_descriptor', ns) if t.findtext('d:type', namespaces=ns) == 'UDPv4']
    assert len(udp) == 1
    assert [a.text for a in udp[0].iterfind('d:interfaceWhiteList/d:address', ns)] == ['127.0.0.1']
    participant = root.find('.//d:participant', ns)
    assert participant.get('is_default_profile') == 'true'
    assert participant.findtext('d:rtps/d:useBuiltinTransports', namespaces=ns) == 'false'
    used = {t.text for t in participant.iterfind('d:rtps/d:userTransports/d:transport_id', ns)}
    kinds = {t.findtext('d:transport_id', namespaces=ns): t.findtext('d:type', namespaces=ns)
             for t in root.iterfind('.//d:transport_descriptor', ns)}
    assert sorted(kinds[u] for u in used) == ['SHM', 'UDPv4']


def test_network_mode_switch():
    env = {}
    assert network.apply_network_profile(env) == 'loopback'
    assert env['FASTRTPS_DEFAULT_PROFILES_FILE'].endswith('fastdds_loopback.xml')
    lab = {'HIL_NETWORK': 'lab', 'FASTRTPS_DEFAULT_PROFILES_FILE': '/lab/profile.xml'}
    assert network.apply_network_profile(lab) == 'lab'
    assert lab['FASTRTPS_DEFAULT_PROFILES_FILE'] == '/lab/profile.xml'
    stray = {'FASTRTPS_DEFAULT_PROFILES_FILE': '/tmp/multicast.xml'}
    network.apply_network_profile(stray)
    assert stray['FASTRTPS_DEFAULT_PROFILES_FILE'].endswith('fastdds_loopback.xml')
    with pytest.raises(network.NetworkConfigError, match='HIL_NETWORK'):
        network.apply_network_profile({'HIL_NETWORK': 'wan'})


def test_this_test_run_uses_the_loopback_profile_and_its_own_domain():
    import os
    assert os.environ['FASTRTPS_DEFAULT_PROFILES_FILE'] == str(network.loopback_profile_path())
    assert 1 <= int(os.environ['ROS_DOMAIN_ID']) <= 100
