"""Campaigns over the lockstep runners on Dask distributed (issue 14)."""
