"""declare_parameters on real rclpy nodes over loopback DDS (issue 15 item 7, issue 16 item 5).

* a real node executable given a misspelt parameter (``masss_kg``) fails start-up naming it;
* an integer for a double parameter (``mass_kg:=7828``) is accepted as 7828.0;
* a structural parameter set at run time through the SetParameters service (what
  ``ros2 param set`` calls) is refused with a reason, and the node keeps its value;
* a tunable one is validated and applied by the node's callback, or refused with its reason;
* a required parameter that is not given fails start-up naming it; values are frozen and typed.
"""

import pytest
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.parameter import Parameter

from hil_common.params import REQUIRED, Param, ParameterError, ParamValues, declare_parameters
from hil_common.ros_testing import spin_until, start_node, stop_process, test_node


def call(node, executor, srv_type, name, request, timeout_s=20.0):
    client = node.create_client(srv_type, name)
    assert client.wait_for_service(timeout_sec=timeout_s), f'{name} not available'
    # A request sent right after discovery can be lost before the reply path matches: resend.
    for _ in range(int(timeout_s / 2.0)):
        future = client.call_async(request)
        if spin_until(executor, future.done, 2.0):
            node.destroy_client(client)
            return future.result()
    raise AssertionError(f'{name} did not answer')


def set_request(name, value):
    return SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])


def test_misspelt_parameter_stops_the_real_node_naming_it():
    proc = start_node('hil_admittance', 'client_admittance_node', 'masss_kg:=7828.0')
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, out
    assert "parameter 'masss_kg': unknown parameter" in out and "did you mean 'mass_kg'" in out, out


def test_integer_for_a_double_is_accepted_and_a_structural_set_is_refused():
    proc = start_node('hil_admittance', 'client_admittance_node', 'mass_kg:=7828', 'rate_hz:=50')
    try:
        with test_node('probe_params') as (node, executor):
            got = call(node, executor, GetParameters, '/client_admittance/get_parameters',
                       GetParameters.Request(names=['mass_kg', 'rate_hz']))
            assert [v.double_value for v in got.values] == [7828.0, 50.0]
            result = call(node, executor, SetParameters, '/client_admittance/set_parameters',
                          set_request('mass_kg', 1000.0)).results[0]
            assert not result.successful
            assert 'read-only' in result.reason and 'mass_kg' in result.reason, result.reason
            got = call(node, executor, GetParameters, '/client_admittance/get_parameters',
                       GetParameters.Request(names=['mass_kg']))
            assert got.values[0].double_value == 7828.0
            assert proc.poll() is None
    finally:
        out = stop_process(proc)
    assert 'invalid parameter' not in out, out


SPEC = [
    Param('urdf_xml', REQUIRED, 'robot description', type='str'),
    Param('joint_names', [], 'joint names (empty: the URDF order)', type='str[]'),
    Param('gain', 2.0, 'a gain the node applies at run time', min=0.0, max=10.0, tunable=True),
    Param('low_pass.cutoff_hz', 100.0, 'cut-off'),
]


def test_tunable_parameter_is_applied_or_refused_with_a_reason():
    import rclpy

    applied = []

    def on_set(name, value):
        if value == 7.0:
            return 'gain 7 would destabilise the loop'
        applied.append((name, value))
        return None

    with test_node('probe_params_client') as (probe, executor):
        ctx = probe.context
        node = rclpy.create_node('tunable_probe', context=ctx,
                                 parameter_overrides=[Parameter('urdf_xml', value='<robot/>'), Parameter('gain', value=3)])
        executor.add_node(node)
        try:
            p = declare_parameters(node, SPEC, on_set=on_set)
            assert p.urdf_xml == '<robot/>' and p.joint_names == () and p.gain == 3.0 and isinstance(p.gain, float)
            assert p.low_pass.cutoff_hz == 100.0 and p['low_pass.cutoff_hz'] == 100.0
            with pytest.raises(AttributeError):
                p.gain = 4.0
            srv = '/tunable_probe/set_parameters'
            assert call(probe, executor, SetParameters, srv, set_request('gain', 4)).results[0].successful
            assert applied == [('gain', 4.0)] and node.get_parameter('gain').value == 4.0
            refused = call(probe, executor, SetParameters, srv, set_request('gain', 7.0)).results[0]
            assert not refused.successful and refused.reason == 'gain 7 would destabilise the loop'
            out_of_range = call(probe, executor, SetParameters, srv, set_request('gain', 11.0)).results[0]
            assert not out_of_range.successful
            refused = call(probe, executor, SetParameters, srv, set_request('urdf_xml', '<x/>')).results[0]
            assert not refused.successful and 'read-only' in refused.reason
            assert applied == [('gain', 4.0)] and node.get_parameter('gain').value == 4.0
        finally:
            executor.remove_node(node)
            node.destroy_node()


def test_required_and_unknown_parameters_fail_declaration_naming_them():
    import rclpy

    with test_node('probe_params_required') as (probe, _):
        for overrides, message in [
            ([], "parameter 'urdf_xml': is required and was not given"),
            ([Parameter('urdf_xml', value='<robot/>'), Parameter('gian', value=1.0)],
             "parameter 'gian': unknown parameter, this node does not declare it; did you mean 'gain'?"),
        ]:
            node = rclpy.create_node('required_probe', context=probe.context, parameter_overrides=overrides)
            try:
                with pytest.raises(ParameterError, match=message.replace('?', r'\?')):
                    declare_parameters(node, SPEC, on_set=lambda name, value: None)
            finally:
                node.destroy_node()


def test_param_values_are_a_frozen_mapping():
    p = ParamValues({'a': [1.0, 2.0], 'b.c': 3})
    assert p.a == (1.0, 2.0) and dict(p) == {'a': (1.0, 2.0), 'b.c': 3} and p.b.c == 3
    assert p.replace(a=(0.0,)).a == (0.0,) and p.a == (1.0, 2.0)
    with pytest.raises(AttributeError):
        p.a = 1
    with pytest.raises(TypeError):
        Param('x', REQUIRED, 'no type')
