"""Snare-wire capture simulators of seeds 000 (HTV/SSRMS) and 002 (JEMRMS): rules and lockstep runners."""
