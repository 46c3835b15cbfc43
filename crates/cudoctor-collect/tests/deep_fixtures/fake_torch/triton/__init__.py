"""A stand-in for triton in cudoctor's probe tests."""

__version__ = "3.5.0"
