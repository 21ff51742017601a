"""One exception hierarchy: every error the stack raises on purpose is a HilError of a kind a caller can tell apart."""

import pytest

from hil_common.errors import ConfigError, HilError, SensorFault, StartError, Unreachable


def test_the_stack_s_errors_are_kinds_of_hil_error_and_keep_their_builtin_bases():
    from hil_bringup.bag import BagError
    from hil_bringup.graph_runner import GraphStartError
    from hil_bringup.graphs import GraphError
    from hil_common.fields import ScenarioError
    from hil_common.params import ParameterError
    from hil_lab_twin.servo import CommandRejected
    from hil_sensors.rdt import CalibrationError, RdtFormatError

    for cls, kind, builtin in ((ParameterError, ConfigError, ValueError), (ScenarioError, ConfigError, ValueError),
                               (GraphError, ConfigError, ValueError), (RdtFormatError, SensorFault, ValueError),
                               (CalibrationError, SensorFault, ValueError), (CommandRejected, Unreachable, ValueError),
                               (GraphStartError, StartError, RuntimeError), (BagError, StartError, RuntimeError)):
        assert issubclass(cls, kind) and issubclass(cls, HilError) and issubclass(cls, builtin), cls


def test_a_bad_launch_argument_is_caught_as_a_config_error_naming_it():
    from hil_bringup.graphs import envisat_graph

    with pytest.raises(ConfigError, match='robot'):
        envisat_graph({'robot': 'ur5'})


def test_no_module_of_the_stack_raises_a_bare_value_or_runtime_error():
    """Every purposeful raise in src/ is a HilError kind (a caller can catch the stack's errors, and only them).

    The scan reads the source with ``ast``: a ``raise ValueError(...)`` or ``raise RuntimeError(...)`` in
    any non-test module fails it, naming the file and line. (``TypeError``/``KeyError`` stay: they are
    programming errors in a schema or a name lookup, and a bug should stay a bug.)
    """
    import ast
    from pathlib import Path

    src = Path(__file__).resolve().parents[2]
    offenders, scanned = [], 0
    for path in sorted(src.glob('hil_*/hil_*/**/*.py')):
        scanned += 1
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and \
                    isinstance(node.exc.func, ast.Name) and node.exc.func.id in ('ValueError', 'RuntimeError', 'Exception'):
                offenders.append(f'{path.relative_to(src)}:{node.lineno} raises {node.exc.func.id}')
    assert scanned > 100, f'the scan found only {scanned} modules under {src}'
    assert not offenders, '\n'.join(offenders)


def test_run_time_kinds_reach_the_caller_from_the_rules():
    from hil_common.errors import InputError, SimulationFailed
    from hil_dynamics.client import ClientAdmittance
    from hil_dynamics.rigid_body import RigidBody
    from hil_snare.runner import IntegrationDiverged

    with pytest.raises(ConfigError, match='mass_kg'):
        RigidBody(-1.0, (1.0, 1.0, 1.0))
    assert issubclass(IntegrationDiverged, SimulationFailed) and issubclass(SimulationFailed, RuntimeError)
    assert issubclass(InputError, HilError) and issubclass(InputError, ValueError)
    rule = ClientAdmittance(RigidBody(1000.0, (100.0, 120.0, 140.0)), [0.0] * 6)
    with pytest.raises(InputError, match='finite'):
        rule.step([float('nan')] + [0.0] * 5, 0.01)
