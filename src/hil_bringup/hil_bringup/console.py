"""What the demos print: rounded values in units chosen by magnitude, and real progress bars.

* :func:`duration` -- ``38.05 s``, ``2 min 05 s``; ``never`` for an event that did not happen;
* :func:`length`, :func:`angle`, :func:`number` -- ``1.1e-08 mm`` becomes ``11 nm``;
* :func:`Progress` -- a tqdm bar over simulated time with the real-time factor and an ETA,
  usable as a runner's ``progress(t, mission)`` callback; it also shows the OBSW phase.
"""

from __future__ import annotations

import math
import time


def number(x: float, digits: int = 3) -> str:
    """``x`` with ``digits`` significant digits, no float noise (``38.050000000000004`` -> ``38.05``)."""
    if x is None:
        return 'n/a'
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return '0'
    return f'{x:.{digits}g}'


def duration(seconds: float | None) -> str:
    """A time span or instant in s, or ``never``."""
    if seconds is None:
        return 'never'
    if abs(seconds) < 120:
        return f'{number(seconds, 4)} s'
    minutes, sec = divmod(int(round(seconds)), 60)
    return f'{minutes} min {sec:02d} s'


def _scaled(value: float, unit: str, prefixes) -> str:
    if value is None:
        return 'n/a'
    mag = abs(value)
    for factor, prefix in prefixes:
        if mag >= factor or factor == prefixes[-1][0]:
            return f'{number(value / factor)} {prefix}{unit}'
    return f'{number(value)} {unit}'


def length(metres: float | None) -> str:
    """``1.1e-08`` -> ``11 nm``; ``0.23`` -> ``230 mm``; ``5.0`` -> ``5 m``."""
    if metres == 0:
        return '0 m'
    return _scaled(metres, 'm', ((1.0, ''), (1e-3, 'm'), (1e-6, 'u'), (1e-9, 'n'), (1e-12, 'p')))


def angle(radians: float | None) -> str:
    """Radians in rad, mrad, urad, nrad by magnitude."""
    if radians == 0:
        return '0 rad'
    return _scaled(radians, 'rad', ((1.0, ''), (1e-3, 'm'), (1e-6, 'u'), (1e-9, 'n'), (1e-12, 'p')))


class Progress:
    """A progress bar over ``total_s`` of simulated time: ``with Progress('capture', 50.0) as p: run(progress=p)``.

    Called as ``p(t, mission)`` (the runners' callback): shows the simulated time, the OBSW phase
    if the mission has one, the real-time factor and the ETA.
    """

    def __init__(self, label: str, total_s: float):
        from tqdm import tqdm

        self.total_s = float(total_s)
        self.bar = tqdm(total=round(self.total_s, 3), desc=label, unit='s sim', mininterval=1.0, leave=True,
                        bar_format='{desc}: {percentage:3.0f}%|{bar:24}| {n:.1f}/{total:.0f} s simulated '
                                   '[{elapsed}<{remaining}] {postfix}')
        self.t0 = time.monotonic()
        self.last = 0.0

    def __call__(self, t: float, mission=None) -> None:
        step = min(float(t), self.total_s) - self.last
        if step <= 0:
            return
        self.last += step
        wall = time.monotonic() - self.t0
        post = {'rt': f'{self.last / wall:.1f}x' if wall > 0 else '-'}
        command = getattr(mission, 'command', None)
        if command is not None:
            post['phase'] = command.phase
        self.bar.set_postfix(post, refresh=False)
        self.bar.update(step)

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> 'Progress':
        return self

    def __exit__(self, *exc) -> None:
        self.close()
