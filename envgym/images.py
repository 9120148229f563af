"""Deprecated alias of :mod:`envgym._images` (made private in 0.2: not part of the public API, see
``envgym.plugin`` and docs/stability.md; this module goes in 0.3).

Importing it warns; so does every name read from it, which is then the object of :mod:`envgym._images`.
"""

from envgym._deprecation import moved_module

__deprecated_alias__ = True  # the warnings point past this module, at the code that imports it
__getattr__, __dir__ = moved_module(
    __name__, "envgym._images",
    (
        "ImageError", "ObservedImage", "fit_image", "image_of", "image_parts", "observation_images",
    ),
    since="0.2", removal="0.3")
