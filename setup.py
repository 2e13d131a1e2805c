"""Build configuration beyond pyproject.toml: the optional C accelerator.

``spillscope._native`` (src/spillscope/_native.c) speeds up the transcript search and
index; ``optional=True`` lets an install without a compiler succeed, and the pure-Python
path (identical results) is then used.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "spillscope._native",
            sources=["src/spillscope/_native.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
