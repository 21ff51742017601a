"""Declare a node's parameters once: type, default, range, description, and whether they can change.

A node lists its parameters as :class:`Param` objects in one module-level list named
``PARAMS`` (the schema). :func:`declare_parameters` declares them on an rclpy node (with
``ParameterDescriptor`` ranges, so ``ros2 param describe`` shows them), reads the values,
validates them with :func:`validate` and returns a frozen, typed :class:`ParamValues`
(``p.rate_hz``; ``p['rate_hz']`` still works). A bad value raises :class:`ParameterError`
whose message names the parameter; nodes let it propagate so start-up fails loudly. So do:

* a parameter given to the node that its schema does not declare (``masss_kg``), named
  with the closest known name;
* a required parameter (``default=REQUIRED``, with an explicit ``type``) that was not given.

An integer given for a double parameter (``mass_kg: 7828`` in YAML, ``-p mass_kg:=7828``)
is accepted as that double. Parameters are structural (``read_only`` in ROS: a set at run
time is refused with ROS's reason "Trying to set a read-only parameter") unless declared
``tunable=True``; a tunable one is validated and handed to the node's ``on_set`` callback,
which applies it or returns the reason it is refused. Nothing is accepted and ignored.

:func:`validate` is plain Python and is what the tests exercise; only
:func:`declare_parameters` touches rclpy, and it imports it lazily. The model is
generate_parameter_library's YAML (``read_only``, ``fixed_size<>``, ``bounds<>``).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import FrozenInstanceError, dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence
from hil_common.errors import ConfigError


class ParameterError(ConfigError):
    """A parameter value is invalid; the message starts with the parameter name."""


class _Required:
    def __repr__(self) -> str:
        return 'REQUIRED'


#: ``default`` of a parameter that has none: start-up fails when it is not given.
REQUIRED = _Required()

#: Explicit parameter types (``Param(type=...)``), ROS's types under Python names.
TYPES: dict[str, tuple[type, type | None]] = {
    'bool': (bool, None), 'int': (int, None), 'float': (float, None), 'str': (str, None),
    'bool[]': (list, bool), 'int[]': (list, int), 'float[]': (list, float), 'str[]': (list, str),
}


@dataclass(frozen=True)
class Param:
    """One parameter: its name, default, description and limits.

    The type is ``type`` (a key of :data:`TYPES`, e.g. ``'float'``, ``'str[]'``) or, if not
    given, taken from the default. ``default=REQUIRED`` (with a ``type``) makes the
    parameter required. ``min``/``max`` bound a number or every element of a number array;
    ``length`` fixes the array length; ``choices`` lists the allowed strings; ``check`` is
    an extra predicate returning an error message or ``None``. ``tunable`` parameters may
    be set at run time (the node applies them); all others are read-only.
    """

    name: str
    default: Any
    description: str
    min: float | None = None
    max: float | None = None
    length: int | None = None
    choices: tuple[str, ...] | None = None
    check: Callable[[Any], str | None] | None = None
    read_only: bool = True          # kept for old callers; every non-tunable parameter is read-only
    type: str | None = None
    tunable: bool = False

    def __post_init__(self):
        if self.type is not None and self.type not in TYPES:
            raise TypeError(f'parameter {self.name!r}: type {self.type!r} is not one of {list(TYPES)}')
        if self.required and self.type is None:
            raise TypeError(f'parameter {self.name!r}: a required parameter needs an explicit type')
        self.kind  # noqa: B018 - fails early on a default whose type cannot be inferred

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def kind(self) -> type:
        if self.type is not None:
            return TYPES[self.type][0]
        if isinstance(self.default, bool):
            return bool
        if isinstance(self.default, int):
            return int
        if isinstance(self.default, float):
            return float
        if isinstance(self.default, str):
            return str
        if isinstance(self.default, (list, tuple)):
            if not self.default:
                raise TypeError(f'parameter {self.name!r}: an array default must not be empty (its type is taken from it)')
            return list
        raise TypeError(f'parameter {self.name!r}: unsupported default type {type(self.default).__name__}')

    def element_kind(self) -> type:
        if self.type is not None:
            return TYPES[self.type][1]
        first = self.default[0]
        if isinstance(first, bool):
            return bool
        if isinstance(first, int) and not all(isinstance(v, int) for v in self.default):
            return float
        return type(first)


def _check_number(p: Param, value: float, where: str = '') -> None:
    if not math.isfinite(value):
        raise ParameterError(f"parameter '{p.name}'{where}: {value!r} is not finite")
    if p.min is not None and value < p.min:
        raise ParameterError(f"parameter '{p.name}'{where}: {value!r} is below the minimum {p.min!r}")
    if p.max is not None and value > p.max:
        raise ParameterError(f"parameter '{p.name}'{where}: {value!r} is above the maximum {p.max!r}")


def validate_one(p: Param, value: Any) -> Any:
    """Check one value against its declaration and return it in canonical form."""
    kind = p.kind
    if kind is bool:
        if not isinstance(value, bool):
            raise ParameterError(f"parameter '{p.name}': expected true/false, got {value!r}")
    elif kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParameterError(f"parameter '{p.name}': expected a number, got {value!r}")
        if kind is int and not float(value).is_integer():
            raise ParameterError(f"parameter '{p.name}': expected an integer, got {value!r}")
        value = kind(value)
        _check_number(p, value)
    elif kind is str:
        if not isinstance(value, str):
            raise ParameterError(f"parameter '{p.name}': expected a string, got {value!r}")
        if p.choices is not None and value not in p.choices:
            raise ParameterError(f"parameter '{p.name}': {value!r} is not one of {list(p.choices)}")
    else:
        if isinstance(value, (str, bytes)) or not hasattr(value, '__len__'):
            raise ParameterError(f"parameter '{p.name}': expected an array, got {value!r}")
        value = list(value)
        if p.length is not None and len(value) != p.length:
            raise ParameterError(f"parameter '{p.name}': expected {p.length} elements, got {len(value)}")
        ek = p.element_kind()
        if ek in (int, float):
            out = []
            for i, v in enumerate(value):
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise ParameterError(f"parameter '{p.name}'[{i}]: expected a number, got {v!r}")
                _check_number(p, float(v), f'[{i}]')
                out.append(ek(v))
            value = out
    if p.check is not None:
        message = p.check(value)
        if message:
            raise ParameterError(f"parameter '{p.name}': {message}")
    return value


def unknown_error(unknown: Sequence[str], known: Sequence[str]) -> ParameterError:
    """The error for parameters a schema does not declare, naming the first and its closest known name."""
    name = sorted(unknown)[0]
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ''
    more = f' (and {len(unknown) - 1} more: {sorted(unknown)[1:]})' if len(unknown) > 1 else ''
    return ParameterError(f"parameter '{name}': unknown parameter, this node does not declare it{hint}{more}")


def validate(spec: Sequence[Param], values: Mapping[str, Any]) -> dict[str, Any]:
    """Validate ``values`` (missing names take their default) and return a full dict.

    A name in ``values`` that ``spec`` does not declare, or a missing required one, is an error.
    """
    names = [p.name for p in spec]
    if len(set(names)) != len(names):
        raise TypeError(f'duplicate parameter names in {names}')
    unknown = set(values) - set(names)
    if unknown:
        raise unknown_error(sorted(unknown), names)
    out = {}
    for p in spec:
        value = values.get(p.name, p.default)
        if value is REQUIRED or value is None and p.required:
            raise ParameterError(f"parameter '{p.name}': is required and was not given")
        out[p.name] = validate_one(p, value)
    return out


class ParamValues(Mapping):
    """A node's validated parameters, frozen and typed: ``p.rate_hz`` (``p['rate_hz']`` too).

    Arrays are tuples. A dotted name (``low_pass.cutoff_hz``) is read as ``p['low_pass.cutoff_hz']``
    or ``p.low_pass.cutoff_hz``.
    """

    __slots__ = ('_values', '_prefix')

    def __init__(self, values: Mapping[str, Any], _prefix: str = ''):
        frozen = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
        object.__setattr__(self, '_values', frozen)
        object.__setattr__(self, '_prefix', _prefix)

    def __getattr__(self, name: str) -> Any:
        full = self._prefix + name
        values = object.__getattribute__(self, '_values')
        if full in values:
            return values[full]
        if any(k.startswith(full + '.') for k in values):
            return ParamValues(values, full + '.')
        raise AttributeError(f"no parameter '{full}'")

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"parameters are read-only here: cannot set '{name}'")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"parameters are read-only here: cannot delete '{name}'")

    def __getitem__(self, name: str) -> Any:
        return self._values[self._prefix + name]

    def __iter__(self) -> Iterator[str]:
        n = len(self._prefix)
        return (k[n:] for k in self._values if k.startswith(self._prefix))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f'ParamValues({dict(self)!r})'

    def replace(self, **changes: Any) -> 'ParamValues':
        """A copy with some values changed (e.g. a tunable one the node has just applied)."""
        missing = set(changes) - set(self)
        if missing:
            raise KeyError(f'no parameter {sorted(missing)[0]!r}')
        return ParamValues({**self._values, **{self._prefix + k: v for k, v in changes.items()}})


_ROS_TYPE_NAMES = {'bool': 'BOOL', 'int': 'INTEGER', 'float': 'DOUBLE', 'str': 'STRING', 'bool[]': 'BOOL_ARRAY',
                   'int[]': 'INTEGER_ARRAY', 'float[]': 'DOUBLE_ARRAY', 'str[]': 'STRING_ARRAY'}


def _type_key(p: Param) -> str:
    if p.type is not None:
        return p.type
    kind = p.kind
    if kind is list:
        return {bool: 'bool[]', int: 'int[]', float: 'float[]', str: 'str[]'}[p.element_kind()]
    return {bool: 'bool', int: 'int', float: 'float', str: 'str'}[kind]


def _integers_as_doubles(p: Param, value):
    """An integer (or integer array) given for a double (array) parameter, as doubles; else None."""
    key = _type_key(p)
    if key == 'float' and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if key == 'float[]' and not isinstance(value, (str, bytes)) and hasattr(value, '__len__') and len(value) and \
            all(isinstance(v, int) and not isinstance(v, bool) for v in value):    # list, or array('q') from a message
        return [float(v) for v in value]
    return None


def declare_parameters(node, spec: Sequence[Param], *, on_set: Callable[[str, Any], str | None] | None = None,
                       check_unknown: bool = True) -> ParamValues:
    """Declare ``spec`` on an rclpy node, read and validate the values, log them.

    Returns a frozen :class:`ParamValues`. Raises :class:`ParameterError` for a bad or missing
    value and (with ``check_unknown``, the default; pass ``False`` only if the node declares more
    parameters afterwards) for a parameter given to the node that ``spec`` does not declare.
    Non-tunable parameters are declared read-only. Tunable ones need ``on_set(name, value)``,
    called with the validated value when one is set at run time; it returns ``None`` once the
    value is applied, or the reason it is refused.
    """
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
    from rclpy.exceptions import ParameterException, ParameterUninitializedException
    from rclpy.parameter import Parameter

    tunable = {p.name: p for p in spec if p.tunable}
    if tunable and on_set is None:
        raise TypeError(f'tunable parameters {sorted(tunable)} need an on_set callback that applies them')
    overrides = node._parameter_overrides   # what -p and --params-file gave (rclpy keeps no public copy)
    values = {}
    for p in spec:
        descriptor = ParameterDescriptor(description=p.description, read_only=not p.tunable)
        if p.kind in (int, float) and (p.min is not None or p.max is not None):
            lo = -math.inf if p.min is None else p.min
            hi = math.inf if p.max is None else p.max
            if p.kind is int:
                descriptor.integer_range = [IntegerRange(from_value=int(max(lo, -2**63)), to_value=int(min(hi, 2**63 - 1)))]
            else:
                descriptor.floating_point_range = [FloatingPointRange(from_value=float(lo), to_value=float(hi))]
        given = overrides.get(p.name)
        if given is not None and (as_double := _integers_as_doubles(p, given.value)) is not None:
            overrides[p.name] = Parameter(p.name, value=as_double)
        ptype = getattr(Parameter.Type, _ROS_TYPE_NAMES[_type_key(p)])
        by_type = p.required or (p.kind is list and len(p.default) == 0)
        if by_type:
            default = ptype
        elif p.kind is list and p.element_kind() is float:
            default = [float(v) for v in p.default]
        elif p.kind is float:
            default = float(p.default)
        else:
            default = p.default
        try:
            node.declare_parameter(p.name, default, descriptor)
        except (ParameterException, TypeError, ValueError) as exc:  # out of the descriptor range, wrong type...
            reason = str(exc).splitlines()[0]
            raise ParameterError(f"parameter '{p.name}': {reason}") from exc
        try:
            value = node.get_parameter(p.name).value
        except ParameterUninitializedException:   # declared by type and not given
            value = None
        if value is None and by_type and not p.required:
            value = list(p.default)
        values[p.name] = REQUIRED if value is None else value
    if check_unknown:
        unknown = [n for n in overrides if not node.has_parameter(n) and not n.startswith('qos_overrides.')]
        if unknown:
            raise unknown_error(unknown, [p.name for p in spec])
    checked = validate(spec, values)
    for name, value in checked.items():
        node.get_logger().info(f'parameter {name} = {value!r}')

    if tunable:
        def convert(parameters):
            out = []
            for param in parameters:
                p = tunable.get(param.name)
                as_double = _integers_as_doubles(p, param.value) if p is not None else None
                out.append(Parameter(param.name, value=as_double) if as_double is not None else param)
            return out

        def apply(parameters):
            for param in parameters:
                p = tunable.get(param.name)
                if p is None:
                    continue
                try:
                    reason = on_set(p.name, validate_one(p, param.value))
                except ParameterError as exc:
                    reason = str(exc)
                if reason:
                    return SetParametersResult(successful=False, reason=reason)
                node.get_logger().info(f'parameter {p.name} set to {param.value!r}')
            return SetParametersResult(successful=True)

        node.add_pre_set_parameters_callback(convert)
        node.add_on_set_parameters_callback(apply)
    return ParamValues(checked)
