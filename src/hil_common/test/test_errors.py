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
