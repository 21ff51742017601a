"""Spacecraft dynamics rules (no rclpy): SE(3) conventions, rigid-body client and relative-to-nominal admittance after De Stefano et al. 2021 (seed 004)."""
