"""The stack's exception hierarchy (pink style: one root, a few kinds a caller can tell apart).

* :class:`HilError` -- the root: ``except HilError`` catches every error the stack raises on
  purpose, and nothing else (a bug stays a bug);
* :class:`ConfigError` -- a parameter, scenario field, facility field, launch argument or
  campaign field is invalid; the message names it (``hil_common.params.ParameterError``,
  ``hil_common.fields.ScenarioError``, ``hil_bringup.graphs.GraphError`` are kinds of it);
* :class:`SensorFault` -- a sensor's data cannot be used (malformed RDT record, bad calibration);
* :class:`InputError` -- a value handed to a rule at run time cannot be used (a non-finite wrench
  or pose, measured joints of the wrong size, a call out of sequence); the rule refuses it whole;
* :class:`Unreachable` -- a pose a robot cannot reach, a singular configuration, a command a robot refuses;
* :class:`StartError` -- a graph, a node or a recording could not start or finish;
* :class:`SimulationFailed` -- a simulation or a search did not reach its result: it diverged, no
  stable mass was found, the robot never left contact.

The kinds that were ``ValueError`` or ``RuntimeError`` before stay subclasses of them, so
existing ``except ValueError`` callers keep working.
"""

from __future__ import annotations


class HilError(Exception):
    """Root of every error the HIL stack raises on purpose."""


class ConfigError(HilError, ValueError):
    """An invalid parameter, scenario or calibration field, launch argument or campaign field (named)."""


class SensorFault(HilError, ValueError):
    """Sensor data that cannot be used: a malformed record, an impossible calibration."""


class InputError(HilError, ValueError):
    """A run-time value a rule cannot use (non-finite, wrong size, out of sequence), refused whole."""


class Unreachable(HilError, ValueError):
    """A pose outside a robot's reach, or a command the robot refuses."""


class StartError(HilError, RuntimeError):
    """A graph, node or recording that could not start (or be finalised)."""


class SimulationFailed(HilError, RuntimeError):
    """A simulation or search that did not reach its result (diverged, no stable value found)."""
