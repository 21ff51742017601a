"""Declare a node's parameters once: type, default, range and description.

A node lists its parameters as :class:`Param` objects. :func:`declare_parameters`
declares them on an rclpy node (with ``ParameterDescriptor`` ranges, so ``ros2 param
describe`` shows them), reads the values and validates them with :func:`validate`.
A bad value raises :class:`ParameterError` whose message names the parameter; nodes let
it propagate so start-up fails loudly.

:func:`validate` is plain Python and is what the tests exercise; only
:func:`declare_parameters` touches rclpy, and it imports it lazily.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence


class ParameterError(ValueError):
    """A parameter value is invalid; the message starts with the parameter name."""


@dataclass(frozen=True)
class Param:
    """One parameter: its name, default (which fixes its type), description and limits.

    ``min``/``max`` bound a number or every element of a number array; ``length`` fixes
    the array length; ``choices`` lists the allowed strings; ``check`` is an extra
    predicate returning an error message or ``None``.
    """

    name: str
    default: Any
    description: str
    min: float | None = None
    max: float | None = None
    length: int | None = None
    choices: tuple[str, ...] | None = None
    check: Callable[[Any], str | None] | None = None
    read_only: bool = False

    @property
    def kind(self) -> type:
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


def validate(spec: Sequence[Param], values: Mapping[str, Any]) -> dict[str, Any]:
    """Validate ``values`` (missing names take their default) and return a full dict."""
    names = [p.name for p in spec]
    if len(set(names)) != len(names):
        raise TypeError(f'duplicate parameter names in {names}')
    return {p.name: validate_one(p, values.get(p.name, p.default)) for p in spec}


def declare_parameters(node, spec: Sequence[Param]) -> dict[str, Any]:
    """Declare ``spec`` on an rclpy node, read and validate the values, log them."""
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
    from rclpy.exceptions import ParameterException

    values = {}
    for p in spec:
        descriptor = ParameterDescriptor(description=p.description, read_only=p.read_only)
        if p.kind in (int, float) and (p.min is not None or p.max is not None):
            lo = -math.inf if p.min is None else p.min
            hi = math.inf if p.max is None else p.max
            if p.kind is int:
                descriptor.integer_range = [IntegerRange(from_value=int(max(lo, -2**63)), to_value=int(min(hi, 2**63 - 1)))]
            else:
                descriptor.floating_point_range = [FloatingPointRange(from_value=float(lo), to_value=float(hi))]
        default = [float(v) for v in p.default] if p.kind is list and p.element_kind() is float else p.default
        try:
            node.declare_parameter(p.name, default, descriptor)
        except ParameterException as exc:  # out of the descriptor range, wrong type...
            reason = str(exc).splitlines()[0]
            raise ParameterError(f"parameter '{p.name}': {reason}") from exc
        values[p.name] = node.get_parameter(p.name).value
    checked = validate(spec, values)
    for name, value in checked.items():
        node.get_logger().info(f'parameter {name} = {value!r}')
    return checked
