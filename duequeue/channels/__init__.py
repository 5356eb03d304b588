"""Delivery channels: each sends one message to one target and returns an Outcome."""
