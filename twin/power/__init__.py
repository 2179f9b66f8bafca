"""Power models as pure functions of arrays: devices, power shelves, governors."""
