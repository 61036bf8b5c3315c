"""The cockpit's panels, one widget per module."""
