"""The engine suite (run.sh): a package, so that its conftest.py and modules do not shadow the Python
suite's own (both folders are collected when bindings/python/tests is)."""
