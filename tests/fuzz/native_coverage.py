"""Imported by each fuzz target before inert: loads atheris's libFuzzer with its symbols
global, so that an extension built with sanitizer coverage (build_native.sh) links its
coverage hooks to it and libFuzzer is guided by the Rust core's branches. The targets
then run that same libFuzzer (``atheris.Setup(..., internal_libfuzzer=True)``). Over a
plain build it changes nothing."""

from __future__ import annotations

import os
import sys

_flags = sys.getdlopenflags()
sys.setdlopenflags(_flags | os.RTLD_GLOBAL)
# atheris ships no types (and the test extra does not install it): it reads as Any
import atheris.core_with_libfuzzer  # type: ignore[import-untyped, import-not-found, unused-ignore]  # noqa: F401

sys.setdlopenflags(_flags)
