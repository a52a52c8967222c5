"""Column layouts of YOLO prediction rows.

A constant outside :mod:`deteval.io.yolo`, so that the command line's parser reads it for its
choices without loading the YOLO readers.
"""

#: Column layouts of prediction rows.
LAYOUTS = ("cls cx cy w h conf", "cls conf cx cy w h")
