"""Motion-table node: streams commanded poses to serial or parallel (hexapod) robots through ros2_control controller topics."""

from hil_common.interrupts import quiet_interrupts as _quiet_interrupts

_quiet_interrupts('hil_motion_table')
