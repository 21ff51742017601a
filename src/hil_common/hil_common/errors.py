"""The stack's exception hierarchy (pink style: one root, a few kinds a caller can tell apart).

* :class:`HilError` -- the root: ``except HilError`` catches every error the stack raises on
  purpose, and nothing else (a bug stays a bug);
* :class:`ConfigError` -- a parameter, scenario field, facility field, launch argument or
  campaign field is invalid; the message names it (``hil_common.params.ParameterError``,
  ``hil_common.fields.ScenarioError``, ``hil_bringup.graphs.GraphError`` are kinds of it);
* :class:`SensorFault` -- a sensor's data cannot be used (malformed RDT record, bad calibration);
* :class:`Unreachable` -- a pose a robot cannot reach, or a command a robot refuses;
* :class:`StartError` -- a graph, a node or a recording could not start or finish.

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


class Unreachable(HilError, ValueError):
    """A pose outside a robot's reach, or a command the robot refuses."""


class StartError(HilError, RuntimeError):
    """A graph, node or recording that could not start (or be finalised)."""
