"""Force/torque sensor drivers: ATI Net F/T RDT over UDP, a simulated RDT sensor, and the wrench processing chain."""
