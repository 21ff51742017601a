"""Motion-table node: streams commanded poses to serial or parallel (hexapod) robots through ros2_control controller topics."""
