"""Machinery the steps and publishing share: progress lines, atomic file writes, work ahead and writes behind."""
