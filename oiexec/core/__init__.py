"""The bottom layer: values, events, errors and protocols that cross the seams.

Every other package may import from here; nothing here imports from the rest of oiexec.
"""
