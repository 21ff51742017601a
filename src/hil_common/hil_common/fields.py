"""Read fields of a scenario YAML with errors that name the file and the field.

Scenarios are nested mappings (``client.inertia_kgm2``). :class:`Fields` wraps one and
offers typed getters; every failure raises :class:`ScenarioError` naming the dotted
path of the field, so a lab engineer can fix the YAML without reading code.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml
from hil_common.errors import ConfigError


class ScenarioError(ConfigError):
    """A scenario file or one of its fields is invalid."""


class Fields:
    """Typed, path-aware access to a nested mapping loaded from YAML."""

    def __init__(self, data: Mapping[str, Any], source: str = '<scenario>', prefix: str = ''):
        if not isinstance(data, Mapping):
            raise ScenarioError(f'{source}: {prefix or "top level"} must be a mapping, got {type(data).__name__}')
        self.data = data
        self.source = source
        self.prefix = prefix

    @classmethod
    def load(cls, path: str | Path) -> 'Fields':
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise ScenarioError(f'{path}: cannot read scenario ({exc.strerror})') from exc
        except yaml.YAMLError as exc:
            raise ScenarioError(f'{path}: not valid YAML ({exc})') from exc
        return cls(data if data is not None else {}, str(path))

    def path_of(self, key: str) -> str:
        """The dotted name of a field of this section, as errors name it."""
        return f'{self.prefix}.{key}' if self.prefix else key

    def error(self, key: str, message: str) -> ScenarioError:
        return ScenarioError(f"{self.source}: field '{self.path_of(key)}': {message}")

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str, default: Any) -> Any:
        """A field's value as the file holds it, unchecked (``default`` if absent)."""
        if key in self.data:
            return self.data[key]
        if default is _REQUIRED:
            raise self.error(key, 'is missing')
        return default

    def refuse_unknown(self, known: Sequence[str]) -> None:
        """Raise :class:`ScenarioError` naming the first key not in ``known`` (a misspelt
        section or field would otherwise be ignored silently)."""
        import difflib

        unknown = sorted(set(self.data) - set(known), key=str)
        if unknown:
            key = str(unknown[0])
            close = difflib.get_close_matches(key, [str(k) for k in known], n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ''
            raise self.error(key, f'is not a known {"field" if self.prefix else "top-level key"}'
                                  f' (known: {sorted(known)}){hint}')

    def section(self, key: str) -> 'Fields':
        return Fields(self.raw(key, _REQUIRED), self.source, self.path_of(key))

    def number(self, key: str, default: Any = None, *, min: float | None = None, max: float | None = None,
               positive: bool = False) -> float:
        value = self.raw(key, _REQUIRED if default is None else default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f'expected a number, got {value!r}')
        value = float(value)
        if not math.isfinite(value):
            raise self.error(key, f'{value!r} is not finite')
        if positive and value <= 0.0:
            raise self.error(key, f'must be > 0, got {value!r}')
        if min is not None and value < min:
            raise self.error(key, f'{value!r} is below the minimum {min!r}')
        if max is not None and value > max:
            raise self.error(key, f'{value!r} is above the maximum {max!r}')
        return value

    def vector(self, key: str, length: int, default: Sequence[float] | None = None) -> list[float]:
        value = self.raw(key, _REQUIRED if default is None else list(default))
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise self.error(key, f'expected a list of {length} numbers, got {value!r}')
        if len(value) != length:
            raise self.error(key, f'expected {length} numbers, got {len(value)}')
        out = []
        for i, v in enumerate(value):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
                raise self.error(key, f'element {i} must be a finite number, got {v!r}')
            out.append(float(v))
        return out

    def string(self, key: str, default: str | None = None, choices: Sequence[str] | None = None) -> str:
        value = self.raw(key, _REQUIRED if default is None else default)
        if not isinstance(value, str):
            raise self.error(key, f'expected a string, got {value!r}')
        if choices is not None and value not in choices:
            raise self.error(key, f'{value!r} is not one of {list(choices)}')
        return value


_REQUIRED = object()


def shipped_file(package: str, folder: str, name: str, source_root: Path, kind: str = 'file',
                 error: type = ScenarioError) -> Path:
    """``<share>/<package>/<folder>/<name>.yaml`` of an installed package, else the same file in its
    source tree (``source_root``: the package folder); ``error`` (naming the places looked in) if neither."""
    candidates = []
    try:
        from ament_index_python.packages import get_package_share_directory

        candidates.append(Path(get_package_share_directory(package)) / folder / f'{name}.yaml')
    except Exception:  # noqa: BLE001 - not installed through ament: use the source tree
        pass
    candidates.append(Path(source_root) / folder / f'{name}.yaml')
    for path in candidates:
        if path.is_file():
            return path
    raise error(f"{kind} '{name}' not found (looked in: {', '.join(map(str, candidates))})")
