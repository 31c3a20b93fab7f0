"""Machinery the steps and publishing share: progress lines, atomic file writes, work ahead, machine faults in one line."""
