"""MuJoCo twin of a HIL facility (client and servicer robots, hexapod, F/T sensors) exposing ros2_control-style topics and RDT/UDP sensors."""
