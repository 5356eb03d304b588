"""The tick engine: claim due rows, deliver their targets, commit what happened."""
