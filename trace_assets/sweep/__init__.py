"""Watching a sweep: the sensor's plan (which scopes to list, which settled) and the sweep view (each scope's state)."""
