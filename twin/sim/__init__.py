"""The driver: build a system from a scenario, step it through time, record."""
