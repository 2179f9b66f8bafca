"""Thermal network assembly and integrators."""
