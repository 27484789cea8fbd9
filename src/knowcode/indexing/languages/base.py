"""What a language contributes to parsing: its grammar, file names and one tree-sitter query.

The query names its captures by convention, so the parser needs no per-language code:

- ``@definition.<kind>`` wraps a definition node; ``<kind>`` is an :class:`EntityKind` value
  (``class``, ``struct``, ``interface``, ``trait``, ``enum``, ``type``, ``function``, ``method``,
  ``module`` for namespaces). ``@name`` in the same match is its name. A ``function`` nested in a
  class-like entity becomes a ``method``. An optional ``@receiver`` names the type a method belongs to
  when it is declared outside that type (Go receivers, Rust ``impl`` blocks).
- ``@reference.call`` wraps a call site; ``@name`` is the callee name and an optional ``@receiver``
  the object it is called on (``self``, ``this``, a module alias, ...).
- ``@reference.inherits`` wraps the list of bases inside a type definition; each ``@name`` is a base.
- ``@reference.import`` wraps an import; ``@import.module`` is the module path as written and the
  optional ``@import.name`` / ``@import.alias`` are one imported name and the local name it binds.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Grammar:
    """A grammar wheel's language function, imported on first call.

    Importing the 23 grammar wheels (each loads its compiled parser) cost ~20 ms, and every command
    imports the language registry (the scanner detects languages by extension): only a run that
    parses needs a grammar.
    """

    module: str  # the wheel's module, e.g. "tree_sitter_python"
    function: str = "language"  # the function returning its tree-sitter language capsule

    def __call__(self) -> object:
        """The language capsule, as the wheel's own function returns it.

        :return: the capsule ``tree_sitter.Language`` takes.
        :raises ImportError: the grammar wheel is not installed.
        """
        language: Callable[[], object] = getattr(importlib.import_module(self.module), self.function)
        return language()


@dataclass(frozen=True)
class LanguageSpec:
    """Everything the parser needs to turn one language into entities and references."""

    name: str
    extensions: tuple[str, ...]
    grammar: Callable[[], object]  # returns the tree-sitter language capsule of the grammar wheel
    query: str
    shebangs: tuple[str, ...] = ()  # interpreter names recognised on a `#!` line
    filenames: tuple[str, ...] = ()  # exact file names (Makefile-style) that imply the language
    comment_types: frozenset[str] = frozenset({"comment"})
    # Nodes that wrap a definition (decorators, `export`, templates): the entity's span and its
    # leading comment are taken from the outermost wrapper.
    wrapper_types: frozenset[str] = frozenset()
    body_field: str = "body"  # the field whose start ends the signature
    docstring_in_body: bool = False  # Python-style: the first string statement of the body
    # Methods may be declared outside their type, beside it (Go receivers, Rust `impl`, Swift
    # `extension`, Kotlin extension functions, C++ `Type::method`, Haskell instances): search then
    # also looks among a packed chunk's members for such a method (Store.members_within).
    members_beside_types: bool = False
    # A function may be written as consecutive clauses of one name (Elixir's `def`s, Haskell's
    # equations): they are one entity, spanning from the first clause to the last.
    clauses: bool = False
    # What makes a definition a typing stub of another of its name: a decorator (Python's `@overload`),
    # or a signature ending in `;` (TypeScript's overload signatures before the implementation). Search
    # answers a stub with the implementation when both are candidates, so that a function's signatures
    # do not each take a hit; a stub with no implementation among them (an interface's method) stays.
    overload_decorator: str = ""
    overload_signatures: bool = False
    # Nodes written right above a definition that belong to it (Haskell's type signature): its span
    # starts at the first of them, and its documenting comment is looked for above them.
    prefix_types: frozenset[str] = frozenset()
    # The file stem that stands for its folder (JS/TS `index`, Lua `init`, Rust `mod`; Python's
    # `__init__` is the scanner's): an import of the folder (`./utils`, `require("pkg.utils")`)
    # reaches the file and what it defines.
    package_file: str = ""
    # The first segment of a path that starts at the package's root (Rust's `crate::`): such an import
    # is rooted at the folder of the importer's crate, the nearest `src/` above it (Cargo's layout).
    root_segment: str = ""
    # The first segments of a path relative to the importer's module (Rust's `self::` and `super::`):
    # resolved from the importer's folder as Python's leading dots are, where the file stems in
    # `folder_module_stems` (Rust's `mod.rs`, and `lib.rs` and `main.rs` at a crate's root) are the
    # module of their folder and any other file is a module inside it.
    self_segment: str = ""
    parent_segment: str = ""
    folder_module_stems: frozenset[str] = frozenset()
    # Receiver texts that mean "the enclosing class" for call resolution.
    self_names: frozenset[str] = field(default_factory=lambda: frozenset({"self", "this"}))
