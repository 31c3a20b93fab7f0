"""Orchestration: a scope's run of the steps and publishing, and the options it derives from the settings."""
