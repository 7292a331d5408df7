"""The Coq toolchains the Coq tests run on: the host's, every toolchain built, and
debian13 (which `make test` builds) as a skipped case saying how to build it where it is
not."""

import pytest

from proofeval.provers.coq.toolchain import data_dir, installed

CHAINS = [
    "host",
    *installed(),
    *[
        pytest.param(name, marks=pytest.mark.skip(reason=f"the Coq toolchain {name} is not "
                     f"built at {data_dir()}: `proofeval toolchain add {name}`"))
        for name in ["debian13"] if name not in installed()
    ],
]  # fmt: skip
