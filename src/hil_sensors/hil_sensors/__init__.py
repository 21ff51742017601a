"""Force/torque sensor drivers: ATI Net F/T RDT over UDP, a simulated RDT sensor, and the wrench processing chain."""

from hil_common.interrupts import quiet_interrupts as _quiet_interrupts

_quiet_interrupts('hil_sensors')
