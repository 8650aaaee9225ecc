"""Plain-Python reference implementations (oracles) for the differential tests."""
