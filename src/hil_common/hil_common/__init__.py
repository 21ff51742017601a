"""Shared plumbing for the HIL stack: loopback-only DDS profile, typed ROS parameter declaration, scenario loading, pytest plugin."""

from hil_common.interrupts import quiet_interrupts as _quiet_interrupts

_quiet_interrupts('hil_common')
