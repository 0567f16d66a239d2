"""`mitmdump -s` entry points. Each file is a few lines that load an addon class from mcptape; `mcptape addons`
prints their paths."""
