"""Machinery the steps and publishing share: progress lines, atomic file writes, work ahead, worker
processes, the file lock, machine faults in one line."""
