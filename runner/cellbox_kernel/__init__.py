"""The cellbox kernel runner: protocol, output capture, execution and display.

Only the Python standard library is used, and the code stays 3.8-compatible.
"""
