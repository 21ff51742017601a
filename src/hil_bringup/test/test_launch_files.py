"""Launch files are checked statically (launch/launch_ros are not installable here).

Every ``Node(package=..., executable=...)`` in hil_bringup/launch must name an executable
that exists where launch_ros looks for it, ``<prefix>/lib/<package>/<executable>``, and
every launch file must define ``generate_launch_description``.
"""

import ast
import os
from pathlib import Path

import numpy as np
import pytest
from ament_index_python.packages import get_package_prefix, get_package_share_directory

LAUNCH_DIR = Path(__file__).resolve().parents[1] / 'launch'
LAUNCH_FILES = sorted(LAUNCH_DIR.glob('*.launch.py'))


def node_actions(tree):
    """``(package, executable)`` of every Node action naming them literally.

    A Node whose package/executable come from launch arguments (a replaceable slot, e.g. the
    OBSW controller of envisat_capture.launch.py) cannot be resolved statically and is skipped.
    """
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, 'id', None) == 'Node':
            kwargs = {k.arg: k.value for k in call.keywords}
            if isinstance(kwargs['package'], ast.Constant) and isinstance(kwargs['executable'], ast.Constant):
                yield kwargs['package'].value, kwargs['executable'].value


def test_there_are_launch_files_and_they_are_installed():
    assert LAUNCH_FILES
    share = Path(get_package_share_directory('hil_bringup')) / 'launch'
    for path in LAUNCH_FILES:
        assert (share / path.name).read_text() == path.read_text(), f'{path.name} is not installed (run ./dev setup)'


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_nodes_resolve_like_launch_ros(path):
    tree = ast.parse(path.read_text())
    assert any(isinstance(n, ast.FunctionDef) and n.name == 'generate_launch_description' for n in tree.body)
    nodes = list(node_actions(tree))
    assert nodes, 'no Node actions'
    for package, executable in nodes:
        exe = Path(get_package_prefix(package)) / 'lib' / package / executable
        assert exe.is_file() and os.access(exe, os.X_OK), f'{package}/{executable} not found at {exe}'


def test_envisat_launch_parameters_are_valid_for_their_nodes():
    """The parameters envisat_capture.launch.py derives from the scenario pass each node's own checks."""
    from hil_admittance import client_admittance_node, obsw_controller_node, servicer_admittance_node
    from hil_bringup.scenario import (client_admittance_parameters, load_scenario, obsw_parameters,
                                      servicer_admittance_parameters)
    from hil_common.params import validate

    scenario = load_scenario('envisat_capture')
    for spec, params in ((client_admittance_node.PARAMS, client_admittance_parameters(scenario)),
                         (servicer_admittance_node.PARAMS, servicer_admittance_parameters(scenario)),
                         (obsw_controller_node.PARAMS, obsw_parameters(scenario))):
        assert set(params) <= {p.name for p in spec}
        validate(spec, params)
    # The example controller built from these parameters is the one the lockstep runner uses.
    values = validate(obsw_controller_node.PARAMS, obsw_parameters(scenario))
    rule = obsw_controller_node.build_controller({**{p.name: p.default for p in obsw_controller_node.PARAMS}, **values})
    for key, value in vars(scenario.obsw).items():
        assert np.array_equal(getattr(rule.gains, key), value), key


def test_envisat_launch_has_a_replaceable_controller_slot():
    source = (LAUNCH_DIR / 'envisat_capture.launch.py').read_text()
    tree = ast.parse(source)
    declared = {call.args[0].value for call in ast.walk(tree) if isinstance(call, ast.Call)
                and getattr(call.func, 'id', None) == 'DeclareLaunchArgument'}
    if any(isinstance(c, ast.Call) and getattr(c.func, 'id', None) == 'network_argument' for c in ast.walk(tree)):
        declared.add('network')                     # hil_bringup.launch_common declares it
    assert {'use_sim', 'robot', 'network', 'controller_package', 'controller_executable'} <= declared
    slots = [call for call in ast.walk(tree) if isinstance(call, ast.Call) and getattr(call.func, 'id', None) == 'Node'
             and not isinstance({k.arg: k.value for k in call.keywords}['package'], ast.Constant)]
    assert len(slots) == 1
    # The default slot resolves to an installed executable.
    exe = Path(get_package_prefix('hil_admittance')) / 'lib' / 'hil_admittance' / 'obsw_controller_node'
    assert exe.is_file() and os.access(exe, os.X_OK)
