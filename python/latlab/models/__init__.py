"""Closed-form and Monte-Carlo models that sit beside the simulator."""
