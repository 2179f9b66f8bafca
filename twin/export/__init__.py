"""Exporters: DataTree building, NetCDF/Zarr writers (and, later, Prometheus)."""
