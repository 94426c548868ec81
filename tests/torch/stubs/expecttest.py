"""Stands in for the expecttest package, which Debian 12 does not ship but PyTorch's test
helpers import (torch.testing._internal.common_utils). Nothing here uses its features."""
import unittest

ACCEPT = False


class TestCase(unittest.TestCase):
    pass
