"""The one compiled module (streams/normalize/_fastpick.c, the extractor's record picker); everything
else is in pyproject.toml. ``optional``: without a C compiler the install still succeeds and the
pure Python path runs (tests/streams/test_fastpick.py fails then, so CI never measures it silently)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "streams.normalize._fastpick",
            ["streams/normalize/_fastpick.c"],
            extra_compile_args=["-std=c99", "-O2", "-Wall", "-Wextra"],
            optional=True,
        )
    ]
)
