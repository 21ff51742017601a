"""Overrides of a scenario by dotted field path, validated by the scenario's own loader.

A campaign varies scenario fields by the path the YAML gives them
(``client.mass_kg``, ``servicer.initial_offset_in_base.translation_m.0`` for one element of
a list). :func:`apply_overrides` writes the values into a copy of the raw mapping; a path
that the scenario does not have is refused by name. :func:`load_with_overrides` then hands
the result to the scenario's own loader (``hil_bringup.scenario.load_scenario``,
``hil_teleop.scenario.load_teleop_scenario``), so an overridden value is checked exactly
like a value in the file, and the error names the field.

Overrides whose path starts with ``runner.`` are not scenario fields but knobs of the
runner adapter (F/T noise, command delay, ...): :func:`split_overrides` separates them and
:class:`Option` validates them. Plain Python, no rclpy.
"""

from __future__ import annotations

import copy
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import yaml

from hil_common.fields import Fields, ScenarioError

RUNNER_PREFIX = 'runner.'


class OverrideError(ScenarioError):
    """An override names no field of the scenario, or a runner option it does not have."""


def split_overrides(overrides: Mapping[str, Any]) -> tuple[dict, dict]:
    """``(scenario overrides, runner options)``: options are the ``runner.*`` paths, prefix removed."""
    scenario, options = {}, {}
    for path, value in overrides.items():
        if not isinstance(path, str) or not path:
            raise OverrideError(f'override path must be a non-empty string, got {path!r}')
        if path.startswith(RUNNER_PREFIX):
            options[path[len(RUNNER_PREFIX):]] = value
        else:
            scenario[path] = value
    return scenario, options


def _plain(value: Any) -> Any:
    """Numpy scalars and tuples as plain YAML values (a grid may be built with numpy)."""
    if hasattr(value, 'item') and not isinstance(value, (list, tuple, dict, str)):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def apply_overrides(raw: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict:
    """A deep copy of ``raw`` with each ``dotted.path`` set to its value.

    Every segment but the last must exist; the last must exist too (a misspelt field would
    otherwise be added and silently ignored by the loader). A numeric segment indexes a list.
    """
    out = copy.deepcopy(dict(raw))
    for path, value in overrides.items():
        parts = path.split('.')
        node: Any = out
        for depth, key in enumerate(parts):
            here = '.'.join(parts[:depth]) or 'the top level'
            last = depth == len(parts) - 1
            if isinstance(node, Mapping):
                if key not in node:
                    raise OverrideError(f"override '{path}': {here} has no field '{key}' (fields: {sorted(node)})")
                if last:
                    node[key] = _plain(value)
                else:
                    node = node[key]
            elif isinstance(node, list):
                try:
                    index = int(key)
                except ValueError:
                    raise OverrideError(f"override '{path}': {here} is a list; '{key}' is not an index") from None
                if not 0 <= index < len(node):
                    raise OverrideError(f"override '{path}': index {index} out of range, {here} has {len(node)} elements")
                if last:
                    node[index] = _plain(value)
                else:
                    node = node[index]
            else:
                raise OverrideError(f"override '{path}': {here} is a value ({node!r}), not a section")
    return out


def load_with_overrides(loader: Callable[[Path], Any], raw: Mapping[str, Any], source: str,
                        overrides: Mapping[str, Any]) -> Any:
    """Run ``loader`` on ``raw`` with ``overrides`` applied; errors name ``source`` and the field.

    The loaders read a file, so the overridden mapping is written to a temporary file named
    like the source; their messages are reworded to name the source and the overrides.
    """
    data = apply_overrides(raw, overrides)
    name = Path(source).name if source.endswith(('.yaml', '.yml')) else f'{source}.yaml'
    with tempfile.TemporaryDirectory(prefix='hil_campaign_') as tmp:
        path = Path(tmp) / name
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        try:
            return loader(path)
        except ScenarioError as exc:
            label = f'{source} (with overrides {sorted(overrides)})' if overrides else source
            raise type(exc)(str(exc).replace(str(path), label)) from None


@dataclass(frozen=True)
class Option:
    """A knob of a runner adapter (``runner.<name>`` in a campaign): a number within a range, or a bool."""

    name: str
    default: float | bool
    description: str
    min: float | None = None
    max: float | None = None

    def validate(self, value: Any, runner: str = '') -> float | bool:
        """The value checked as a scenario field is (:class:`hil_common.fields.Fields`); errors name
        ``runner.<name>``."""
        fields = Fields({self.name: _plain(value)}, f"runner '{runner}' options" if runner else 'runner options',
                        RUNNER_PREFIX.rstrip('.'))
        if isinstance(self.default, bool):
            if not isinstance(value, bool):
                raise fields.error(self.name, f'expected true/false, got {value!r}')
            return value
        return fields.number(self.name, min=self.min, max=self.max)


def resolve_options(declared: Sequence[Option], given: Mapping[str, Any], runner: str) -> dict:
    """Every declared option's value (given or default), validated; unknown names are refused."""
    known = {o.name: o for o in declared}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise OverrideError(f"override '{RUNNER_PREFIX}{unknown[0]}': runner '{runner}' has no option "
                            f"'{unknown[0]}' (options: {sorted(known)})")
    return {name: (o.validate(given[name], runner) if name in given else o.default) for name, o in known.items()}
