"""Anomaly detection (torch/autograd/anomaly_mode.py)."""

from .. import _C


class detect_anomaly:
    """Within its block, a backward error names the forward call that made the failing node,
    and a NaN gradient is an error."""

    def __init__(self, check_nan=True):
        self.prev = _C._is_anomaly_enabled()
        self.prev_check_nan = _C._is_anomaly_check_nan_enabled()
        self.check_nan = check_nan

    def __enter__(self):
        _C._set_detect_anomaly(True, self.check_nan)

    def __exit__(self, *exc):
        _C._set_detect_anomaly(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    def __init__(self, mode, check_nan=True):
        self.prev = _C._is_anomaly_enabled()
        self.prev_check_nan = _C._is_anomaly_check_nan_enabled()
        _C._set_detect_anomaly(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_detect_anomaly(self.prev, self.prev_check_nan)
