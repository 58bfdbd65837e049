"""The package list of the mlconv distribution, found rather than written down.

The checkout's root is the `mlconv` package (`package_dir={"mlconv": "."}`), which
`[tool.setuptools.packages.find]` cannot express (it would find `dialects`, not
`mlconv.dialects`), so every folder with an `__init__.py` is found here and prefixed: a new
subpackage is in the wheel without anyone listing it. Folders without one (test/, bench/,
docs/, examples/) are not packages and stay out. Everything else is in pyproject.toml;
test/pytest/test_wheel.py checks the built wheel against the checkout.
"""

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

SUBPACKAGES = find_packages(where=".", exclude=["build", "build.*", "dist", "dist.*"])


class BuildPy(build_py):
    """build_py without this file: it sits in the root folder, which is the `mlconv` package."""

    def find_package_modules(self, package, package_dir):
        modules = super().find_package_modules(package, package_dir)
        return [m for m in modules if (m[0], m[1]) != ("mlconv", "setup")]


setup(
    package_dir={"mlconv": "."},
    packages=["mlconv", *(f"mlconv.{name}" for name in SUBPACKAGES)],
    cmdclass={"build_py": BuildPy},
)
