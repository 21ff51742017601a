"""Delayed force-motion teleoperation of a massive payload: delay line, virtual arm and payload, slave law (seed 001)."""
