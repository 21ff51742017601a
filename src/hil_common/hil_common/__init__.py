"""Shared plumbing for the HIL stack: loopback-only DDS profile, typed ROS parameter declaration, scenario loading, pytest plugin."""
