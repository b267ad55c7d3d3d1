import os

import numpy as np
import pytest
from hypothesis import settings

# CI runs a fixed set of examples so a red run can be reproduced; locally they vary.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
