"""Deprecated alias of :mod:`envgym.tools.args` (moved in 0.2; this module goes in 0.3).

Importing it warns; so does every name read from it, which is then the object of :mod:`envgym.tools.args`.
"""

from envgym._deprecation import moved_module

__deprecated_alias__ = True  # the warnings point past this module, at the code that imports it
__getattr__, __dir__ = moved_module(
    __name__, "envgym.tools.args", ("ArgumentsError", "NoArgs", "args_model_of", "decode_arguments", "function_schema"),
    since="0.2", removal="0.3")
