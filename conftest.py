"""Hypothesis profiles shared by every package's tests: `ci` (the default, bounded
so a fresh build plus the suite stays within minutes on 2 cores) and `long`."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=1000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
