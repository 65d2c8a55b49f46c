"""Pillow's `Image.show()` shows the image in the cell.

Pillow hands an image to the first viewer it knows: `xdg-open` wherever
that is installed (R's packages bring it, for one), an IPython display only
after it. A kernel has no desktop to open a window on, so cellbox's viewer
goes first and displays the image as the cell's output, as a Jupyter kernel
on a machine without `xdg-open` does. Nothing happens until Pillow is used.
"""
from . import display, import_hooks


def _register(image_show):
    class CellViewer(image_show.Viewer):
        # Pillow converts modes PNG cannot hold before `show_image`.
        format = "PNG"

        def show_image(self, image, **options):
            display.display(image)
            return 1

    image_show.register(CellViewer, -1)


def install():
    import_hooks.on_import("PIL.ImageShow", _register)
