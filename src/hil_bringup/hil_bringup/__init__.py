"""Launch files, mission scenarios and the demo entry points of the HIL stack."""
