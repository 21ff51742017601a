"""The deterministic lockstep runners: the rule objects wired without DDS (plain Python, no rclpy)."""
