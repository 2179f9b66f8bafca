"""Workload engine: what each device is asked to do."""
