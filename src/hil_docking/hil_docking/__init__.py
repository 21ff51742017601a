"""Rendezvous and docking on a small robotic facility (seed 003): CW relative motion, virtual-force contact compensation, delay-stability designer, CISAS arm and its feed-forward control variants."""
