"""Builders and helpers that several test modules share (no tests here): a test module imports
from the package, from these modules and from fixtures, never from another test module."""
