import pathlib

from setuptools import find_packages, setup

here = pathlib.Path(__file__).parent.resolve()
long_description = (here / "README.md").read_text(encoding="utf-8")

setup(
    name="metro-client",
    version="1.6.0",
    description="A client library for accessing METRO training service, and its `metro` command line",
    long_description=long_description,
    long_description_content_type="text/markdown",
    packages=find_packages(),
    python_requires=">=3.11, <4",
    install_requires=[
        "httpx >= 0.23.1, < 0.29.0",
        "attrs >= 22.2.0",
        # metro_cli, the `metro` command line (hand-written; clients/generate.py keeps it)
        # below 0.29, which shows every flag with a "<bool>" value (`--json <bool>`, `--help
        # <bool>`) the flag does not take
        "typer >= 0.19.1, < 0.29",
        "rich >= 13",
        "pyyaml >= 6",
    ],
    # openapi.json: the API's document, which the `metro` command builds its job flags from
    package_data={"metro_client": ["py.typed", "openapi.json"], "metro_cli": ["py.typed"]},
    # The server's package adds its commands (serve, worker, admin, ...) to this one through the
    # "metro.cli" entry-point group; it declares no `metro` script of its own.
    entry_points={"console_scripts": ["metro = metro_cli.app:main"]},
)
