"""Admittance nodes: thin ROS shells over the hil_dynamics client and servicer rules (seed 004 Eqs. 11, 18, 22, 23)."""
