"""Build of the optional C extension; every other piece of metadata is in pyproject.toml.

``deteval.io._colparse`` (plain C and the CPython API, no other build dependency) parses COCO
box-results files into columns. It is optional: when no C compiler is available the build of the
extension fails quietly and deteval uses its pure-Python/numpy path, which gives the same numbers.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "deteval.io._colparse",
            sources=["deteval/io/_colparse.c"],
            optional=True,
        )
    ]
)
