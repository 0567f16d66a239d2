"""`mitmdump -s` entry points. Each file is a few lines that load an addon class from mcptape; `mcptape addons`
prints their paths. This folder is installed as the package mcptape.addons (pyproject.toml), so a new script is
one new file here: `mcptape addons` lists it and a wheel carries it."""
