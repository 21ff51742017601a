"""hil_common.kernel_loads: the kernels a process loaded after its start-up are named, and found again in its output."""

import sys
import types

import numpy as np
from numba import njit

from hil_common.kernel_loads import LATE_MARK, KernelLoads, late_kernels, report


def _module_with_a_kernel(name):
    mod = types.ModuleType(name)

    def twice(x):
        return 2.0 * x
    twice.__module__ = name
    mod.twice = njit(twice)
    sys.modules[name] = mod
    return mod


def test_a_kernel_called_with_a_new_signature_after_the_snapshot_is_named_and_reported():
    mod = _module_with_a_kernel('hil_test_kernel_loads_mod')
    try:
        assert mod.twice(1.0) == 2.0                        # float64: loaded before the snapshot
        loads = KernelLoads()
        mod.twice(3.0)                                      # the same signature: no load
        assert loads.since() == [] and report('node', loads) is None
        mod.twice(np.arange(3.0))                           # a new signature: a compilation after the snapshot
        assert loads.since() == ['hil_test_kernel_loads_mod.twice']
        line = report('node', loads)
        assert line.startswith('[WARN] [node]: ') and LATE_MARK in line
        output = f'[INFO] [1.0] [node]: started\n{line}\n[INFO] [2.0] [node]: other: text\n'
        assert late_kernels(output) == ['hil_test_kernel_loads_mod.twice']
        assert late_kernels('[INFO] [1.0] [node]: started\n') == []
    finally:
        del sys.modules['hil_test_kernel_loads_mod']


def test_kernels_outside_our_packages_are_not_watched():
    name = 'other_pkg_kernel_loads_mod'
    mod = _module_with_a_kernel(name)
    try:
        loads = KernelLoads()
        mod.twice(1.0)
        assert loads.since() == []
    finally:
        del sys.modules[name]
